// Saving and loading `data prepare`'s resume record (see prepare_state.h).
#include "data/prepare_state.h"

#include <fmt/core.h>

#include <filesystem>
#include <sstream>

#include "data/file_io.h"
#include "kernels/base/atomic_file.h"

namespace trainer {
namespace {

constexpr const char* kMagic = "trainer-prepare-state 1";

void put(std::string* out, const char* split, const SinkPoint& p) {
  *out += fmt::format("{} {} {} {} {}\n", split, p.tokens, p.resume_doc, p.resume_skip, p.names.size());
  for (const std::string& n : p.names) *out += n + "\n";
}

bool get(std::istream& in, const char* split, SinkPoint* p) {
  std::string word;
  size_t n = 0;
  if (!(in >> word >> p->tokens >> p->resume_doc >> p->resume_skip >> n) || word != split) return false;
  if (p->tokens < 0 || p->resume_doc < 0 || p->resume_skip < 0 || n > (size_t{1} << 24)) return false;
  p->names.resize(n);
  for (std::string& name : p->names)
    if (!(in >> name) || name.find('/') != std::string::npos) return false;
  return true;
}

}  // namespace

void save_prepare_state(const std::string& path, const PrepareState& s) {
  std::string out = fmt::format("{}\nfingerprint {}\n{}\n", kMagic, s.fingerprint.size(), s.fingerprint);
  put(&out, "train", s.train);
  put(&out, "val", s.val);
  write_file_atomically(path, "prepare state", out);
}

bool load_prepare_state(const std::string& path, PrepareState* s) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::istringstream in(read_file(path));
  std::string line, word;
  size_t bytes = 0;
  if (!std::getline(in, line) || line != kMagic) return false;
  if (!(in >> word >> bytes) || word != "fingerprint" || bytes > (size_t{1} << 24)) return false;
  in.get();
  s->fingerprint.assign(bytes, '\0');
  if (!in.read(&s->fingerprint[0], static_cast<std::streamsize>(bytes))) return false;
  return get(in, "train", &s->train) && get(in, "val", &s->val);
}

}  // namespace trainer
