// tokenizer.json normalizers (see hf_normalize.h).
#include "data/hf_normalize.h"

#include "data/unicode_normalize.h"

namespace trainer {

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

std::string apply_normalizers(const std::vector<HfNormalizerStep>& steps, std::string_view text) {
  std::string t(text);
  for (const HfNormalizerStep& s : steps) {
    switch (s.kind) {
      case HfNormalizerStep::nfc: t = unicode_normalize(t, NormalForm::nfc); break;
      case HfNormalizerStep::nfkc: t = unicode_normalize(t, NormalForm::nfkc); break;
      case HfNormalizerStep::replace: t = replace_all(t, s.pattern, s.content); break;
      case HfNormalizerStep::prepend: t.insert(0, s.content); break;
    }
  }
  return t;
}

}  // namespace trainer
