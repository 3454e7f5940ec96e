// tokenizer.json -> HfTokenizerSpec (see hf_tokenizer_spec.h). Every object's keys are
// checked against the ones this reader understands: an option that would change the ids and
// that is not implemented is refused, never ignored. Keys that only concern offsets
// (trim_offsets) or model inputs (truncation, padding, post_processor: trainer adds its own
// BOS/EOS per document, tokenizer_config.h) are accepted and have no effect.
#include <fmt/core.h>

#include <algorithm>
#include <initializer_list>

#include "data/file_io.h"
#include "data/hf_tokenizer_spec.h"
#include "data/json_value.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

// Ids at most this: the largest vocabularies in use hold about 2^18 tokens, and a table of
// every id is allocated.
constexpr int64_t kMaxVocab = int64_t{1} << 24;

// A value and its JSON path, with the document for line:column in messages.
class At {
 public:
  At(const JsonValue& v, std::string path, std::string_view doc, const std::string& file)
      : v_(v), path_(std::move(path)), doc_(doc), file_(file) {}

  const JsonValue& value() const { return v_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: {}: {}", json_location(doc_, v_.offset, file_), path_, what));
  }
  [[noreturn]] void unsupported(const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", json_location(doc_, v_.offset, file_), path_, what));
  }

  At member(const std::string& key) const {
    const JsonValue* m = v_.find(key);
    if (!m) fail(fmt::format("missing key \"{}\"", key));
    return child(*m, path_.empty() ? key : path_ + "." + key);
  }
  bool has(const std::string& key) const {
    const JsonValue* m = v_.find(key);
    return m && m->kind != JsonKind::null;
  }
  At item(size_t i) const { return child(v_.items[i], fmt::format("{}[{}]", path_, i)); }

  const JsonValue& expect(JsonKind kind) const {
    if (v_.kind != kind)
      fail(fmt::format("expected {}, found {}", json_kind_name(kind), json_kind_name(v_.kind)));
    return v_;
  }
  const std::string& text() const { return expect(JsonKind::string).text; }
  bool boolean() const { return expect(JsonKind::boolean).boolean; }
  int64_t integer(int64_t lo, int64_t hi) const {
    expect(JsonKind::number);
    if (!v_.is_integer || v_.integer < lo || v_.integer > hi)
      fail(fmt::format("expected an integer in [{}, {}]", lo, hi));
    return v_.integer;
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    return has(key) ? member(key).boolean() : fallback;
  }
  std::string text_or(const std::string& key, const std::string& fallback) const {
    return has(key) ? member(key).text() : fallback;
  }

  // Refuses keys outside `known` (the component's name goes into the message).
  void only_keys(const std::string& component, std::initializer_list<const char*> known) const {
    expect(JsonKind::object);
    for (const auto& member : v_.members) {
      const std::string& key = member.first;  // not a structured binding: lambdas capture it
      const JsonValue& value = member.second;
      if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) ==
          known.end()) {
        std::string valid;
        for (const char* k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
        child(value, path_ + "." + key)
            .unsupported(fmt::format("the option \"{}\" of {} is not implemented (implemented: {})",
                                     key, component, valid));
      }
    }
  }
  // The component's "type", which must be one of `types`.
  std::string type(const std::string& what, std::initializer_list<const char*> types) const {
    const std::string t = member("type").text();
    std::string valid;
    for (const char* k : types) {
      if (t == k) return t;
      valid += (valid.empty() ? "" : ", ") + std::string(k);
    }
    member("type").unsupported(fmt::format("the {} \"{}\" is not implemented (implemented: {})",
                                           what, t, valid));
  }

 private:
  At child(const JsonValue& v, std::string path) const { return At(v, std::move(path), doc_, file_); }
  const JsonValue& v_;
  std::string path_;
  std::string_view doc_;
  const std::string& file_;
};

// A {"String": s} pattern; a {"Regex": ...} one only where `regex_ok`.
std::string literal_pattern(const At& pattern) {
  pattern.only_keys("a pattern", {"String", "Regex"});
  if (pattern.has("Regex"))
    pattern.member("Regex").unsupported("a Regex pattern is not implemented here (only {\"String\": ...})");
  return pattern.member("String").text();
}

