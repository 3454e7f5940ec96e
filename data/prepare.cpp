// `trainer data prepare` (see prepare.h): split, choose validation documents, tokenize,
// write shards into a staging directory, then move them into place.
#include "data/prepare.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

#include "data/dir_lock.h"
#include "data/folder_publication.h"
#include "data/input_documents.h"
#include "data/prepare_state.h"
#include "data/shard_sink.h"
#include "data/token_shard.h"
#include "data/tokenizer_record.h"
#include "data/shuffle.h"
#include "kernels/base/errors.h"
#include "kernels/base/output_target.h"

namespace trainer {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kValSplitStream = 3;
constexpr const char* kStateFile = "state";

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
  if (o.batch_bytes < 1)
    throw ConfigError(fmt::format("data prepare: batch_bytes {} is below 1", o.batch_bytes));
  if (o.doc_blank_lines < 0)
    throw ConfigError(fmt::format("data prepare: --doc-blank-lines {} is negative",
                                  o.doc_blank_lines));
}

// Selection sampling (Knuth, TAOCP 3.4.2, algorithm S): document i of n is drawn with
// probability (wanted - drawn) / (n - i), which draws exactly `wanted` documents, every set of
// them equally likely, in one streaming pass and O(1) memory.
class ValidationDraw {
 public:
  ValidationDraw(int64_t n_docs, double fraction, uint64_t seed, const std::string& inputs_desc)
      : left_docs_(n_docs), rng_(stream_seed(seed, kValSplitStream)) {
    if (fraction <= 0.0) return;
    if (n_docs < 2)
      throw InputError(fmt::format(
          "data prepare: found {} document in {}; a validation split needs at least 2 (lower "
          "--doc-blank-lines so that the text splits into more documents, or use "
          "--val-fraction 0)", n_docs, inputs_desc));
    left_wanted_ = std::clamp<int64_t>(std::llround(fraction * static_cast<double>(n_docs)), 1, n_docs - 1);
  }

  // Called once per document, in order.
  bool next_is_val() {
    const uint64_t draw = rng_.next() % static_cast<uint64_t>(left_docs_);
    const bool val = draw < static_cast<uint64_t>(left_wanted_);
    --left_docs_;
    left_wanted_ -= val ? 1 : 0;
    return val;
  }

 private:
  int64_t left_docs_, left_wanted_ = 0;
  SplitMix64 rng_;
};

// Removes the staging directory however prepare ends, so a failed run (a full disk, a bad
// input) leaves the output directory as it found it, unless the run finished a shard: then
// the staged shards and their resume record stay for a rerun (prepare_state.h). Best effort:
// on the error path the error being reported matters more than a failed clean-up.
class StagingCleanup {
 public:
  explicit StagingCleanup(fs::path dir) : dir_(std::move(dir)) {}
  ~StagingCleanup() {
    std::error_code ec;
    if (!fs::exists(dir_ / kStateFile, ec)) fs::remove_all(dir_, ec);
  }
  StagingCleanup(const StagingCleanup&) = delete;
  StagingCleanup& operator=(const StagingCleanup&) = delete;

 private:
  fs::path dir_;
};

