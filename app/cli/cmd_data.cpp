// trainer data prepare|inspect|encode|decode: text -> token shards, a look into shards, and the
// tokenizers from the command line. The pipeline itself lives in data/ (prepare.h, shard.h,
// tokenizer.h); this file parses options, draws the progress bar and prints summaries.
// User mistakes are ConfigError/InputError (exit code 2) naming the option or file.
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "app/cli/cli_checks.h"
#include "app/cli/commands.h"
#include "data/file_glob.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "data/token_shard.h"
#include "data/tokenizer.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string thousands(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return v < 0 ? "-" + s : s;
}

// Progress of `data prepare` on stderr, only on a terminal or with --progress: a redrawn line
// on a terminal, one line per 10% otherwise (so that logs of big jobs show life), per pass.
enum class ProgressMode { off, on };

class ProgressBar {
 public:
  explicit ProgressBar(ProgressMode mode) : tty_(isatty(STDERR_FILENO) == 1), mode_(mode) {}

  void update(PreparePhase phase, int64_t done, int64_t total) {
    if (mode_ == ProgressMode::off || total <= 0) return;
    if (phase != phase_ || start_done_ < 0) {  // rates count from the start of each pass
      if (phase != phase_) finish();
      phase_ = phase;
      start_ = Clock::now();
      start_done_ = done;
      last_pct_ = -1;
    }
    const int pct = static_cast<int>(done * 100 / total);
    if (pct == last_pct_ || (!tty_ && pct / 10 == last_pct_ / 10)) return;
    last_pct_ = pct;
    const double secs = seconds_since(start_);
    const double bytes = static_cast<double>(done - start_done_);
    const double mbps = secs > 0 ? bytes / 1e6 / secs : 0.0;
    const double eta = bytes > 0 ? secs * static_cast<double>(total - done) / bytes : 0.0;
    const char* what = phase == PreparePhase::scanning ? "scanning  " : "tokenizing";
    if (tty_) {
      const int filled = pct * 30 / 100;
      std::fprintf(stderr, "\r%s [%s%s] %3d%%  %.1f MB/s  ETA %.0f s ", what,
                   std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(30 - filled), '.').c_str(), pct, mbps, eta);
      drawn_ = true;
    } else {
      std::fprintf(stderr, "%s: %d%% (%.1f MB/s, ETA %.0f s)\n", what, pct, mbps, eta);
    }
    std::fflush(stderr);
  }

  void finish() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  Clock::time_point start_ = Clock::now();
  int64_t start_done_ = -1;
  bool tty_;
  ProgressMode mode_;
  bool drawn_ = false;
  PreparePhase phase_ = PreparePhase::scanning;
  int last_pct_ = -1;
};

struct PrepareArgs {
  PrepareOptions opt;
  std::string tokenizer = "gpt2";
  bool quiet = false;
  bool progress = false;
  bool skip_bad_lines = false;
};

