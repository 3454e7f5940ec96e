// Hugging Face tokenizer.json, decoding (see hf_tokenizer.h): the file's decoders applied in
// order to the tokens' texts, as the JavaScript reference's decode() chain does, except that
// bytes stay bytes (the reference replaces invalid UTF-8 with U+FFFD) and the lossy
// clean_up_tokenization_spaces of tokenizer_config.json is not applied. Byte-level vocabularies
// are stored as raw bytes, so the ByteLevel decoder has nothing left to do.
#include <fmt/core.h>

#include "data/hf_normalize.h"
#include "data/hf_tokenizer.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

// "<0xNN>" -> the byte, or -1.
int fallback_byte(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char h = t[i];
    v <<= 4;
    if (h >= '0' && h <= '9') v |= h - '0';
    else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
    else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
    else return -1;
  }
  return v;
}

void run_decoder(const HfDecoderStep& d, std::vector<std::string>* tokens) {
  std::vector<std::string>& t = *tokens;
  switch (d.kind) {
    case HfDecoderStep::byte_level: return;
    case HfDecoderStep::replace:
      for (std::string& s : t) s = replace_all(s, d.pattern, d.content);
      return;
    case HfDecoderStep::metaspace:
      for (size_t i = 0; i < t.size(); ++i) {
        t[i] = replace_all(t[i], d.pattern, " ");
        if (i == 0 && !t[i].empty() && t[i][0] == ' ') t[i].erase(0, 1);
      }
      return;
    case HfDecoderStep::fuse: {
      std::string all;
      for (const std::string& s : t) all += s;
      t.assign(1, all);
      return;
    }
    case HfDecoderStep::strip:
      for (std::string& s : t) {
        size_t start = 0, stop = s.size();
        while (start < static_cast<size_t>(d.start) && start < s.size() && s[start] == d.content[0]) ++start;
        for (int k = 0; k < d.stop && stop > start && s[stop - 1] == d.content[0]; ++k) --stop;
        s = s.substr(start, stop - start);
      }
      return;
    case HfDecoderStep::byte_fallback: {
      std::vector<std::string> out;
      std::string bytes;
      for (std::string& s : t) {
        const int b = fallback_byte(s);
        if (b >= 0) {
          bytes.push_back(static_cast<char>(b));
          continue;
        }
        if (!bytes.empty()) out.push_back(std::move(bytes));
        bytes.clear();
        out.push_back(std::move(s));
      }
      if (!bytes.empty()) out.push_back(std::move(bytes));
      t.swap(out);
      return;
    }
  }
}

}  // namespace

std::string HfTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocab_size_ || !has_id_[static_cast<size_t>(id)])
      throw InputError(fmt::format("token id {} is not in the vocabulary of {} (ids 0..{})", id,
                                   spec_.path, vocab_size_ - 1));
    tokens.push_back(id_to_token_[static_cast<size_t>(id)]);
  }
  if (spec_.decoders.empty()) {  // the reference joins the tokens with spaces
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const HfDecoderStep& d : spec_.decoders) run_decoder(d, &tokens);
  std::string out;
  for (const std::string& s : tokens) out += s;
  return out;
}

}  // namespace trainer
