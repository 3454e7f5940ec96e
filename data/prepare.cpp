// `trainer data prepare` (see prepare.h): split, choose validation documents, tokenize,
// write shards into a staging directory, then move them into place.
#include "data/prepare.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

#include "data/documents.h"
#include "data/file_glob.h"
#include "data/file_io.h"
#include "data/token_shard.h"
#include "data/shuffle.h"
#include "kernels/base/errors.h"
#include "kernels/base/output_target.h"

namespace trainer {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kValSplitStream = 3;

void check_options(const PrepareOptions& o) {
  if (o.inputs.empty()) throw ConfigError("data prepare: no --input given");
  if (o.out_dir.empty()) throw ConfigError("data prepare: no --out directory given");
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0))
    throw ConfigError(fmt::format("data prepare: --val-fraction {} is outside [0, 1)",
                                  o.val_fraction));
  if (o.shard_tokens < 1 || o.shard_tokens > 0x7FFFFFFF)
    throw ConfigError(fmt::format("data prepare: --shard-tokens {} is outside [1, 2147483647]",
                                  o.shard_tokens));
  if (o.threads < 0 || o.threads > 4096)
    throw ConfigError(fmt::format("data prepare: --threads {} is outside [0, 4096] (0 = every core)",
                                  o.threads));
  if (o.doc_blank_lines < 0)
    throw ConfigError(fmt::format("data prepare: --doc-blank-lines {} is negative",
                                  o.doc_blank_lines));
}

// Buffers one split's token stream and cuts it into shards (see prepare.h for the sizes).
class ShardSink {
 public:
  ShardSink(std::string dir, std::string prefix, int64_t shard_tokens, TokenWidth width)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), shard_tokens_(shard_tokens),
        width_(width) {}

  void add(int32_t bos, const std::vector<int32_t>& tokens, int32_t eos) {
    const size_t before = buf_.size();
    if (bos >= 0) buf_.push_back(bos);
    buf_.insert(buf_.end(), tokens.begin(), tokens.end());
    if (eos >= 0) buf_.push_back(eos);
    total_ += static_cast<int64_t>(buf_.size() - before);
    const size_t s = static_cast<size_t>(shard_tokens_);
    size_t used = 0;
    while (buf_.size() - used >= s + s / 2) {
      write(buf_.data() + used, s);
      used += s;
    }
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(used));
  }

  void finish() {
    const size_t r = buf_.size();
    if (r > static_cast<size_t>(shard_tokens_)) {
      const size_t first = r - r / 2;
      write(buf_.data(), first);
      write(buf_.data() + first, r - first);
    } else if (r > 0) {
      write(buf_.data(), r);
    }
    buf_.clear();
  }

  int64_t total() const { return total_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  void write(const int32_t* tokens, size_t n) {
    std::string name = fmt::format("{}_{:06d}.bin", prefix_, names_.size());
    write_shard((fs::path(dir_) / name).string(), tokens, n, width_);
    names_.push_back(std::move(name));
  }

  std::string dir_, prefix_;
  int64_t shard_tokens_;
  TokenWidth width_;
  std::vector<int32_t> buf_;
  std::vector<std::string> names_;
  int64_t total_ = 0;
};

struct InputFile {
  std::string path;
  int64_t bytes = 0;
  std::vector<DocumentSpan> docs;
};

std::vector<bool> choose_validation(int64_t n_docs, double fraction, uint64_t seed,
                                    const std::string& inputs_desc) {
  std::vector<bool> is_val(static_cast<size_t>(n_docs), false);
  if (fraction <= 0.0) return is_val;
  if (n_docs < 2)
    throw InputError(fmt::format(
        "data prepare: found {} document in {}; a validation split needs at least 2 (lower "
        "--doc-blank-lines so that the text splits into more documents, or use "
        "--val-fraction 0)", n_docs, inputs_desc));
  int64_t n_val = std::llround(fraction * static_cast<double>(n_docs));
  n_val = std::clamp<int64_t>(n_val, 1, n_docs - 1);
  std::vector<int64_t> order(static_cast<size_t>(n_docs));
  for (int64_t i = 0; i < n_docs; ++i) order[static_cast<size_t>(i)] = i;
  SplitMix64 rng(stream_seed(seed, kValSplitStream));
  fisher_yates(&order, &rng);
  for (int64_t i = 0; i < n_val; ++i) is_val[static_cast<size_t>(order[static_cast<size_t>(i)])] = true;
  return is_val;
}