int run_prepare(PrepareArgs& a) {
  a.opt.tokenizer = a.tokenizer;
  a.opt.bad_lines = a.skip_bad_lines ? BadLines::skip : BadLines::fail;
  const bool show = !a.quiet && (a.progress || isatty(STDERR_FILENO) == 1);
  ProgressBar bar(show ? ProgressMode::on : ProgressMode::off);
  const auto t0 = Clock::now();
  const PrepareSummary s = prepare_shards(
      a.opt, [&](PreparePhase phase, int64_t done, int64_t total) { bar.update(phase, done, total); });
  bar.finish();
  const double secs = seconds_since(t0);
  auto list = [](const std::vector<std::string>& v) {
    if (v.empty()) return std::string("none");
    return v.size() == 1 ? v[0] : fmt::format("{} ... {}", v.front(), v.back());
  };
  fmt::print("prepared {}: {} input file(s), {:.2f} MB, tokenizer {} (vocab {}, {} per token)\n",
             a.opt.out_dir, s.files, static_cast<double>(s.input_bytes) / 1e6, a.tokenizer,
             s.vocab_size, s.vocab_size <= 65536 ? "uint16" : "uint32");
  auto mark = [](int32_t id, const std::string& text) {
    return id < 0 ? std::string("none") : fmt::format("'{}' (id {})", text, id);
  };
  fmt::print("  per document: BOS {}, EOS {}\n", mark(s.bos, s.bos_text), mark(s.eos, s.eos_text));
  fmt::print("  documents: {} ({} train, {} val; val drawn with seed {})\n",
             thousands(s.train_documents + s.val_documents), thousands(s.train_documents),
             thousands(s.val_documents), a.opt.seed);
  fmt::print("  train: {} tokens in {} shard(s): {}\n", thousands(s.train_tokens),
             s.train_shards.size(), list(s.train_shards));
  fmt::print("  val:   {} tokens in {} shard(s): {}\n", thousands(s.val_tokens),
             s.val_shards.size(), list(s.val_shards));
  if (s.skipped_lines > 0)
    fmt::print("  skipped {} bad JSONL line(s) (--skip-bad-lines)\n", thousands(s.skipped_lines));
  if (s.resumed_shards > 0)
    fmt::print("  resumed: {} shard(s) finished by an earlier run kept\n", s.resumed_shards);
  if (s.stale_shards_removed > 0)
    fmt::print("  removed {} shard(s) left from an earlier run\n", s.stale_shards_removed);
  fmt::print("  time: {:.2f} s ({:.2f} MB/s, {} thread(s))\n", secs,
             secs > 0 ? static_cast<double>(s.input_bytes) / 1e6 / secs : 0.0, s.threads);
  fmt::print("recipe: data: {{train: \"{}/train_*.bin\", val: \"{}/val_*.bin\", tokenizer: {}}}\n",
             a.opt.out_dir, a.opt.out_dir, a.tokenizer);
  return 0;
}

struct TokenizerArgs {
  std::string tokenizer = "gpt2";
  std::string dir = kDefaultTokenizerDir;
};

constexpr const char* kTokenizerHelp =
    "gpt2 (BPE, vocab 50257), byte (256 bytes + end-of-text), or the path of a Hugging Face "
    "tokenizer.json (or of a folder holding one; its tokenizer_config.json gives BOS/EOS)";

void add_tokenizer_options(CLI::App* sub, TokenizerArgs* t) {
  sub->add_option("--tokenizer", t->tokenizer, kTokenizerHelp)->capture_default_str();
  sub->add_option("--tokenizer-dir", t->dir,
                  "directory holding GPT-2's encoder.json and vocab.bpe (scripts/fetch_data.sh "
                  "puts them in datasets/tokenizer)")
      ->capture_default_str();
}

std::unique_ptr<Tokenizer> load(const TokenizerArgs& t) {
  return make_tokenizer(t.tokenizer, t.dir);
}

struct InspectArgs {
  std::vector<std::string> files;
  TokenizerArgs tok;
  bool tokenizer_given = false;
  int head = 0;
  int seq_len = 0;
  int global_batch = 1;
};

int run_inspect(const InspectArgs& a) {
  std::unique_ptr<Tokenizer> tok;
  if (a.tokenizer_given) tok = load(a.tok);
  int64_t total = 0, n_files = 0;
  for (const std::string& pattern : a.files) {
    for (const std::string& path : expand_glob(pattern)) {
      ++n_files;
      const Shard shard(path, tok ? tok->vocab_size() : 0);
      total += shard.tokens();
      fmt::print("{}: {} tokens, {}, max id {}", path, thousands(shard.tokens()),
                 shard.width() == TokenWidth::u16 ? "uint16 (magic 20240520 v1)"
                                                  : "uint32 (magic 20240801 v7)",
                 shard.max_token());
      if (tok) {
        // Documents, counted by the mark data prepare puts on each: its BOS (end-of-text for
        // gpt2 and byte), else its EOS.
        const int32_t mark = tok->bos() >= 0 ? tok->bos() : tok->eos() >= 0 ? tok->eos() : tok->eot();
        const char* role = tok->bos() >= 0 ? "BOS" : tok->eos() >= 0 ? "EOS" : "end-of-text";
        int64_t docs = 0;
        shard.scan([&](const int32_t* ids, int64_t n, int64_t) {
          for (int64_t i = 0; i < n; ++i) docs += ids[i] == mark;
        });
        fmt::print(", {} documents ({} {} '{}'), all below vocab {}", thousands(docs), role, mark,
                   excerpt(tok->decode({mark})), tok->vocab_size());
      }
      fmt::print("\n");
      if (a.head > 0 && tok) {
        std::vector<int32_t> ids(static_cast<size_t>(std::min<int64_t>(a.head, shard.tokens())));
        shard.read(0, static_cast<int64_t>(ids.size()), ids.data());
        fmt::print("--- first {} tokens ---\n{}\n---\n", ids.size(), tok->decode(ids));
      }
    }
  }
  if (n_files > 1) fmt::print("total: {} tokens in {} files\n", thousands(total), n_files);
  if (a.seq_len > 0) {
    LoaderOptions o;
    std::string patterns;
    for (const std::string& f : a.files) patterns += (patterns.empty() ? "" : ",") + f;
    o.sources = single_source(patterns);
    o.seq_len = a.seq_len;
    o.micro_batch = a.global_batch;
    o.vocab_size = tok ? tok->vocab_size() : std::numeric_limits<int>::max();
    const DataLoader loader(o);
    fmt::print("loader: {} samples of seq_len + 1 = {} tokens per epoch, {} steps of {} "
               "samples\n", thousands(loader.samples_per_epoch()), a.seq_len + 1,
               thousands(loader.samples_per_epoch() / a.global_batch), a.global_batch);
  }
  return 0;
}

