// Writes tests/data/unicode_normalize_reference.tsv: NFC and NFKC of hard cases, computed by
// node's own String.prototype.normalize (what the reference tokenizers call). Lines:
// <hex of the UTF-8 input> TAB <hex of NFC> TAB <hex of NFKC>. Cases: every code point with a
// decomposition (and every 97th Hangul syllable), and seeded random sequences of
// letters and combining marks in every order.
// Usage: node scripts/reference/unicode_normalize_ids.js > tests/data/unicode_normalize_reference.tsv
'use strict';
const { random_strings } = require('./tricky_strings.js');
const hex = (s) => Buffer.from(s, 'utf-8').toString('hex');
const cases = [];
for (let cp = 0xa0; cp <= 0x10ffff; ++cp) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const s = String.fromCodePoint(cp);
  const hangul = cp >= 0xac00 && cp <= 0xd7a3;
  if (hangul ? cp % 97 === 0 : s.normalize('NFKD') !== s) cases.push(s);
}
const marks = Array.from('aeoAEOuUsSnNkKcCzZ\u1100\u1161\u11a8\uac00\u0300\u0301\u0302\u0303\u0308' +
                         '\u030a\u030c\u0323\u0327\u0328\u031b\u0345\u05b0\u0f72\u0f71\u3099\u309a' +
                         '\u304b\u30a6\u0627\u0653\u0654\u093c\u0928\u1e9b\u00c5\u212b\u0344\u0f73');
for (const s of random_strings(marks, 20250602, 2000)) cases.push(s);
const lines = ['# NFC and NFKC from node ' + process.version + ' (ICU ' + process.versions.icu +
               ', Unicode ' + process.versions.unicode + '); regenerate with ' +
               'scripts/reference/unicode_normalize_ids.js',
               '# format: hex of the UTF-8 input <TAB> hex of NFC <TAB> hex of NFKC'];
for (const s of cases) lines.push(hex(s) + '\t' + hex(s.normalize('NFC')) + '\t' + hex(s.normalize('NFKC')));
process.stdout.write(lines.join('\n') + '\n');
