// DataLoader (see loader.h). A single source reads the epoch's order of its ShardSet along the
// stream. A blend plans each step when its first micro-batch is asked for: the source of every
// one of the step's global_batch samples is drawn (all ranks draw the same), each source's
// samples are numbered on from its state, rolling over at its epoch's end, and this rank reads
// its own share of the plan. The plan is committed to the sources' states as the step ends.
#include "data/loader.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "data/blend_mix.h"
#include "data/shuffle.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

constexpr uint64_t kSourceSeedStream = 0x5EED5;

std::string describe_sources(const std::vector<BlendSource>& sources) {
  std::string out;
  for (const BlendSource& s : sources) out += (out.empty() ? "" : ", ") + s.path;
  return out;
}

// 'a', 'b' and 'c'.
std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + ("'" + items[i] + "'");
  return out;
}

void check_options(const LoaderOptions& o) {
  const std::string what = describe_sources(o.sources);
  auto positive = [&](const char* name, int64_t v) {
    if (v <= 0)
      throw ConfigError(fmt::format("data loader for '{}': {} must be positive, got {}", what, name, v));
  };
  positive("seq_len", o.seq_len);
  positive("micro_batch", o.micro_batch);
  positive("grad_accum", o.grad_accum);
  positive("dp_size", o.dp_size);
  positive("vocab_size", o.vocab_size);
  if (o.dp_rank < 0 || o.dp_rank >= o.dp_size)
    throw ConfigError(fmt::format("data loader for '{}': dp_rank {} outside [0, {})", what, o.dp_rank, o.dp_size));
  if (o.sources.empty()) throw ConfigError("data loader without a source");
  auto check_list = [&](const std::vector<BlendSource>& list) {
    for (const BlendSource& s : list)
      if (s.path.empty() || !std::isfinite(s.weight) || !(s.weight > 0))
        throw ConfigError(fmt::format("data loader: source '{}' weight {}: a source needs a path and a "
                                      "finite weight > 0", s.path, s.weight));
  };
  check_list(o.sources);
  int64_t previous = 0;
  for (const BlendStage& st : o.stages) {
    check_list(st.train);
    if (st.until_step <= previous)
      throw ConfigError(fmt::format("data loader: stage until_step {} after {}: stages need increasing "
                                    "until_step values > 0", st.until_step, previous));
    previous = st.until_step;
  }
}

struct Draw {
  int32_t source;
  int64_t epoch, position;
};

}  // namespace

struct DataLoader::Impl {
  LoaderOptions opt;
  bool blend = false;
  std::vector<BlendSource> all;           // a blend: every source of every mix, first use first
  std::vector<std::string> names;         // display names of `all`
  std::vector<ShardSet> sets;             // one per source of `all`
  std::vector<std::vector<double>> mixes; // cumulative weights over `all`: per stage, then the base
  std::vector<std::string> files;
  int64_t total_samples = 0, total_tokens = 0, global_batch = 0;

  int64_t epoch = 0;     // single source
  int64_t position = 0;  // single source: in the epoch; a blend: samples drawn in the run
  std::vector<SourceState> states;  // a blend
  int64_t step = 1;
  int micro = 0;  // micro-batches of the current step already returned
  std::vector<Draw> plan;  // a blend: the current step's draws, global_batch of them
  std::vector<int32_t> sample_buf;  // T + 1 tokens

  int index_of(const std::string& path) const {
    for (size_t k = 0; k < all.size(); ++k)
      if (all[k].path == path) return static_cast<int>(k);
    return -1;
  }

  std::vector<double> mix_over_all(const std::vector<BlendSource>& list) const {
    std::vector<double> w(all.size(), 0.0);
    for (const BlendSource& s : list) w[static_cast<size_t>(index_of(s.path))] += s.weight;
    return blend_cumulative(w);
  }