struct EncodeArgs {
  TokenizerArgs tok;
  std::string text;
  bool text_given = false;
  bool stats = false;
  bool lines = false;
};

int run_encode(const EncodeArgs& a) {
  const auto tok = load(a.tok);
  std::string text = a.text;
  if (!a.text_given)
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  const auto t0 = Clock::now();
  auto print_ids = [](const std::vector<int32_t>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
    fmt::print("{}\n", out);
  };
  size_t n_tokens = 0;
  if (a.lines) {  // one line of ids per line of text (newlines not encoded)
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      const std::vector<int32_t> ids = tok->encode(std::string_view(text).substr(start, end - start));
      n_tokens += ids.size();
      print_ids(ids);
      start = end + 1;
    }
  } else {
    const std::vector<int32_t> ids = tok->encode(text);
    n_tokens = ids.size();
    print_ids(ids);
  }
  const double secs = seconds_since(t0);
  if (a.stats)
    fmt::print(stderr, "{} bytes -> {} tokens in {:.3f} s ({:.2f} MB/s)\n", text.size(),
               n_tokens, secs, secs > 0 ? static_cast<double>(text.size()) / 1e6 / secs : 0.0);
  return 0;
}

struct DecodeArgs {
  TokenizerArgs tok;
  std::vector<int32_t> ids;
};

