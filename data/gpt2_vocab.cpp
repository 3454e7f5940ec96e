// Loading GPT-2's encoder.json and vocab.bpe (see gpt2_vocab.h).
#include "data/gpt2_vocab.h"

#include <fmt/core.h>

#include <filesystem>
#include <unordered_map>

#include "data/file_io.h"
#include "data/json_string_map.h"
#include "data/unicode_classes.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {

std::array<uint32_t, 256> gpt2_byte_to_codepoint() {
  // Printable Latin-1 bytes stand for themselves; the others (controls, space, soft hyphen...)
  // are moved, in byte order, to 256, 257, ...
  std::array<uint32_t, 256> map{};
  uint32_t shifted = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    map[b] = printable ? b : shifted++;
  }
  return map;
}

namespace {

class TokenDecoder {
 public:
  TokenDecoder() {
    const auto forward = gpt2_byte_to_codepoint();
    for (uint32_t b = 0; b < 256; ++b) byte_of_[forward[b]] = static_cast<int>(b);
  }

  // Raw bytes of a token written in the byte-to-unicode alphabet; false if it uses any other
  // character.
  bool to_bytes(const std::string& token, std::string* out) const {
    out->clear();
    const char* p = token.data();
    const char* end = p + token.size();
    while (p < end) {
      uint32_t cp = 0;
      p += utf8_next(p, end, &cp);
      if (cp >= byte_of_.size() || byte_of_[cp] < 0) return false;
      out->push_back(static_cast<char>(byte_of_[cp]));
    }
    return true;
  }

 private:
  std::array<int, 324> byte_of_ = make_unset();  // code points 0..323 cover the alphabet
  static std::array<int, 324> make_unset() {
    std::array<int, 324> a{};
    a.fill(-1);
    return a;
  }
};

void load_encoder(std::string_view text, const std::string& path, const TokenDecoder& dec,
                  Gpt2Vocab* vocab, std::unordered_map<std::string, int32_t>* id_of) {
  const auto entries = parse_json_int_map(text, path);
  if (entries.empty()) throw InputError(fmt::format("{}: no tokens", path));
  const size_t n = entries.size();
  vocab->token_bytes.assign(n, std::string());
  std::vector<bool> seen(n, false);
  std::string bytes;
  for (const auto& [token, id] : entries) {
    if (id < 0 || static_cast<size_t>(id) >= n)
      throw InputError(fmt::format("{}: token '{}' has id {}, outside 0..{} (ids must be dense)",
                                   path, excerpt(token), id, n - 1));
    if (seen[static_cast<size_t>(id)])
      throw InputError(fmt::format("{}: id {} is used twice (again by '{}')", path, id, excerpt(token)));
    if (!dec.to_bytes(token, &bytes))
      throw InputError(fmt::format(
          "{}: token '{}' (id {}) has a character outside GPT-2's byte alphabet", path, excerpt(token), id));
    seen[static_cast<size_t>(id)] = true;
    vocab->token_bytes[static_cast<size_t>(id)] = bytes;
    (*id_of)[bytes] = static_cast<int32_t>(id);
  }
  for (int b = 0; b < 256; ++b) {
    auto it = id_of->find(std::string(1, static_cast<char>(b)));
    if (it == id_of->end())
      throw InputError(fmt::format("{}: no token for byte {}; every byte needs one", path, b));
    vocab->byte_token[static_cast<size_t>(b)] = it->second;
  }
  auto eot = id_of->find("<|endoftext|>");
  if (eot == id_of->end())
    throw InputError(fmt::format("{}: no \"<|endoftext|>\" token", path));
  vocab->eot = eot->second;
}

void load_merges(std::string_view text, const std::string& path, const TokenDecoder& dec,
                 const std::unordered_map<std::string, int32_t>& id_of, Gpt2Vocab* vocab) {
  size_t pos = 0;
  int line_no = 0;
  int32_t rank = 0;
  std::string a_bytes, b_bytes;
  std::unordered_map<uint64_t, int> line_of_pair;
  auto lookup = [&](const std::string& token, const std::string& bytes) {
    auto it = id_of.find(bytes);
    if (it == id_of.end())
      throw InputError(fmt::format("{}:{}: '{}' is not a token of encoder.json", path, line_no,
                                   excerpt(token)));
    return it->second;
  };
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line(text.substr(pos, eol - pos));
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) {
      if (line.rfind("#version", 0) != 0)
        throw InputError(fmt::format("{}:1: expected a '#version: ...' first line, found '{}'",
                                     path, excerpt(line)));
      continue;
    }
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || line.find(' ', sp + 1) != std::string::npos)
      throw InputError(fmt::format("{}:{}: expected two tokens separated by one space, found '{}'",
                                   path, line_no, excerpt(line)));
    const std::string a = line.substr(0, sp), b = line.substr(sp + 1);
    if (!dec.to_bytes(a, &a_bytes) || !dec.to_bytes(b, &b_bytes))
      throw InputError(fmt::format("{}:{}: '{}' has a character outside GPT-2's byte alphabet",
                                   path, line_no, excerpt(line)));
    const int32_t left = lookup(a, a_bytes);
    const int32_t right = lookup(b, b_bytes);
    const int32_t merged = lookup(a + b, a_bytes + b_bytes);
    // A second rule for a pair would silently change its rank (the table keeps one rule per
    // pair); OpenAI's file has none, so one is a damaged or hand-edited file.
    const auto [first, fresh] = line_of_pair.emplace((uint64_t(uint32_t(left)) << 32) | uint32_t(right), line_no);
    if (!fresh)
      throw InputError(fmt::format("{}:{}: the merge '{}' repeats the one on line {}; each pair may be merged once",
                                   path, line_no, excerpt(line), first->second));
    vocab->merges.add(left, right, MergeRule{rank++, merged});
  }
  if (line_no == 0) throw InputError(fmt::format("{}: empty file", path));
}

}  // namespace

Gpt2Vocab load_gpt2_vocab(const std::string& dir) {
  const std::string encoder = (std::filesystem::path(dir) / "encoder.json").string();
  const std::string merges = (std::filesystem::path(dir) / "vocab.bpe").string();
  for (const std::string& f : {encoder, merges})
    if (!std::filesystem::exists(f))
      throw InputError(fmt::format(
          "GPT-2 tokenizer file '{}' not found (run scripts/fetch_data.sh, or point "
          "--tokenizer-dir at a directory holding encoder.json and vocab.bpe)", f));
  // Read one after the other, as before: a malformed encoder.json is reported before vocab.bpe
  // is opened.
  const std::string encoder_text = read_file(encoder);
  const TokenDecoder dec;
  Gpt2Vocab vocab;
  std::unordered_map<std::string, int32_t> id_of;
  load_encoder(encoder_text, encoder, dec, &vocab, &id_of);
  load_merges(read_file(merges), merges, dec, id_of, &vocab);
  return vocab;
}

Gpt2Vocab parse_gpt2_vocab(std::string_view encoder_text, const std::string& encoder_path,
                           std::string_view merges_text, const std::string& merges_path) {
  const TokenDecoder dec;
  Gpt2Vocab vocab;
  std::unordered_map<std::string, int32_t> id_of;
  load_encoder(encoder_text, encoder_path, dec, &vocab, &id_of);
  load_merges(merges_text, merges_path, dec, id_of, &vocab);
  return vocab;
}

}  // namespace trainer