  void open(const LoaderOptions& o) {
    check_options(o);
    opt = o;
    blend = o.sources.size() > 1 || !o.stages.empty();
    global_batch = int64_t{o.micro_batch} * o.grad_accum * o.dp_size;
    auto add = [&](const BlendSource& s) {
      if (index_of(s.path) < 0) all.push_back(s);
    };
    for (const BlendSource& s : o.sources) add(s);
    for (const BlendStage& st : o.stages)
      for (const BlendSource& s : st.train) add(s);
    names = blend_source_names(all);
    for (size_t k = 0; k < all.size(); ++k) {
      const uint64_t seed = blend ? stream_seed(o.seed, kSourceSeedStream, k) : o.seed;
      sets.emplace_back(all[k].path, o.seq_len, o.vocab_size, seed, o.shuffle);
      files.insert(files.end(), sets.back().files().begin(), sets.back().files().end());
      total_samples += sets.back().samples();
      total_tokens += sets.back().tokens();
      states.push_back(SourceState{all[k].path, 0, 0});
    }
    if (!blend && total_samples < global_batch)
      throw InputError(fmt::format(
          "token shards '{}' ({} files, {} tokens) give {} samples of seq_len + 1 = {} tokens, "
          "fewer than one global batch of {} (micro_batch {} x grad_accum {} x data ranks {})",
          all[0].path, files.size(), total_tokens, total_samples, o.seq_len + 1, global_batch,
          o.micro_batch, o.grad_accum, o.dp_size));
    for (const BlendStage& st : o.stages) mixes.push_back(mix_over_all(st.train.empty() ? o.sources : st.train));
    mixes.push_back(mix_over_all(o.sources));
    if (!blend) states.clear();
    sample_buf.resize(static_cast<size_t>(o.seq_len + 1));
  }

  int stage_at(int64_t s) const {
    int i = 0;
    while (i < static_cast<int>(opt.stages.size()) && s > opt.stages[static_cast<size_t>(i)].until_step) ++i;
    return i;
  }

  void plan_step() {
    const std::vector<double>& c = mixes[static_cast<size_t>(stage_at(step))];
    plan.resize(static_cast<size_t>(global_batch));
    std::vector<SourceState> next_states = states;
    for (int64_t j = 0; j < global_batch; ++j) {
      const int k = blend_pick(opt.seed, position + j, c);
      SourceState& st = next_states[static_cast<size_t>(k)];
      if (st.position >= sets[static_cast<size_t>(k)].samples()) {
        ++st.epoch;
        st.position = 0;
      }
      plan[static_cast<size_t>(j)] = Draw{k, st.epoch, st.position++};
    }
  }

  void commit_plan() {
    for (const Draw& d : plan) {
      SourceState& st = states[static_cast<size_t>(d.source)];
      st.epoch = d.epoch;
      st.position = d.position + 1;
    }
    position += global_batch;
  }

  void next(int32_t* inputs, int32_t* targets) {
    if (micro == 0) {
      if (blend) {
        plan_step();
      } else if (position + global_batch > total_samples) {
        ++epoch;
        position = 0;
      }
    }
    const int64_t B = opt.micro_batch, T = opt.seq_len;
    const int64_t first = (int64_t{opt.dp_rank} * opt.grad_accum + micro) * B;
    for (int64_t b = 0; b < B; ++b) {
      if (blend) {
        const Draw& d = plan[static_cast<size_t>(first + b)];
        sets[static_cast<size_t>(d.source)].read(d.epoch, d.position, sample_buf.data());
      } else {
        sets[0].read(epoch, position + first + b, sample_buf.data());
      }
      std::copy(sample_buf.begin(), sample_buf.begin() + T, inputs + b * T);
      std::copy(sample_buf.begin() + 1, sample_buf.end(), targets + b * T);
    }
    if (++micro == opt.grad_accum) {
      micro = 0;
      if (blend) commit_plan();
      else position += global_batch;
      ++step;
    }
  }