int run_decode(const DecodeArgs& a) {
  const std::string text = load(a.tok)->decode(a.ids);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void add_data_command(CLI::App& app, CommandList& commands) {
  auto* data = app.add_subcommand("data", "prepare token shards from text, inspect shards, run "
                                          "the tokenizers");
  data->require_subcommand(1);

  auto prepare = std::make_shared<PrepareArgs>();
  auto* p = data->add_subcommand(
      "prepare",
      "text files -> token shards in llm.c's format: OUT/train_NNNNNN.bin and OUT/val_NNNNNN.bin "
      "(recipe: data.train \"OUT/train_*.bin\", data.val \"OUT/val_*.bin\"). Each file is split "
      "into documents at runs of --doc-blank-lines blank lines; every document gets the tokenizer's "
      "marks (--bos, --eos: end-of-text first for gpt2 and byte, a tokenizer.json's BOS/EOS from its "
      "tokenizer_config.json); --val-fraction of the documents, drawn with --seed, go to validation.");
  p->add_option("--input", prepare->opt.inputs,
                "files, glob patterns (quote them) or directories: *.jsonl / *.json are JSON "
                "Lines, anything else text; .gz and .zst are decompressed")
      ->required()
      ->expected(1, -1);
  p->add_option("--tokenizer", prepare->tokenizer, kTokenizerHelp)->capture_default_str();
  p->add_option("--bos", prepare->opt.bos,
                "token put before every document: auto (gpt2/byte: end-of-text; tokenizer.json: "
                "from tokenizer_config.json), none, or a token's text such as '<|begin_of_text|>'")
      ->capture_default_str();
  p->add_option("--eos", prepare->opt.eos,
                "token put after every document: auto (gpt2/byte: none; tokenizer.json: from "
                "tokenizer_config.json), none, or a token's text")
      ->capture_default_str();
  p->add_option("--threads", prepare->opt.threads,
                "tokenizing threads (0 = every core); the shards do not depend on it")
      ->capture_default_str()
      ->check(int_in(0, 4096));
  p->add_option("--tokenizer-dir", prepare->opt.tokenizer_dir,
                "directory holding GPT-2's encoder.json and vocab.bpe (from scripts/fetch_data.sh)")
      ->capture_default_str();
  p->add_option("--out", prepare->opt.out_dir, "output directory (created; shards of an "
                                               "earlier run there are replaced)")
      ->required();
  p->add_option("--val-fraction", prepare->opt.val_fraction,
                "fraction of documents for validation, in [0, 1); at least one document when > 0")
      ->capture_default_str();
  p->add_option("--shard-tokens", prepare->opt.shard_tokens,
                "tokens per shard (the last one or two shards of a split hold between half "
                "of it and all of it; at least 65536, so a corpus cannot become millions of files)")
      ->capture_default_str()
      ->check(int_in(65536, int64_t(1) << 40));
  p->add_option("--seed", prepare->opt.seed, "seed for drawing the validation documents")
      ->capture_default_str();
  p->add_option("--doc-blank-lines", prepare->opt.doc_blank_lines,
                "a run of this many blank lines ends a document (3 splits Moby Dick into its "
                "chapters); 0 = each file is one document")
      ->capture_default_str();
  p->add_option("--text-field", prepare->opt.text_field,
                "JSONL: the key holding each document's text (a.b for nested objects)")
      ->capture_default_str();
  p->add_flag("--skip-bad-lines", prepare->skip_bad_lines,
              "JSONL: skip lines that are not JSON or lack the text field, and report how many "
              "(default: such a line is an error naming file and line)");
  p->add_flag("--progress", prepare->progress,
              "progress with MB/s and ETA on stderr even when it is not a terminal");
  p->add_flag("--quiet", prepare->quiet, "no progress bar");

  auto inspect = std::make_shared<InspectArgs>();
  auto* i = data->add_subcommand("inspect", "check token shards and print their format, token "
                                            "count and largest id");
  i->add_option("files", inspect->files, "shard files or glob patterns")->required();
  add_tokenizer_options(i, &inspect->tok);
  i->add_option("--head", inspect->head, "decode and print the first N tokens of each shard "
                                         "(needs --tokenizer)")
      ->check(int_in(0, int64_t(1) << 30));
  i->add_option("--seq-len", inspect->seq_len,
                "also open the files as the training loader would, with this seq_len, and "
                "count samples and steps (an error if they give less than one global batch)")
      ->check(int_in(1, int64_t(1) << 24));
  i->add_option("--global-batch", inspect->global_batch,
                "sequences per optimizer step, for --seq-len")
      ->capture_default_str()
      ->check(int_in(1, int64_t(1) << 30));

  auto encode = std::make_shared<EncodeArgs>();
  auto* e = data->add_subcommand("encode", "print the token ids of a text (argument or stdin)");
  e->add_option("text", encode->text, "text to encode; stdin when absent");
  add_tokenizer_options(e, &encode->tok);
  e->add_flag("--stats", encode->stats, "print bytes, tokens and speed on stderr");
  e->add_flag("--lines", encode->lines, "encode each line of the text on its own (without its "
                                        "newline) and print one line of ids per line");

  auto decode = std::make_shared<DecodeArgs>();
  auto* d = data->add_subcommand("decode", "print the text of token ids (raw bytes, no newline "
                                           "added)");
  d->add_option("ids", decode->ids, "token ids")->required();
  add_tokenizer_options(d, &decode->tok);

  commands.push_back({data, [=]() -> int {
                        if (p->parsed()) return run_prepare(*prepare);
                        if (i->parsed()) {
                          inspect->tokenizer_given = i->count("--tokenizer") > 0;
                          if (inspect->head > 0 && !inspect->tokenizer_given)
                            throw ConfigError("data inspect: --head needs --tokenizer");
                          return run_inspect(*inspect);
                        }
                        if (e->parsed()) {
                          encode->text_given = e->count("text") > 0;
                          return run_encode(*encode);
                        }
                        return run_decode(*decode);
                      }});
}

}  // namespace trainer
