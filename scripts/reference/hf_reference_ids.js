// Token ids of a Hugging Face tokenizer.json computed by Hugging Face's own JavaScript
// implementation (npm @huggingface/tokenizers, pure JavaScript: dist/tokenizers.cjs, which
// scripts/fetch_data.sh --hf puts in datasets/reference/tokenizers.js), encoding with
// add_special_tokens false (trainer adds BOS/EOS per document itself).
//   node hf_reference_ids.js DIR table > tests/data/hf_NAME_reference.tsv
//       the tricky-string table: '#' lines are comments (the string, JSON-escaped); data lines
//       are <UTF-8 bytes in hex> TAB <ids separated by spaces>
//   node hf_reference_ids.js DIR files FILE...
//       one line of ids per file (the file read as UTF-8)
//   node hf_reference_ids.js DIR lines FILE
//       one line of ids per line of the file, each line (without its newline) encoded alone,
//       as `trainer data encode --lines` does
// DIR holds tokenizer.json and tokenizer_config.json; TOKENIZERS_JS names another
// tokenizers.cjs.
'use strict';
const fs = require('fs');
const path = require('path');
const { fixed, gpt2_pool, random_strings } = require('./tricky_strings.js');

const repo = path.resolve(__dirname, '..', '..');
const js = process.env.TOKENIZERS_JS || path.join(repo, 'datasets/reference/tokenizers.js/tokenizers.cjs');
const { Tokenizer } = require(js);
const [dir, mode, ...files] = process.argv.slice(2);
const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf-8'));
const tok = new Tokenizer(read('tokenizer.json'), read('tokenizer_config.json'));
const encode = (s) => tok.encode(s, { add_special_tokens: false }).ids;

if (mode === 'files') {
  for (const f of files) process.stdout.write(encode(fs.readFileSync(f, 'utf-8')).join(' ') + '\n');
} else if (mode === 'lines') {
  const lines = fs.readFileSync(files[0], 'utf-8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  process.stdout.write(lines.map((l) => encode(l).join(' ') + '\n').join(''));
} else if (mode === 'table') {
  const extra = [
    // case-insensitive contractions, digits in threes, line breaks the patterns single out
    "I'M YOU'RE WE'LL SHE'D IT'S 'S 'T", "Don'T", '1234567 12 123456789012', 'a\r\nb\r\n\r\nc',
    'x\n\n\ny', '  \n  \t\n', 'tab\tsep\tvalues\n', 'trailing spaces   ', ' ', '\r', '\r\n',
    // added and special tokens inside text, whole and broken
    '<|begin_of_text|>Hi<|end_of_text|>', '<|im_start|>user\nhi<|im_end|>', '<|endoftext|>',
    '<s>[INST] hi [/INST]</s>', '<|begin_of_text', 'a<|eot_id|>b', '<think>x</think>', '<unk>',
    // normalization: combining marks, precomposed forms, compatibility characters, Hangul
    'e\u0301', 'Ångström \u212B \u0041\u030A', 'q\u0307\u0323', '\u1100\u1161\u11A8 \uAC00\u11A8',
    'ﬁ ﬂ ① ＡＢＣ ｶﾞ', '\u0958 \u2126 \u00C5', 'a\u0328\u0301\u0323', 'ṩ \u1E9B\u0323',
    // SentencePiece: the metaspace itself, byte fallback for characters outside the vocabulary
    '▁', 'a▁b', '\u0000', '\u{10FFFF}', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '🦙 llama', 'ǅ ǈ ǋ',
  ];
  const pool = gpt2_pool.concat(Array.from('\u0301\u0308\u0323ÅŉǅﬁＡ①ｶﾞ가\u1100\u1161▁<>|'));
  const strings = fixed.concat(extra, random_strings(pool, 20250601, 300));
  const out = ['# ids from @huggingface/tokenizers (dist/tokenizers.cjs) under node ' + process.version +
               ' for ' + path.basename(path.resolve(dir)) + '; regenerate with ' +
               'scripts/reference/hf_reference_ids.js DIR table',
               '# format: hex of the UTF-8 bytes <TAB> token ids'];
  for (const s of strings) {
    out.push('# ' + JSON.stringify(s));
    out.push(Buffer.from(s, 'utf-8').toString('hex') + '\t' + encode(s).join(' '));
  }
  process.stdout.write(out.join('\n') + '\n');
} else {
  process.stderr.write('usage: node hf_reference_ids.js DIR table | files FILE... | lines FILE\n');
  process.exit(2);
}