void read_normalizer(const At& n, HfTokenizerSpec* spec) {
  const std::string t = n.type("normalizer", {"Sequence", "NFC", "NFKC", "Replace", "Prepend"});
  HfNormalizerStep step;
  if (t == "Sequence") {
    n.only_keys("the Sequence normalizer", {"type", "normalizers"});
    const At list = n.member("normalizers");
    list.expect(JsonKind::array);
    for (size_t i = 0; i < list.value().items.size(); ++i) read_normalizer(list.item(i), spec);
    return;
  }
  if (t == "NFC" || t == "NFKC") {
    n.only_keys("the " + t + " normalizer", {"type"});
    step.kind = t == "NFC" ? HfNormalizerStep::nfc : HfNormalizerStep::nfkc;
  } else if (t == "Replace") {
    n.only_keys("the Replace normalizer", {"type", "pattern", "content"});
    step.kind = HfNormalizerStep::replace;
    step.pattern = literal_pattern(n.member("pattern"));
    if (step.pattern.empty()) n.member("pattern").fail("an empty String pattern");
    step.content = n.member("content").text();
  } else {
    n.only_keys("the Prepend normalizer", {"type", "prepend"});
    step.kind = HfNormalizerStep::prepend;
    step.content = n.member("prepend").text();
  }
  spec->normalizers.push_back(std::move(step));
}

HfPreTokenizerStep::Prepend prepend_scheme(const At& c) {
  if (c.has("prepend_scheme")) {
    const std::string s = c.member("prepend_scheme").text();
    if (s == "always") return HfPreTokenizerStep::always;
    if (s == "first") return HfPreTokenizerStep::first;
    if (s == "never") return HfPreTokenizerStep::never;
    c.member("prepend_scheme").fail(fmt::format("\"{}\" is not a prepend scheme (valid: always, first, never)", s));
  }
  // Older files say add_prefix_space instead; the JavaScript reference reads only
  // prepend_scheme (default always), so false has no exact reference.
  if (c.has("add_prefix_space") && !c.member("add_prefix_space").boolean())
    c.member("add_prefix_space").unsupported(
        "add_prefix_space false without prepend_scheme is not implemented (write prepend_scheme: never)");
  return HfPreTokenizerStep::always;
}

