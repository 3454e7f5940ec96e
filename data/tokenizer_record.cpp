// The tokenizer record beside token shards (see tokenizer_record.h).
#include "data/tokenizer_record.h"

#include <fmt/core.h>

#include <filesystem>
#include <sstream>

#include "data/file_io.h"
#include "data/tokenizer.h"
#include "kernels/base/atomic_file.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {

namespace {

void fnv1a(uint64_t* h, const std::string& bytes) {
  for (unsigned char c : bytes) {
    *h ^= c;
    *h *= 0x100000001b3ull;
  }
}

}  // namespace

TokenizerRecord tokenizer_record(const std::string& spec, const std::string& gpt2_dir, int32_t vocab_size) {
  TokenizerRecord r;
  r.tokenizer = spec;
  r.vocab_size = vocab_size;
  if (spec == "byte") {
    r.fingerprint = "byte";
    return r;
  }
  uint64_t h = 0xcbf29ce484222325ull;
  if (spec == "gpt2") {
    fnv1a(&h, read_file(gpt2_dir + "/encoder.json"));
    fnv1a(&h, read_file(gpt2_dir + "/vocab.bpe"));
  } else {
    fnv1a(&h, read_file(tokenizer_json_path(spec)));
  }
  r.fingerprint = fmt::format("{:016x}", h);
  return r;
}

std::string tokenizer_record_text(const TokenizerRecord& r) {
  return fmt::format("# written by trainer data prepare: the tokenizer these shards were made with\n"
                     "tokenizer: {}\nfingerprint: {}\nvocab_size: {}\n",
                     r.tokenizer, r.fingerprint, r.vocab_size);
}

void write_tokenizer_record(const std::string& path, const TokenizerRecord& r) {
  write_file_atomically(path, "tokenizer record", tokenizer_record_text(r));
}

std::optional<TokenizerRecord> read_tokenizer_record(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir.empty() ? "." : dir) / kTokenizerRecordName).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::istringstream in(read_file(path));
  TokenizerRecord r;
  bool has_fingerprint = false, has_vocab = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(": ");
    if (colon == std::string::npos)
      throw InputError(fmt::format("{}: '{}' is not a 'key: value' line; valid: the file data prepare writes",
                                   path, excerpt(line)));
    const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
    if (key == "tokenizer") {
      r.tokenizer = value;
    } else if (key == "fingerprint") {
      r.fingerprint = value;
      has_fingerprint = true;
    } else if (key == "vocab_size") {
      try {
        r.vocab_size = std::stoi(value);
        has_vocab = true;
      } catch (const std::exception&) {
        throw InputError(fmt::format("{}: vocab_size '{}' is not a number", path, excerpt(value)));
      }
    }
  }
  if (!has_fingerprint || !has_vocab)
    throw InputError(fmt::format("{}: no fingerprint or vocab_size; valid: the file data prepare writes (prepare the "
                                 "shards again, or delete it to train without the check)",
                                 path));
  return r;
}

bool same_tokenizer(const TokenizerRecord& a, const TokenizerRecord& b) {
  return a.fingerprint == b.fingerprint && a.vocab_size == b.vocab_size;
}

}  // namespace trainer
