// Tricky strings shared by the reference-id generators (gpt2_reference_ids.js,
// hf_reference_ids.js): a fixed list of hard cases and seeded random strings over a pool of
// tricky characters, so every table is reproducible.
'use strict';

const fixed = [
  'Hello world, this is GPT-2.',
  // contractions (lower case only in the pattern), apostrophes elsewhere
  "I'm sure you're right: they've said we'll go, he'd know, it's done, don't.",
  "I'M YOU'RE IT'S", "'s 't 're 've 'm 'll 'd", "rock'n'roll", "the dogs' bones", "'''",
  "y'all'd've", " 's", "''s", "!'s", "O'Neil's", "can't've", 'ʼs and ’s',
  // spaces, tabs, newlines
  '', ' ', '  ', 'a  b', 'a   b', '   leading', 'trailing   ', '\t\tindented', 'line1\nline2',
  'line1\n\n\nline2', 'para\r\n\r\nnext', ' \n \n x', 'x \t y', '\n', '\n\n', ' \n', '\n ',
  '  \n  Hello', 'end with newline\n', 'word\t\tword', '\u00a0nbsp\u00a0here', '\u3000ideographic',
  'line\u2028sep', 'nel\u0085here', 'seps\u001c\u001d\u001e\u001fend', '\ufeffBOM',
  'a\u000bb\u000cc', 'x\u2003y\u2009z',
  // digits and numbers
  '12345678901234567890', '3.14159', '1,000,000', 'v2.0.1', ' 42', 'x 42 y', '٣٤٥ digits',
  '²³ and ½', 'Ⅻ roman', '1st 2nd 3rd', '$100.00 (USD)', '0x1F600', '1e-10',
  // accents, combining marks
  'café naïve résumé', 'Ångström', 'e\u0301 combining', 'Zürich Straße', 'Ελληνικά', 'ñandú',
  // CJK and other scripts
  '日本語のテキスト', '中文字符测试', '한국어 텍스트', 'Привет, мир!', 'مرحبا بالعالم', 'שלום עולם',
  'हिन्दी भाषा', 'ภาษาไทย', 'Mixed English и русский 日本',
  // emoji (astral code points, ZWJ sequences, flags, skin tones)
  '👍', '👨‍👩‍👧‍👦 family', '🇺🇸 flag', 'a😀b', '👍🏽 thumbs', '🤖🤖🤖',
  // end-of-text marker as plain text
  '<|endoftext|>', 'text<|endoftext|>more', ' <|endoftext|> ',
  // long words and runs
  'pneumonoultramicroscopicsilicovolcanoconiosis', 'Supercalifragilisticexpialidocious'.repeat(3),
  'a'.repeat(64), '!!!???...', '-'.repeat(40), '='.repeat(33), '.'.repeat(17),
  'https://example.com/path?query=1&other=two#frag', 'email@example.com #hashtag @mention',
  'def f(x):\n    return x**2\n', '{"key": [1, 2, 3], "nested": {"a": null}}',
  'ℝ ∑ ∞ ≠ ≤', 'mixed123abc456', 'snake_case_name', 'CamelCaseName', '\u0000nul',
  'Call me Ishmael. Some years ago—never mind how long precisely—having little or no money',
];

// Random strings from a pool of tricky characters, with a fixed generator (mulberry32).
function mulberry32(a) {
  return () => {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const gpt2_pool = Array.from(
  "aeiouxyzAEZ019 '   \t\n\n\r.,!?-_'\"()sdtmlrve" + 'éüßñçø日本語中한😀👍🏽\u00a0\u3000\u2028²½٣Ⅻ' +
  '\u0301\u200d\ufeff\u0085\u001c');
// count strings of 1..24 characters drawn from pool by mulberry32(seed).
function random_strings(pool, seed, count) {
  const rand = mulberry32(seed);
  const random = [];
  for (let i = 0; i < count; ++i) {
    const n = 1 + Math.floor(rand() * 24);
    let s = '';
    for (let j = 0; j < n; ++j) s += pool[Math.floor(rand() * pool.length)];
    random.push(s);
  }
  return random;
}

module.exports = { fixed, gpt2_pool, random_strings };

