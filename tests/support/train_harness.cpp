// Equivalence-test harness (see train_harness.h).
#include "tests/support/train_harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "app/engine/trainer.h"
#include "model/param_table.h"
#include "tests/support/test_util.h"

namespace trainer::testing {

void write_token_shard(const std::string& path, const std::vector<int>& tokens) {
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = int32_t(tokens.size());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  std::fwrite(header.data(), 4, header.size(), f);
  for (int t : tokens) {
    uint16_t v = uint16_t(t);
    std::fwrite(&v, 2, 1, f);
  }
  std::fclose(f);
}

std::string make_synthetic_shards(Comm& world, const std::string& dir, int vocab_size, int n_tokens) {
  if (world.rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (int shard = 0; shard < 2; ++shard) {
      std::vector<int> tokens(n_tokens);
      uint64_t x = 12345 + uint64_t(shard);
      for (int i = 0; i < n_tokens; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        // Mostly a counting pattern (learnable), sometimes noise.
        tokens[i] = (x >> 60) < 3 ? int((x >> 33) % uint64_t(vocab_size)) : (i * 7 + shard) % vocab_size;
      }
      write_token_shard(dir + "/train_" + std::to_string(shard) + ".bin", tokens);
    }
  }
  world.barrier();
  return dir + "/train_*.bin";
}

TinyLayout tiny_layout(ModelArch arch, int data, int tensor, int pipeline, int zero) {
  TinyLayout l;
  l.arch = arch;
  l.data = data;
  l.tensor = tensor;
  l.pipeline = pipeline;
  l.zero = zero;
  return l;
}

Recipe tiny_recipe(const std::string& train_glob, const TinyLayout& l, int accum) {
  Recipe r;
  r.path = "<test>";
  r.model.n_layer = l.n_layer;
  r.model.n_head = 4;
  r.model.d_model = 32;
  r.model.vocab_size = 97;
  r.model.seq_len = 16;
  if (l.arch == llama_family().arch) {
    r.model.arch = llama_family().arch;
    r.model.n_head = 8;
    r.model.n_kv_head = 4;
    r.model.ffn_dim = 48;
    r.model.tie_embeddings = false;
    r.model.qk_norm = true;
  }
  r.parallel.data = l.data;
  r.parallel.tensor = l.tensor;
  r.parallel.pipeline = l.pipeline;
  r.parallel.zero = l.zero;
  r.parallel.schedule = l.schedule;
  r.parallel.virtual_stages = l.virtual_stages;
  r.parallel.sequence_parallel = l.sequence_parallel;
  r.parallel.bucket_mb = 0.01;
  r.parallel.timeout_s = 120;
  r.train.device = DeviceChoice::cpu;
  r.train.precision = PrecisionChoice::fp32;
  r.train.micro_batch = 2;
  r.train.seq_len = 16;
  r.train.global_batch = 2 * accum * l.data;
  r.train.steps = 10;
  r.train.seed = 7;
  r.train.optimizer.lr = 1e-3;
  // The key bias has an exactly zero gradient (softmax ignores a per-row shift), so its
  // computed gradient is pure rounding noise, which AdamW with eps 1e-8 turns into full-size
  // steps that differ with the summation order. eps 1e-6 keeps such noise-driven updates small
  // so the comparison measures the parallel computation, not Adam's noise amplification.
  r.train.optimizer.eps = 1e-6;
  r.train.lr_schedule.kind = LrKind::cosine;
  r.train.lr_schedule.warmup_steps = 2;
  r.data.train = single_source(train_glob);
  r.data.tokenizer = "byte";
  r.eval.every = 0;
  r.log.every = 1;
  return r;
}

Generated train_and_generate(const Recipe& recipe, Comm& world, int steps, const std::vector<int32_t>& prompt,
                             int tokens, Decoding decoding) {
  Trainer t(recipe, world, 0);
  for (int i = 0; i < steps; ++i) t.train_step();
  Generated g;
  GenerateOptions o;
  o.tokens = tokens;
  o.temperature = 0;
  o.decoding = decoding;
  o.on_logits = [&](const std::vector<float>& row) { g.logits.push_back(row); };
  g.tokens = t.generate(prompt, o);
  return g;
}

double max_logit_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                      int count) {
  const size_t rows = count < 0 ? std::max(a.size(), b.size()) : size_t(count);
  if (a.size() < rows || b.size() < rows) return std::numeric_limits<double>::infinity();
  double diff = 0, scale = 0;
  for (size_t r = 0; r < rows; ++r) {
    if (a[r].size() != b[r].size()) return std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < a[r].size(); ++i) {
      diff = std::max(diff, std::fabs(double(a[r][i]) - double(b[r][i])));
      scale = std::max(scale, std::fabs(double(b[r][i])));
    }
  }
  return diff / std::max(scale, 1e-30);
}

