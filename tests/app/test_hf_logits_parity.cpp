// Logits parity of imported Hugging Face folders: scripts/reference/hf_folder_torch.py writes
// an HF folder (config.json + model.safetensors, its own writer) with random weights and the
// logits of the independent PyTorch references (llama_torch.py, gpt2_torch.py) on a fixed
// token sequence; the trainer imports the folder through model.init_from and its full forward
// (Trainer::forward_logits) gives the same logits at every position to 1e-5 of the largest
// (fp32). Variants: llama with grouped k/v heads and an untied head (F32); llama with a tied
// head and Llama 3.1 rope scaling (BF16); gpt2 (F32); gpt2 as GPT2LMHeadModel saves it, with
// "transformer."-prefixed names, the attention-mask buffers and the tied lm_head.weight
// repeated (F16). Each variant then shows that the comparison can fail: the weights with
// llama's q/k rows in Meta's interleaved layout (the permutation an importer must not get
// wrong), or a gpt2 Conv1D weight loaded without its transpose, give logits far off.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "app/engine/trainer.h"
#include "parallel/mpi_comm.h"
#include "tests/app/torch_parity_util.h"
#include "tests/support/ensure_mpi.h"
#include "tests/support/test_util.h"

namespace trainer::testing {
namespace {

constexpr double kTolerance = 1e-5;

struct Variant {
  const char* name;
  ModelArch arch;
  const char* dtype;   // F32, BF16, F16
  const char* prefix;  // gpt2: "" or "transformer."
  bool tied;           // llama: tie_word_embeddings
  bool rope_scaled;    // llama: Llama 3.1 rope scaling
};

// 2 layers, d_model 64, 4 heads, a vocabulary of 100 padded to 128, context 32.
Recipe recipe_for(const Variant& v, const std::string& folder) {
  Recipe r;
  r.path = "<hf logits parity>";
  r.model.arch = v.arch;
  r.model.n_layer = 2;
  r.model.n_head = 4;
  r.model.d_model = 64;
  r.model.vocab_size = 100;
  r.model.vocab_multiple = 64;
  r.model.seq_len = 32;
  r.model.init_from = folder;
  if (v.arch == llama_family().arch) {
    r.model.n_kv_head = 2;
    r.model.ffn_dim = 96;
    r.model.norm_eps = 1e-5f;
    r.model.rope_theta = 500.0f;
    r.model.tie_embeddings = v.tied;
    if (v.rope_scaled) r.model.rope_scaling = RopeScalingConfig{8.0f, 1.0f, 4.0f, 16};
  }
  r.train.device = DeviceChoice::cpu;
  r.train.precision = PrecisionChoice::fp32;
  r.train.micro_batch = 1;
  r.train.seq_len = 32;
  r.train.global_batch = 1;
  r.data.tokenizer = "byte";
  r.eval.every = 0;
  return r;
}

std::string spec_json(const Variant& v, const ModelConfig& m, const std::vector<int32_t>& tokens,
                      const std::string& dir) {
  std::ostringstream s;
  s.precision(17);
  s << "{\"family\": \"" << (v.arch == llama_family().arch ? "llama" : "gpt2") << "\", \"config\": {\"n_layer\": "
    << m.n_layer << ", \"n_head\": " << m.n_head << ", \"n_kv_head\": " << m.n_kv_head << ", \"d_model\": " << m.d_model
    << ", \"ffn_dim\": " << m.ffn_dim << ", \"vocab_size\": " << m.vocab_size << ", \"max_seq_len\": " << m.seq_len
    << ", \"norm_eps\": " << m.norm_eps << ", \"rope_theta\": " << m.rope_theta << ", \"rope_scaling\": ";
  if (v.rope_scaled)
    s << "{\"factor\": " << m.rope_scaling.factor << ", \"low_freq_factor\": " << m.rope_scaling.low_freq_factor
      << ", \"high_freq_factor\": " << m.rope_scaling.high_freq_factor
      << ", \"original_context\": " << m.rope_scaling.original_context << "}";
  else
    s << "null";
  s << ", \"tie_embeddings\": " << (v.tied ? "true" : "false") << "}, \"dtype\": \"" << v.dtype << "\", \"prefix\": \""
    << v.prefix << "\", \"lm_head\": " << (std::string(v.prefix).empty() ? "false" : "true")
    << ", \"seed\": 5, \"tokens\": [";
  for (size_t i = 0; i < tokens.size(); ++i) s << (i ? ", " : "") << tokens[i];
  s << "], \"dir\": \"" << dir << "/hf\", \"out_logits\": \"" << dir << "/torch_logits.bin\"}\n";
  return s.str();
}

// max |a - b| / max |b| over every position and vocabulary entry.
double logits_diff(const std::vector<std::vector<float>>& ours, const std::vector<float>& torch, size_t vocab) {
  REQUIRE(ours.size() * vocab == torch.size());
  double diff = 0, scale = 0;
  for (size_t t = 0; t < ours.size(); ++t) {
    REQUIRE(ours[t].size() == vocab);
    for (size_t i = 0; i < vocab; ++i) {
      const double want = torch[t * vocab + i];
      diff = std::max(diff, std::fabs(double(ours[t][i]) - want));
      scale = std::max(scale, std::fabs(want));
    }
  }
  return diff / std::max(scale, 1e-30);
}

// The row order of Meta's checkpoints for each head of q or k (pairs interleaved) applied to
// ours (the rotate-half layout): (n_heads * D, C) rows r = h * D + j.
void interleave_heads(std::vector<float>& w, int64_t rows, int64_t cols, int head_dim) {
  const std::vector<float> src = w;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t h = r / head_dim, j = r % head_dim, half = head_dim / 2;
    const int64_t from = h * head_dim + (j % 2 == 0 ? j / 2 : half + j / 2);
    std::copy(src.begin() + from * cols, src.begin() + (from + 1) * cols, w.begin() + r * cols);
  }
}

void run_variant(const Variant& v) {
  const std::string name = v.name;
  CAPTURE(name);
  ensure_mpi();
  MpiComm world(MPI_COMM_SELF, "self", 120);
  const std::string dir = scratch_dir(std::string("hf_logits_parity_") + v.name);
  Recipe recipe = recipe_for(v, dir + "/hf");
  std::vector<int32_t> tokens;
  for (int i = 0; i < 24; ++i) tokens.push_back(int32_t((i * 37 + 5) % recipe.model.vocab_size));

  write_text_file(dir + "/spec.json", spec_json(v, recipe.model, tokens, dir));
  const RunResult run = run_command("mkdir -p " + dir + "/hf && OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 " +
                                    source_dir() + "/scripts/reference/hf_folder_torch.py " + dir + "/spec.json");
  REQUIRE_MESSAGE(run.exit_code == 0, run.output);
  std::vector<float> torch_logits(tokens.size() * size_t(recipe.model.vocab_size));
  {
    std::ifstream f(dir + "/torch_logits.bin", std::ios::binary);
    f.read(reinterpret_cast<char*>(torch_logits.data()), std::streamsize(torch_logits.size() * 4));
    REQUIRE(f.good());
  }

  Trainer trainer(recipe, world, 0, DataNeed::none);
  const size_t V = size_t(recipe.model.vocab_size);
  const double diff = logits_diff(trainer.forward_logits(tokens), torch_logits, V);
  CHECK_MESSAGE(diff <= kTolerance, name << ": logits differ from torch's by " << diff << " of the largest");
  MESSAGE(name << ": logits within " << diff << " of torch's");

  // The same comparison catches a wrong layout: q/k rows interleaved, or a Conv1D weight
  // left untransposed (square, so no shape check would notice).
  Weights w = gather_weights(trainer);
  if (v.arch == llama_family().arch) {
    const int D = recipe.model.d_model / recipe.model.n_head;
    for (int l = 0; l < recipe.model.n_layer; ++l)
      for (const char* kind : {"q_proj", "k_proj"}) {
        std::vector<float>& t = w.at("model.layers." + std::to_string(l) + ".self_attn." + kind + ".weight");
        interleave_heads(t, int64_t(t.size()) / recipe.model.d_model, recipe.model.d_model, D);
      }
  } else {
    std::vector<float>& t = w.at("h.0.attn.c_proj.weight");
    const std::vector<float> src = t;
    const size_t C = size_t(recipe.model.d_model);
    for (size_t r = 0; r < C; ++r)
      for (size_t c = 0; c < C; ++c) t[r * C + c] = src[c * C + r];
  }
  trainer.store().load([&](const ParamSpec& spec, Range r, float* out) {
    const std::vector<float>& src = w.at(spec.name);
    std::copy(src.begin() + r.begin, src.begin() + r.end, out);
  });
  const double wrong = logits_diff(trainer.forward_logits(tokens), torch_logits, V);
  CHECK_MESSAGE(wrong > 100 * kTolerance, name << ": a wrong layout is only " << wrong << " off");
  MESSAGE(name << ": with the wrong layout " << wrong);
}

TEST_CASE("hf logits parity: llama, grouped k/v heads, untied head, F32") {
  run_variant({"llama_gqa_f32", llama_family().arch, "F32", "", false, false});
}

TEST_CASE("hf logits parity: llama, tied head, Llama 3.1 rope scaling, BF16") {
  run_variant({"llama_tied_scaled_bf16", llama_family().arch, "BF16", "", true, true});
}

TEST_CASE("hf logits parity: gpt2, F32") { run_variant({"gpt2_f32", gpt2_family().arch, "F32", "", true, false}); }

TEST_CASE("hf logits parity: gpt2 as GPT2LMHeadModel saves it, transformer. names, F16") {
  run_variant({"gpt2_prefixed_f16", gpt2_family().arch, "F16", "transformer.", true, false});
}

}  // namespace
}  // namespace trainer::testing
