// Parity with an independent PyTorch Llama (scripts/reference/llama_torch.py, Debian's
// python3-torch): the trainer's initial weights with every norm weight perturbed, written as
// raw tensors and loaded back through ParamStore::load; the same micro-batches (read through
// the trainer's own loader); 5 AdamW steps with accumulation, weight decay, clipping and a
// warm-up + cosine schedule. Variants: grouped-query attention with an untied head; Llama
// 3.1 rope scaling with a tied head; multi-query attention with qk_norm. Losses and gradient
// norms agree to 1e-5 relative at every step, final weights to 1e-5 in relative L2 per tensor.
#include <doctest/doctest.h>
#include <mpi.h>

#include <fstream>
#include <sstream>

#include "app/engine/options_from.h"
#include "app/engine/trainer.h"
#include "data/token_shard.h"
#include "parallel/mpi_comm.h"
#include "tests/app/torch_parity_util.h"
#include "tests/support/ensure_mpi.h"
#include "tests/support/test_util.h"

namespace trainer::testing {
namespace {

constexpr int kSteps = 5;

struct Variant {
  const char* name;
  int n_kv_head;
  bool tied;
  bool qk_norm;
  float rope_factor;  // 0: no scaling
};

// 2 layers, d_model 64, 4 query heads (head size 16), SwiGLU width 96, byte vocabulary padded
// to 320, sequences of 32. With rope scaling, original_context 16 and theta 500 put the
// wavelengths of the 8 frequencies on both sides of the two thresholds (16 and 4), so the
// scaled, the smoothed and the kept bands are all exercised.
Recipe llama_parity_recipe(const std::string& train_glob, const Variant& v) {
  Recipe r;
  r.path = "<llama parity>";
  r.model.arch = llama_family().arch;
  r.model.n_layer = 2;
  r.model.n_head = 4;
  r.model.n_kv_head = v.n_kv_head;
  r.model.d_model = 64;
  r.model.ffn_dim = 96;
  r.model.vocab_size = 257;
  r.model.vocab_multiple = 64;
  r.model.seq_len = 64;
  r.model.norm_eps = 1e-5f;
  r.model.tie_embeddings = v.tied;
  r.model.qk_norm = v.qk_norm;
  if (v.rope_factor > 0) {
    r.model.rope_theta = 500.0f;
    r.model.rope_scaling = RopeScalingConfig{v.rope_factor, 1.0f, 4.0f, 16};
  }
  r.train.device = DeviceChoice::cpu;
  r.train.precision = PrecisionChoice::fp32;
  r.train.micro_batch = 4;
  r.train.seq_len = 32;
  r.train.global_batch = 8;  // 2 micro-batches of accumulation
  r.train.steps = kSteps;
  r.train.seed = 4321;
  r.train.optimizer.lr = 3e-3;
  r.train.optimizer.eps = 1e-6;  // as for GPT-2: keeps Adam from amplifying rounding noise
  r.train.optimizer.weight_decay = 0.1;
  r.train.optimizer.grad_clip = 0.5;
  r.train.lr_schedule.kind = LrKind::cosine;
  r.train.lr_schedule.warmup_steps = 2;
  r.train.lr_schedule.min_lr_ratio = 0.1;
  r.data.train = single_source(train_glob);
  r.data.tokenizer = "byte";
  r.eval.every = 0;
  return r;
}

// The norm weights start at one; moved off it so that a norm applied with the wrong weight
// (or not at all) shows.
void perturb_norms(Weights& w) {
  uint64_t x = 11;
  for (auto& [name, values] : w) {
    if (name.find("norm") == std::string::npos) continue;
    for (float& v : values) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      v += 0.2f * (float((x >> 40) & 0xffff) / 65536.0f - 0.5f);
    }
  }
}

// Tensors in table order as raw f32, and their [[name, [shape]], ...] index as JSON.
std::string write_raw(const std::string& path, const std::vector<ParamSpec>& table, const Weights& w) {
  std::ofstream f(path, std::ios::binary);
  std::ostringstream names;
  names << "[";
  for (size_t i = 0; i < table.size(); ++i) {
    const std::vector<float>& v = w.at(table[i].name);
    f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
    names << (i ? ", " : "") << "[\"" << table[i].name << "\", [";
    for (size_t d = 0; d < table[i].shape.size(); ++d) names << (d ? ", " : "") << table[i].shape[d];
    names << "]]";
  }
  names << "]";
  REQUIRE(f.good());
  return names.str();
}

Weights read_raw(const std::string& path, const std::vector<ParamSpec>& table) {
  std::ifstream f(path, std::ios::binary);
  Weights w;
  for (const ParamSpec& s : table) {
    std::vector<float>& v = w[s.name];
    v.resize(size_t(s.numel()));
    f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
    REQUIRE_MESSAGE(f.good(), s.name);
  }
  return w;
}

void run_variant(const Variant& v) {
  ensure_mpi();
  MpiComm world(MPI_COMM_SELF, "self", 120);
  const std::string dir = scratch_dir(std::string("torch_parity_llama_") + v.name);
  write_shard(dir + "/train_0.bin", parity_tokens(2000), TokenWidth::u16);
  Recipe recipe = llama_parity_recipe(dir + "/train_*.bin", v);
  const GptConfig config = gpt_config_from(recipe);
  const std::vector<ParamSpec> table = param_table(config);

  Trainer trainer(recipe, world, 0);
  Weights init = gather_weights(trainer);
  perturb_norms(init);
  trainer.store().load([&](const ParamSpec& spec, Range r, float* out) {
    const std::vector<float>& src = init.at(spec.name);
    std::copy(src.begin() + r.begin, src.begin() + r.end, out);
  });
  REQUIRE(gather_weights(trainer) == init);
  const std::string names = write_raw(dir + "/init.bin", table, init);

  const int accum = recipe.grad_accum();
  const size_t BT = size_t(recipe.train.micro_batch) * size_t(recipe.train.seq_len);
  DataLoader& loader = *trainer.train_loader();
  const LoaderState start = loader.state();
  std::vector<int32_t> batches, in(BT), tg(BT);
  for (int i = 0; i < kSteps * accum; ++i) {
    loader.next(in.data(), tg.data());
    batches.insert(batches.end(), in.begin(), in.end());
    batches.insert(batches.end(), tg.begin(), tg.end());
  }
  loader.restore(start);
  {
    std::ofstream f(dir + "/batches.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(batches.data()), std::streamsize(batches.size() * 4));
    REQUIRE(f.good());
  }

  std::vector<StepResult> steps;
  for (int i = 0; i < kSteps; ++i) steps.push_back(trainer.train_step());
  const Weights trained = gather_weights(trainer);

  const OptimizerConfig& o = recipe.train.optimizer;
  const ModelConfig& m = recipe.model;
  std::ostringstream spec;
  spec.precision(17);
  spec << "{\"config\": {\"n_layer\": " << m.n_layer << ", \"n_head\": " << m.n_head
       << ", \"n_kv_head\": " << config.kv_heads() << ", \"d_model\": " << m.d_model << ", \"ffn_dim\": " << m.ffn_dim
       << ", \"vocab_size\": " << m.vocab_size << ", \"padded_vocab\": " << config.padded_vocab
       << ", \"norm_eps\": " << m.norm_eps << ", \"rope_theta\": " << m.rope_theta << ", \"rope_scaling\": ";
  if (v.rope_factor > 0)
    spec << "{\"factor\": " << m.rope_scaling.factor << ", \"low_freq_factor\": " << m.rope_scaling.low_freq_factor
         << ", \"high_freq_factor\": " << m.rope_scaling.high_freq_factor
         << ", \"original_context\": " << m.rope_scaling.original_context << "}";
  else
    spec << "null";
  spec << ", \"tie_embeddings\": " << (v.tied ? "true" : "false") << ", \"qk_norm\": " << (v.qk_norm ? "true" : "false")
       << "}, \"weights\": \"" << dir << "/init.bin\", \"weight_names\": " << names << ", \"batches\": \"" << dir
       << "/batches.bin\", \"steps\": " << kSteps << ", \"grad_accum\": " << accum
       << ", \"micro_batch\": " << recipe.train.micro_batch << ", \"seq_len\": " << recipe.train.seq_len
       << ", \"optimizer\": {\"lr\": " << o.lr << ", \"beta1\": " << o.beta1 << ", \"beta2\": " << o.beta2
       << ", \"eps\": " << o.eps << ", \"weight_decay\": " << o.weight_decay << ", \"grad_clip\": " << o.grad_clip
       << "}, \"lr_schedule\": {\"kind\": \"cosine\", \"warmup_steps\": " << recipe.train.lr_schedule.warmup_steps
       << ", \"total_steps\": " << recipe.train.steps << ", \"min_lr_ratio\": " << recipe.train.lr_schedule.min_lr_ratio
       << ", \"decay_fraction\": " << recipe.train.lr_schedule.decay_fraction << "}, \"out_losses\": \"" << dir
       << "/torch_losses.json\", \"out_weights\": \"" << dir << "/torch_final.bin\"}\n";
  write_text_file(dir + "/spec.json", spec.str());
  RunResult run = run_command("OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 " + source_dir() +
                              "/scripts/reference/llama_torch.py " + dir + "/spec.json");
  REQUIRE_MESSAGE(run.exit_code == 0, run.output);

  const std::string losses_json = read_text_file(dir + "/torch_losses.json");
  const std::vector<double> losses = json_numbers(losses_json, "losses");
  const std::vector<double> norms = json_numbers(losses_json, "grad_norms");
  REQUIRE(losses.size() == size_t(kSteps));
  REQUIRE(norms.size() == size_t(kSteps));
  int clipped = 0;
  for (int i = 0; i < kSteps; ++i) {
    const StepResult& s = steps[size_t(i)];
    CHECK_MESSAGE(std::fabs(s.loss - losses[size_t(i)]) <= 1e-5 * losses[size_t(i)],
                  std::string(v.name) << " step " << i + 1 << ": loss " << s.loss << " vs torch " << losses[size_t(i)]);
    CHECK_MESSAGE(std::fabs(s.grad_norm - norms[size_t(i)]) <= 1e-5 * norms[size_t(i)],
                  std::string(v.name) << " step " << i + 1 << ": grad norm " << s.grad_norm << " vs torch " << norms[size_t(i)]);
    clipped += norms[size_t(i)] > o.grad_clip ? 1 : 0;
  }
  CHECK(losses.back() < losses.front());
  CHECK(clipped > 0);

  const Weights torch_final = read_raw(dir + "/torch_final.bin", table);
  double worst = 0, moved_min = 1e30;
  std::string worst_name;
  for (const ParamSpec& s : table) {
    const double rel = relative_l2(trained.at(s.name), torch_final.at(s.name));
    CHECK_MESSAGE(rel <= 1e-5, std::string(v.name) << " " << s.name << ": relative L2 difference " << rel);
    if (is_worse(rel, worst)) {
      worst = rel;
      worst_name = s.name;
    }
    moved_min = std::min(moved_min, relative_l2(trained.at(s.name), init.at(s.name)));
  }
  CHECK(moved_min > 1e-3);
  MESSAGE(std::string(v.name) << ": worst weight difference " << worst << " (" << worst_name << "); smallest change " << moved_min);
}

TEST_CASE("torch parity llama: grouped-query attention, untied head") {
  run_variant({"gqa_untied", 2, false, false, 0.0f});
}

TEST_CASE("torch parity llama: Llama 3.1 rope scaling, tied head") { run_variant({"rope_scaled_tied", 4, true, false, 8.0f}); }

TEST_CASE("torch parity llama: multi-query attention with qk_norm") { run_variant({"mqa_qk_norm", 1, false, true, 0.0f}); }

}  // namespace
}  // namespace trainer::testing