void read_pre_tokenizer(const At& p, HfTokenizerSpec* spec) {
  const std::string t = p.type("pre-tokenizer", {"Sequence", "Split", "ByteLevel", "Metaspace", "Digits"});
  HfPreTokenizerStep step;
  if (t == "Sequence") {
    p.only_keys("the Sequence pre-tokenizer", {"type", "pretokenizers"});
    const At list = p.member("pretokenizers");
    list.expect(JsonKind::array);
    for (size_t i = 0; i < list.value().items.size(); ++i) read_pre_tokenizer(list.item(i), spec);
    return;
  }
  if (t == "Split") {
    p.only_keys("the Split pre-tokenizer", {"type", "pattern", "behavior", "invert"});
    step.kind = HfPreTokenizerStep::split;
    const std::string behavior = p.member("behavior").text();
    if (behavior != "Isolated")
      p.member("behavior").unsupported(fmt::format(
          "the Split behavior \"{}\" is not implemented (implemented: Isolated)", behavior));
    if (p.boolean_or("invert", false)) p.member("invert").unsupported("Split with invert true is not implemented");
    const At pattern = p.member("pattern");
    pattern.only_keys("a pattern", {"String", "Regex"});
    const std::string where = fmt::format("{}: {}", spec->path, pattern.path());
    if (pattern.has("Regex")) {
      step.regex = std::make_shared<const SplitRegex>(pattern.member("Regex").text(), where + ".Regex");
    } else {
      step.regex = std::make_shared<const SplitRegex>(
          SplitRegex::literal(pattern.member("String").text(), where + ".String"));
    }
  } else if (t == "Digits") {
    // The reference's own pattern: runs of non-digits, and each digit (or each run of them).
    // Digits are ASCII 0-9 there, as in the Rust implementation.
    p.only_keys("the Digits pre-tokenizer", {"type", "individual_digits"});
    step.kind = HfPreTokenizerStep::split;
    const bool each = p.boolean_or("individual_digits", false);
    step.regex = std::make_shared<const SplitRegex>(each ? "[^0-9]+|[0-9]" : "[^0-9]+|[0-9]+",
                                                    spec->path + ": " + p.path());
  } else if (t == "ByteLevel") {
    p.only_keys("the ByteLevel pre-tokenizer", {"type", "add_prefix_space", "trim_offsets", "use_regex"});
    step.kind = HfPreTokenizerStep::byte_level;
    step.add_prefix_space = p.boolean_or("add_prefix_space", false);
    step.use_regex = p.boolean_or("use_regex", true);
    spec->byte_level = true;
  } else {
    p.only_keys("the Metaspace pre-tokenizer",
                {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
    step.kind = HfPreTokenizerStep::metaspace;
    step.replacement = p.text_or("replacement", "\xE2\x96\x81");
    if (p.has("str_rep") && p.member("str_rep").text() != step.replacement)
      p.member("str_rep").unsupported("a str_rep other than the replacement is not implemented");
    // The JavaScript reference never splits at the replacement; Rust's does when split is
    // true: only split false has one answer.
    if (p.boolean_or("split", false))
      p.member("split").unsupported("Metaspace with split true is not implemented (implemented: false)");
    step.prepend_scheme = prepend_scheme(p);
  }
  spec->pre_tokenizers.push_back(std::move(step));
}

void read_decoder(const At& d, HfTokenizerSpec* spec) {
  const std::string t = d.type("decoder", {"Sequence", "ByteLevel", "Replace", "ByteFallback",
                                           "Fuse", "Strip", "Metaspace"});
  HfDecoderStep step;
  if (t == "Sequence") {
    d.only_keys("the Sequence decoder", {"type", "decoders"});
    const At list = d.member("decoders");
    list.expect(JsonKind::array);
    for (size_t i = 0; i < list.value().items.size(); ++i) read_decoder(list.item(i), spec);
    return;
  }
  if (t == "ByteLevel") {
    d.only_keys("the ByteLevel decoder", {"type", "add_prefix_space", "trim_offsets", "use_regex"});
    step.kind = HfDecoderStep::byte_level;
  } else if (t == "Replace") {
    d.only_keys("the Replace decoder", {"type", "pattern", "content"});
    step.kind = HfDecoderStep::replace;
    step.pattern = literal_pattern(d.member("pattern"));
    if (step.pattern.empty()) d.member("pattern").fail("an empty String pattern");
    step.content = d.member("content").text();
  } else if (t == "ByteFallback" || t == "Fuse") {
    d.only_keys("the " + t + " decoder", {"type"});
    step.kind = t == "Fuse" ? HfDecoderStep::fuse : HfDecoderStep::byte_fallback;
  } else if (t == "Strip") {
    d.only_keys("the Strip decoder", {"type", "content", "start", "stop"});
    step.kind = HfDecoderStep::strip;
    step.content = d.member("content").text();
    if (step.content.size() != 1) d.member("content").unsupported("a Strip content other than one ASCII character is not implemented");
    step.start = static_cast<int>(d.member("start").integer(0, 1 << 20));
    step.stop = static_cast<int>(d.member("stop").integer(0, 1 << 20));
  } else {
    d.only_keys("the Metaspace decoder",
                {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
    step.kind = HfDecoderStep::metaspace;
    step.pattern = d.text_or("replacement", "\xE2\x96\x81");
    if (prepend_scheme(d) == HfPreTokenizerStep::never)
      d.member("prepend_scheme").unsupported("the Metaspace decoder with prepend_scheme never is not implemented");
  }
  spec->decoders.push_back(std::move(step));
}

void read_model(const At& m, HfBpeModel* model) {
  m.type("model", {"BPE"});
  m.only_keys("the BPE model", {"type", "dropout", "unk_token", "continuing_subword_prefix",
                                "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
                                "vocab", "merges"});
  if (m.has("dropout") && m.member("dropout").expect(JsonKind::number).number != 0.0)
    m.member("dropout").unsupported("BPE dropout is not implemented (it makes encoding random)");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!m.text_or(affix, "").empty())
      m.member(affix).unsupported(fmt::format("a non-empty {} is not implemented", affix));
  model->unk_token = m.text_or("unk_token", "");
  model->fuse_unk = m.boolean_or("fuse_unk", false);
  model->byte_fallback = m.boolean_or("byte_fallback", false);
  model->ignore_merges = m.boolean_or("ignore_merges", false);
  const At vocab = m.member("vocab");
  vocab.expect(JsonKind::object);
  model->vocab.reserve(vocab.value().members.size());
  for (const auto& [token, id] : vocab.value().members) {
    if (id.kind != JsonKind::number || !id.is_integer || id.integer < 0 || id.integer >= kMaxVocab)
      vocab.fail(fmt::format("the id of \"{}\" is not an integer in [0, {})", token, kMaxVocab));
    model->vocab.emplace_back(token, static_cast<int32_t>(id.integer));
  }
  const At merges = m.member("merges");
  merges.expect(JsonKind::array);
  model->merges.reserve(merges.value().items.size());
  for (size_t i = 0; i < merges.value().items.size(); ++i) {
    const At merge = merges.item(i);
    if (merge.value().kind == JsonKind::string) {  // "left right"
      const std::string& s = merge.value().text;
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        merge.fail(fmt::format("\"{}\" is not two tokens separated by one space", s));
      model->merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {
      const JsonValue& pair = merge.expect(JsonKind::array);
      if (pair.items.size() != 2) merge.fail("expected [left, right]");
      model->merges.emplace_back(merge.item(0).text(), merge.item(1).text());
    }
  }
}

void read_added_tokens(const At& list, bool has_normalizer, HfTokenizerSpec* spec) {
  list.expect(JsonKind::array);
  for (size_t i = 0; i < list.value().items.size(); ++i) {
    const At t = list.item(i);
    t.only_keys("an added token", {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    HfAddedToken tok;
    tok.id = static_cast<int32_t>(t.member("id").integer(0, kMaxVocab - 1));
    tok.content = t.member("content").text();
    if (tok.content.empty()) t.member("content").fail("an empty added token");
    tok.special = t.boolean_or("special", false);
    for (const char* flag : {"single_word", "lstrip", "rstrip"})
      if (t.boolean_or(flag, false))
        t.member(flag).unsupported(fmt::format("added tokens with {} true are not implemented", flag));
    // The reference matches normalized added tokens in the normalized text: not implemented.
    if (has_normalizer && t.boolean_or("normalized", !tok.special))
      t.member(t.has("normalized") ? "normalized" : "special")
          .unsupported("added tokens matched after normalization (normalized true) are not implemented");
    spec->added_tokens.push_back(std::move(tok));
  }
}

}  // namespace

HfTokenizerSpec parse_hf_tokenizer_spec(std::string_view text, const std::string& path) {
  const JsonValue doc = parse_json(text, path);
  const At root(doc, "", text, path);
  root.only_keys("tokenizer.json", {"version", "truncation", "padding", "added_tokens",
                                    "normalizer", "pre_tokenizer", "post_processor", "decoder",
                                    "model"});
  HfTokenizerSpec spec;
  spec.path = path;
  if (root.has("normalizer")) read_normalizer(root.member("normalizer"), &spec);
  if (root.has("pre_tokenizer")) read_pre_tokenizer(root.member("pre_tokenizer"), &spec);
  if (root.has("decoder")) read_decoder(root.member("decoder"), &spec);
  read_model(root.member("model"), &spec.model);
  if (root.has("added_tokens")) read_added_tokens(root.member("added_tokens"), root.has("normalizer"), &spec);
  return spec;
}

HfTokenizerSpec load_hf_tokenizer_spec(const std::string& path) {
  return parse_hf_tokenizer_spec(read_file(path), path);
}

}  // namespace trainer