  // Names the sources on both sides: the state's (a checkpoint's) and the data's (the recipe's).
  [[noreturn]] void bad_state(const LoaderState& s, const std::string& why) const {
    std::vector<std::string> saved;
    for (const SourceState& st : s.sources) saved.push_back(st.path);
    const std::string saved_text = saved.empty() ? std::string("a single source (its path is not recorded)")
                                                 : fmt::format("the blend of {}", quoted_list(saved));
    std::vector<std::string> here;
    for (const BlendSource& b : all) here.push_back(b.path);
    const std::string here_text =
        here.size() == 1 ? quoted_list(here) : fmt::format("the blend of {}", quoted_list(here));
    throw InputError(fmt::format("data loader state (epoch {}, position {}), saved for {}, does not fit the data {}: "
                                 "{} (were the sources, shards or seq_len changed since the checkpoint?)",
                                 s.epoch, s.position, saved_text, here_text, why));
  }

  void restore(const LoaderState& s) {
    if (s.epoch < 0 || s.position < 0) bad_state(s, "negative epoch or position");
    if (!blend) {
      if (!s.sources.empty()) bad_state(s, "it is a blend's state, and the data is one source");
      if (s.position > total_samples) bad_state(s, fmt::format("the shards give {} samples per epoch", total_samples));
      epoch = s.epoch;
      position = s.position;
    } else {
      if (s.sources.size() != all.size())
        bad_state(s, fmt::format("the data is a blend of {} sources", all.size()));
      for (size_t k = 0; k < all.size(); ++k) {
        const SourceState& st = s.sources[k];
        if (st.path != all[k].path)
          bad_state(s, fmt::format("source {} is '{}' in the state and '{}' here", k, st.path, all[k].path));
        if (st.epoch < 0 || st.position < 0 || st.position > sets[k].samples())
          bad_state(s, fmt::format("source '{}' at epoch {}, position {} has {} samples", st.path, st.epoch,
                                   st.position, sets[k].samples()));
      }
      position = s.position;
      states = s.sources;
    }
    micro = 0;
  }
};

DataLoader::DataLoader(const LoaderOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->open(options);
}

DataLoader::~DataLoader() = default;
DataLoader::DataLoader(DataLoader&&) noexcept = default;
DataLoader& DataLoader::operator=(DataLoader&&) noexcept = default;

void DataLoader::set_step(int64_t step) {
  TRAINER_CHECK(impl_->micro == 0, "set_step inside a step");
  impl_->step = step;
}

void DataLoader::next(int32_t* inputs, int32_t* targets) { impl_->next(inputs, targets); }

LoaderState DataLoader::state() const {
  TRAINER_CHECK(impl_->micro == 0,
                fmt::format("loader state taken inside a step ({} of {} micro-batches done)",
                            impl_->micro, impl_->opt.grad_accum));
  return {impl_->epoch, impl_->position, impl_->states};
}

void DataLoader::restore(const LoaderState& state) { impl_->restore(state); }

void DataLoader::reset() {
  LoaderState start;
  for (const SourceState& s : impl_->states) start.sources.push_back(SourceState{s.path, 0, 0});
  impl_->restore(start);
  impl_->step = 1;
}

int64_t DataLoader::samples_per_epoch() const { return impl_->total_samples; }
int64_t DataLoader::total_tokens() const { return impl_->total_tokens; }
const std::vector<std::string>& DataLoader::files() const { return impl_->files; }

int DataLoader::stage_at(int64_t step) const { return impl_->stage_at(step); }

std::string DataLoader::mix_text(int stage) const {
  const std::vector<double>& c = impl_->mixes.at(static_cast<size_t>(stage));
  std::string out;
  double below = 0;
  for (size_t k = 0; k < c.size(); ++k) {
    if (c[k] > below) out += fmt::format("{}{} {:.3g}", out.empty() ? "" : ", ", impl_->names[k], c[k] - below);
    below = c[k];
  }
  return out;
}

}  // namespace trainer