// Tokenizes docs[i] into (*out)[i] on `threads` threads (documents taken in order
// from a shared counter; each result lands in its own slot, so the order of completion does
// not matter). The first exception any thread meets is rethrown here.
void tokenize_batch(const Tokenizer& tok, const std::vector<std::string>& docs, int threads,
                    std::vector<std::vector<int32_t>>* out) {
  out->assign(docs.size(), {});
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (size_t i = next++; i < docs.size(); i = next++)
        (*out)[i] = tok.encode(docs[i]);
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

// What a resume must match: every option that changes the shards, and the inputs as found.
std::string fingerprint(const PrepareOptions& o, const PrepareSummary& sum, const std::vector<InputFile>& inputs) {
  std::string f = fmt::format("tokenizer={} dir={} bos={} eos={} vocab={} val={} shard={} seed={} "
                              "blank={} field={} bad={}\n", o.tokenizer, o.tokenizer_dir, sum.bos,
                              sum.eos, sum.vocab_size, o.val_fraction, o.shard_tokens, o.seed,
                              o.doc_blank_lines, o.text_field, static_cast<int>(o.bad_lines));
  for (const InputFile& in : inputs) f += fmt::format("{} {} {}\n", in.path, in.bytes, in.mtime_ns);
  return f;
}

// The staged shards of a record, each present with the size its tokens give.
bool staged_shards_intact(const fs::path& staging, const SinkPoint& p) {
  for (const std::string& name : p.names) {
    std::error_code ec;
    if (!fs::is_regular_file(staging / name, ec)) return false;
  }
  int64_t tokens = 0;
  try {
    for (const std::string& name : p.names) tokens += Shard((staging / name).string(), 0).tokens();
  } catch (const InputError&) {  // a damaged staged shard: start afresh rather than trust it
    return false;
  }
  return tokens == p.tokens;
}

// Pass one: the documents of every file (JSONL lines checked), counted per file.
std::vector<int64_t> count_documents(const std::vector<InputFile>& inputs, const DocumentOptions& d,
                                     const PrepareProgress& progress, int64_t total_bytes, int64_t* skipped) {
  std::vector<int64_t> counts;
  int64_t done = 0;
  std::string text;
  for (const InputFile& in : inputs) {
    DocumentReader reader(in, d);
    int64_t n = 0;
    while (reader.next(&text)) {
      ++n;
      if (progress && (n & 1023) == 0) progress(PreparePhase::scanning, done + reader.compressed_bytes_read(), total_bytes);
    }
    counts.push_back(n);
    *skipped += reader.skipped_lines();
    done += in.bytes;
  }
  if (progress) progress(PreparePhase::scanning, total_bytes, total_bytes);
  return counts;
}

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

  const std::vector<InputFile> inputs = expand_inputs(o.inputs);
  const DocumentOptions doc_options{o.doc_blank_lines, o.text_field, o.bad_lines};
  for (const InputFile& f : inputs) sum.input_bytes += f.bytes;
  sum.files = static_cast<int64_t>(inputs.size());
  const std::vector<int64_t> per_file = count_documents(inputs, doc_options, progress, sum.input_bytes,
                                                        &sum.skipped_lines);
  int64_t n_docs = 0;
  for (int64_t n : per_file) n_docs += n;
  const std::string desc = inputs.size() == 1 ? fmt::format("'{}'", inputs[0].path)
                                              : fmt::format("{} input files", inputs.size());
  if (n_docs == 0) throw InputError(fmt::format("data prepare: found no text in {}", desc));
  ValidationDraw draw(n_docs, o.val_fraction, o.seed, desc);

  const fs::path out(o.out_dir), staging = fs::path(o.out_dir) / ".staging";
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out))
    throw InputError(fmt::format("cannot create the output directory '{}': {}", o.out_dir,
                                 ec ? ec.message() : "a file of that name exists"));
  // Held to the end: a second prepare into this folder stops here, before it reads .staging.
  const DirLock lock(o.out_dir, DirLockUse{"data prepare --out", "data prepare"});
  const TokenWidth width = token_width_for_vocab(tokenizer->vocab_size());
  PrepareState state;
  state.fingerprint = fingerprint(o, sum, inputs);
  PrepareState found;
  const bool resume = load_prepare_state((staging / kStateFile).string(), &found) &&
                      found.fingerprint == state.fingerprint &&
                      staged_shards_intact(staging, found.train) &&
                      staged_shards_intact(staging, found.val);
  if (!resume) {
    fs::remove_all(staging, ec);
    fs::create_directories(staging, ec);
    if (ec) throw InputError(fmt::format("cannot create '{}': {}", staging.string(), ec.message()));
  }
  const StagingCleanup cleanup(staging);

  ShardSink* sinks[2] = {nullptr, nullptr};
  auto save = [&] {
    state.train = sinks[0]->point();
    state.val = sinks[1]->point();
    save_prepare_state((staging / kStateFile).string(), state);
  };
  ShardSink train(staging.string(), "train", o.shard_tokens, width, save);
  ShardSink val(staging.string(), "val", o.shard_tokens, width, save);
  sinks[0] = &train;
  sinks[1] = &val;
  if (resume) {
    train.restore(found.train);
    val.restore(found.val);
    sum.resumed_shards = static_cast<int64_t>(found.train.names.size() + found.val.names.size());
  }

  // Pass two. Documents are gathered into a batch of about batch_bytes, tokenized on every
  // thread, then added in order; those wholly in resumed shards are not tokenized.
  int64_t doc_index = 0, done_bytes = 0;
  std::vector<std::string> batch;
  std::vector<std::pair<int64_t, ShardSink*>> batch_docs;
  std::vector<std::vector<int32_t>> ids;
  size_t batch_bytes = 0;
  auto flush = [&] {
    tokenize_batch(*tokenizer, batch, sum.threads, &ids);
    for (size_t k = 0; k < batch.size(); ++k) batch_docs[k].second->add(batch_docs[k].first, sum.bos, ids[k], sum.eos);
    batch.clear();
    batch_docs.clear();
    batch_bytes = 0;
  };
  const int64_t first_wanted = std::min(train.point().resume_doc, val.point().resume_doc);
  std::string text;
  for (size_t f = 0; f < inputs.size(); ++f) {
    const InputFile& in = inputs[f];
    if (doc_index + per_file[f] <= first_wanted) {  // finished by an earlier run: not even read
      for (int64_t k = 0; k < per_file[f]; ++k) (draw.next_is_val() ? sum.val_documents : sum.train_documents) += 1;
      doc_index += per_file[f];
      done_bytes += in.bytes;
      continue;
    }
    DocumentReader reader(in, doc_options);
    int64_t in_file = 0;
    while (reader.next(&text)) {
      if (++in_file > per_file[f])
        throw InputError(fmt::format("input '{}' changed while being prepared", in.path));
      const bool v = draw.next_is_val();
      (v ? sum.val_documents : sum.train_documents) += 1;
      ShardSink* sink = v ? &val : &train;
      if (sink->wants(doc_index)) {
        batch_bytes += text.size();
        batch.push_back(std::move(text));
        batch_docs.emplace_back(doc_index, sink);
        if (batch_bytes >= static_cast<size_t>(o.batch_bytes)) {
          flush();
          if (progress) progress(PreparePhase::tokenizing, done_bytes + reader.compressed_bytes_read(), sum.input_bytes);
        }
      }
      ++doc_index;
    }
    if (in_file != per_file[f]) throw InputError(fmt::format("input '{}' changed while being prepared", in.path));
    done_bytes += in.bytes;
  }
  flush();
  if (progress) progress(PreparePhase::tokenizing, sum.input_bytes, sum.input_bytes);
  train.finish();
  val.finish();
  sum.train_tokens = train.total();
  sum.val_tokens = val.total();

  std::vector<std::string> names = train.names();
  names.insert(names.end(), val.names().begin(), val.names().end());
  // Which tokenizer made them, published with them (tokenizer_record.h).
  write_tokenizer_record((staging / kTokenizerRecordName).string(),
                         tokenizer_record(o.tokenizer, o.tokenizer_dir, tokenizer->vocab_size()));
  names.push_back(kTokenizerRecordName);
  sum.stale_shards_removed = publish_shards(out, staging, names, "data prepare, pid " + std::to_string(::getpid()));
  for (const std::string& n : train.names()) sum.train_shards.push_back((out / n).string());
  for (const std::string& n : val.names()) sum.val_shards.push_back((out / n).string());
  return sum;
}

}  // namespace trainer