// train_NNNNNN.bin or val_NNNNNN.bin: the names this tool writes (and so may replace).
bool is_shard_name(const std::string& name) {
  std::string_view rest(name);
  if (rest.rfind("train_", 0) == 0) rest.remove_prefix(6);
  else if (rest.rfind("val_", 0) == 0) rest.remove_prefix(4);
  else return false;
  if (rest.size() != 10 || rest.substr(6) != ".bin") return false;
  for (size_t i = 0; i < 6; ++i)
    if (rest[i] < '0' || rest[i] > '9') return false;
  return true;
}

// Removes the staging directory however prepare ends, so a failed run (a full disk, a bad
// input) leaves the output directory as it found it. Best effort: on the error path the error
// being reported matters more than a failed clean-up.
class StagingCleanup {
 public:
  explicit StagingCleanup(fs::path dir) : dir_(std::move(dir)) {}
  ~StagingCleanup() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  StagingCleanup(const StagingCleanup&) = delete;
  StagingCleanup& operator=(const StagingCleanup&) = delete;

 private:
  fs::path dir_;
};

// Refuses an output directory that is a checkpoint, or that holds something other than a file
// under a shard's name: publishing removes or replaces every such name, and a device or FIFO
// there is never meant to be deleted. Checked before any work, so nothing is left behind.
void check_out_dir(const std::string& dir) {
  const std::string problem = checkpoint_dir_problem(dir);
  if (!problem.empty())
    throw InputError(fmt::format("data prepare: cannot write shards into --out '{}': {}", dir, problem));
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_shard_name(it->path().filename().string())) continue;
    const std::string kind = non_regular_target_problem(it->path().string());
    if (!kind.empty()) throw InputError(fmt::format("data prepare: cannot replace '{}': {}", it->path().string(), kind));
  }
}

// Replaces the shards of an earlier run with the staged ones; returns how many old shards
// had no new namesake.
int64_t publish(const fs::path& out, const fs::path& staging, const std::vector<std::string>& names) {
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (is_shard_name(name) && std::find(names.begin(), names.end(), name) == names.end())
      stale.push_back(entry.path());
  }
  std::error_code ec;
  for (const fs::path& p : stale)
    if (!fs::remove(p, ec) || ec)
      throw InputError(fmt::format("cannot remove the old shard '{}': {}", p.string(),
                                   ec.message()));
  for (const std::string& name : names) {  // rename replaces a namesake atomically
    fs::rename(staging / name, out / name, ec);
    if (ec)
      throw InputError(fmt::format("cannot move '{}' into '{}': {}", (staging / name).string(),
                                   out.string(), ec.message()));
  }
  fs::remove_all(staging, ec);
  return static_cast<int64_t>(stale.size());
}

// Tokenizes docs[i] of text into (*out)[i] on `threads` threads (documents taken in order
// from a shared counter; each result lands in its own slot, so the order of completion does
// not matter). The first exception any thread meets is rethrown here.
void tokenize_batch(const Tokenizer& tok, std::string_view text, const std::vector<DocumentSpan>& docs,
                    int threads, std::vector<std::vector<int32_t>>* out) {
  out->assign(docs.size(), {});
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (size_t i = next++; i < docs.size(); i = next++)
        (*out)[i] = tok.encode(text.substr(docs[i].offset, docs[i].length));
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = docs.size();
    }
  };
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(docs.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

constexpr size_t kBatchBytes = size_t{16} << 20;  // text tokenized between two writes

}  // namespace