RunOutput run_recipe(const Recipe& recipe, Comm& world, int steps) {
  RunOutput out;
  Trainer t(recipe, world, 0);
  for (int i = 0; i < steps; ++i) {
    StepResult r = t.train_step();
    out.losses.push_back(r.loss);
    out.grad_norms.push_back(r.grad_norm);
  }
  const StageLayout& layout = t.layout();
  const auto& table = layout.table();
  std::map<std::string, std::vector<float>> lo, hi;
  for (const ParamSpec& spec : table) {
    lo[spec.name].assign(spec.numel(), std::numeric_limits<float>::infinity());
    hi[spec.name].assign(spec.numel(), -std::numeric_limits<float>::infinity());
  }
  for (const LocalParam& p : layout.params()) {
    std::vector<float> values = t.store().local_values(p);
    const std::string& name = table[p.spec].name;
    int64_t pos = 0;
    for (const Range& r : p.runs)
      for (int64_t g = r.begin; g < r.end; ++g, ++pos) {
        lo[name][g] = std::min(lo[name][g], values[pos]);
        hi[name][g] = std::max(hi[name][g], values[pos]);
      }
  }
  // Element-wise min and max over every rank's copy: equal when all replicas agree.
  for (const ParamSpec& spec : table) {
    auto& l = lo[spec.name];
    auto& h = hi[spec.name];
    for (auto& v : l) v = -v;
    world.all_reduce(make_tensor(l.data(), DType::f32, Device::cpu, {int64_t(l.size())}), ReduceOp::max);
    for (auto& v : l) v = -v;
    world.all_reduce(make_tensor(h.data(), DType::f32, Device::cpu, {int64_t(h.size())}), ReduceOp::max);
    for (size_t i = 0; i < h.size(); ++i)
      if (!(l[i] == h[i]) || !std::isfinite(h[i])) out.replicas_identical = false;
    out.weights[spec.name] = h;
  }
  return out;
}

double max_weight_diff(const std::map<std::string, std::vector<float>>& a,
                       const std::map<std::string, std::vector<float>>& b, std::string* where) {
  double worst = 0;
  for (const auto& [name, va] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.size() != va.size()) {
      if (where) *where = name + " (missing or wrong size)";
      return INFINITY;
    }
    double diff2 = 0, ref2 = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      double d = double(va[i]) - double(it->second[i]);
      diff2 += d * d;
      ref2 += double(it->second[i]) * double(it->second[i]);
    }
    double rel = std::sqrt(diff2) / std::max(std::sqrt(ref2), 1e-12);
    if (is_worse(rel, worst)) {
      worst = rel;
      if (where) *where = name;
    }
  }
  return worst;
}

void check_matches_reference(const RunOutput& out, const RunOutput& ref) {
  REQUIRE(out.losses.size() == ref.losses.size());
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    CAPTURE(s);
    CHECK(std::fabs(out.losses[s] - ref.losses[s]) <= 1e-5 * std::fabs(ref.losses[s]));
  }
  CHECK(out.replicas_identical);
  std::string where;
  double diff = max_weight_diff(out.weights, ref.weights, &where);
  CAPTURE(where);
  MESSAGE("largest relative weight difference " << diff << " in " << where);
  CHECK(diff <= 1e-5);
}

}  // namespace trainer::testing