PrepareSummary prepare_shards(const PrepareOptions& o, const PrepareProgress& progress) {
  check_options(o);
  check_out_dir(o.out_dir);
  const auto tokenizer = make_tokenizer(o.tokenizer, o.tokenizer_dir, "data prepare: --tokenizer",
                                        o.bos, o.eos, "data prepare: --bos", "data prepare: --eos");
  PrepareSummary sum;
  sum.vocab_size = tokenizer->vocab_size();
  sum.bos = tokenizer->bos();
  sum.eos = tokenizer->eos();
  if (sum.bos < 0 && sum.eos < 0)
    throw ConfigError(fmt::format("data prepare: the tokenizer {} has neither a BOS nor an EOS for "
                                  "document boundaries; give --bos TOKEN or --eos TOKEN", o.tokenizer));
  if (sum.bos >= 0) sum.bos_text = tokenizer->decode({sum.bos});
  if (sum.eos >= 0) sum.eos_text = tokenizer->decode({sum.eos});
  sum.threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  std::vector<InputFile> inputs;
  for (const std::string& pattern : o.inputs)
    for (std::string& path : expand_glob(pattern)) {
      const MappedFile f(path);
      inputs.push_back({std::move(path), static_cast<int64_t>(f.size()),
                        split_documents(f.view(), o.doc_blank_lines)});
    }
  int64_t n_docs = 0;
  for (const InputFile& f : inputs) {
    n_docs += static_cast<int64_t>(f.docs.size());
    sum.input_bytes += f.bytes;
  }
  sum.files = static_cast<int64_t>(inputs.size());
  const std::string desc = inputs.size() == 1 ? fmt::format("'{}'", inputs[0].path)
                                              : fmt::format("{} input files", inputs.size());
  if (n_docs == 0) throw InputError(fmt::format("data prepare: found no text in {}", desc));
  const std::vector<bool> is_val = choose_validation(n_docs, o.val_fraction, o.seed, desc);

  const fs::path out(o.out_dir), staging = fs::path(o.out_dir) / ".staging";
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out))
    throw InputError(fmt::format("cannot create the output directory '{}': {}", o.out_dir,
                                 ec ? ec.message() : "a file of that name exists"));
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec)
    throw InputError(fmt::format("cannot create '{}': {}", staging.string(), ec.message()));
  const StagingCleanup cleanup(staging);

  const TokenWidth width = token_width_for_vocab(tokenizer->vocab_size());
  ShardSink train(staging.string(), "train", o.shard_tokens, width);
  ShardSink val(staging.string(), "val", o.shard_tokens, width);
  int64_t doc_index = 0, done_bytes = 0;
  for (const InputFile& in : inputs) {
    const MappedFile f(in.path);
    if (static_cast<int64_t>(f.size()) != in.bytes)
      throw InputError(fmt::format("input '{}' changed size while being prepared", in.path));
    size_t last_end = 0;
    std::vector<std::vector<int32_t>> ids;
    for (size_t first = 0; first < in.docs.size();) {
      size_t last = first, bytes = 0;
      while (last < in.docs.size() && (last == first || bytes < kBatchBytes)) bytes += in.docs[last++].length;
      const std::vector<DocumentSpan> batch(in.docs.begin() + static_cast<std::ptrdiff_t>(first),
                                            in.docs.begin() + static_cast<std::ptrdiff_t>(last));
      tokenize_batch(*tokenizer, f.view(), batch, sum.threads, &ids);
      for (size_t k = 0; k < batch.size(); ++k) {
        const DocumentSpan& d = batch[k];
        const bool v = is_val[static_cast<size_t>(doc_index++)];
        (v ? val : train).add(sum.bos, ids[k], sum.eos);
        (v ? sum.val_documents : sum.train_documents) += 1;
        done_bytes += static_cast<int64_t>(d.offset + d.length - last_end);
        last_end = d.offset + d.length;
        if (progress) progress(done_bytes, sum.input_bytes);
      }
      first = last;
    }
    done_bytes += static_cast<int64_t>(f.size() - last_end);
  }
  if (progress) progress(sum.input_bytes, sum.input_bytes);
  train.finish();
  val.finish();
  sum.train_tokens = train.total();
  sum.val_tokens = val.total();

  std::vector<std::string> names = train.names();
  names.insert(names.end(), val.names().begin(), val.names().end());
  sum.stale_shards_removed = publish(out, staging, names);
  for (const std::string& n : train.names()) sum.train_shards.push_back((out / n).string());
  for (const std::string& n : val.names()) sum.val_shards.push_back((out / n).string());
  return sum;
}

}  // namespace trainer
