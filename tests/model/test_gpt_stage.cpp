// Whole-model checks on one process: finite-difference gradients of a 2-layer model on a
// sample of parameters, identical gradients with and without activation recomputation (and
// less activation memory with it) and with the backward split into its input and weight
// passes (zero_bubble's B and W, gpt2 and llama), and a tiny model overfitting one batch.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "model/gpt_stage.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/mpi_comm.h"
#include "tests/support/ensure_mpi.h"
#include "tests/support/test_util.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

namespace {

// A vocabulary of 37 padded to 40: the padding must stay out of the loss.
GptConfig tiny_config() { return testing::gpt_config(2, 2, 16, 37, 40, 8); }

struct Model {
  Model(const GptConfig& c, int batch, int seq, Recompute recompute, uint64_t seed,
        BackwardSplit split = BackwardSplit::whole)
      : backend(make_cpu_backend()), self(MPI_COMM_SELF, "self", 60), layout(c, LayoutOptions{}),
        store(layout, *backend, self, nullptr, zero_policy(0), 1.0), B(batch), T(seq), stage_split(split) {
    store.init_random(seed);
    StageOptions o;
    o.micro_batch = B;
    o.seq_len = T;
    o.recompute = recompute;
    o.dloss = 1.0f / float(B * T);
    o.split = split;
    stage = std::make_unique<GptStage>(layout, store, *backend, nullptr, o);
  }
  double loss(const std::vector<int32_t>& in, const std::vector<int32_t>& tg) {
    stage->set_batch(0, 0, in.data(), tg.data());
    stage->forward(0, 0, StageMode::eval);
    return stage->take_loss_sum() / double(B * T);
  }
  double train_pass(const std::vector<int32_t>& in, const std::vector<int32_t>& tg) {
    store.zero_grads();
    store.begin_micro(true);
    stage->set_batch(0, 0, in.data(), tg.data());
    stage->forward(0, 0, StageMode::train);
    stage->backward(0, 0);
    if (is_split()) stage->backward_weight(0, 0);
    store.finish_grads();
    return stage->take_loss_sum() / double(B * T);
  }
  // Host copy of all gradients, unit by unit.
  std::vector<float> grads() {
    std::vector<float> out;
    for (int u = 0; u < int(layout.units().size()); ++u) {
      Tensor g = store.grads(u);
      const float* p = g.ptr<float>();
      out.insert(out.end(), p, p + g.numel());
    }
    return out;
  }
  std::unique_ptr<Backend> backend;
  MpiComm self;
  StageLayout layout;
  ParamStore store;
  std::unique_ptr<GptStage> stage;
  int B, T;
  bool is_split() const { return stage_split == BackwardSplit::input_then_weight; }
  BackwardSplit stage_split = BackwardSplit::whole;
};

void batch(const GptConfig& c, int B, int T, uint64_t seed, std::vector<int32_t>& in, std::vector<int32_t>& tg) {
  in.resize(size_t(B) * T);
  tg.resize(size_t(B) * T);
  uint64_t x = seed;
  for (size_t i = 0; i < in.size(); ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    in[i] = int32_t((x >> 33) % uint64_t(c.vocab_size));
    tg[i] = int32_t((x >> 17) % uint64_t(c.vocab_size));
  }
}

}  // namespace

TEST_CASE("2-layer model: gradients match central finite differences") {
  testing::ensure_mpi();
  const GptConfig c = tiny_config();
  Model m(c, 2, 5, Recompute::none, 11);
  std::vector<int32_t> in, tg;
  batch(c, 2, 5, 3, in, tg);
  m.train_pass(in, tg);
  int checked = 0;
  for (int u = 0; u < int(m.layout.units().size()); ++u) {
    Tensor params = m.store.acquire(u);
    Tensor grads = m.store.grads(u);
    for (int pi : m.layout.units()[u].params) {
      const LocalParam& p = m.layout.params()[pi];
      const LocalUnit& unit = m.layout.units()[u];
      // A few elements spread over the tensor.
      for (int64_t k : {int64_t(0), p.numel / 3, p.numel - 1}) {
        int64_t at = p.offset - unit.offset + k;
        float* w = params.ptr<float>() + at;
        const float saved = *w;
        const float h = 1e-2f;
        *w = saved + h;
        double up = m.loss(in, tg);
        *w = saved - h;
        double down = m.loss(in, tg);
        *w = saved;
        double fd = (up - down) / (2.0 * h);
        double g = grads.ptr<float>()[at];
        CAPTURE(m.layout.spec(p).name);
        CAPTURE(k);
        CHECK(std::fabs(fd - g) <= 2e-3 + 2e-2 * std::fabs(g));
        ++checked;
      }
    }
    m.store.release(u);
  }
  CHECK(checked > 60);
}

TEST_CASE("recomputation gives identical gradients and saves activation memory") {
  testing::ensure_mpi();
  GptConfig c = tiny_config();
  std::vector<int32_t> in, tg;
  batch(c, 2, 8, 5, in, tg);
  Model none(c, 2, 8, Recompute::none, 3), gelu(c, 2, 8, Recompute::gelu, 3), block(c, 2, 8, Recompute::block, 3);
  double l0 = none.train_pass(in, tg), l1 = gelu.train_pass(in, tg), l2 = block.train_pass(in, tg);
  CHECK(l0 == l1);
  CHECK(l0 == l2);
  std::vector<float> g0 = none.grads(), g1 = gelu.grads(), g2 = block.grads();
  CHECK(g0 == g1);
  CHECK(g0 == g2);
  ActivationMemory a0 = none.stage->activation_memory(), a1 = gelu.stage->activation_memory(),
                   a2 = block.stage->activation_memory();
  CHECK(a1.per_slot < a0.per_slot);
  CHECK(a2.per_slot < a1.per_slot);
}

TEST_CASE("a backward split into input and weight passes gives identical gradients, gpt2 and llama") {
  testing::ensure_mpi();
  GptConfig llama = tiny_config();
  llama.arch = llama_family().arch;
  llama.n_kv_head = 1;
  llama.ffn_dim = 24;
  llama.tie = TiedEmbeddings::untied;
  llama.qk_norm = QkNorm::on;
  for (const GptConfig& c : {tiny_config(), llama}) {
    CAPTURE(int(c.arch));
    std::vector<int32_t> in, tg;
    batch(c, 2, 8, 5, in, tg);
    Model whole(c, 2, 8, Recompute::none, 3), split(c, 2, 8, Recompute::none, 3, BackwardSplit::input_then_weight);
    CHECK(whole.train_pass(in, tg) == split.train_pass(in, tg));
    CHECK(whole.grads() == split.grads());  // the same products in the same order: bitwise
    // The split keeps each block's output gradients from B to W.
    CHECK(split.stage->activation_memory().per_slot > whole.stage->activation_memory().per_slot);
  }
  CHECK_THROWS(Model(tiny_config(), 2, 8, Recompute::gelu, 3, BackwardSplit::input_then_weight));
}

TEST_CASE("a tiny model overfits one batch") {
  testing::ensure_mpi();
  GptConfig c = tiny_config();
  c.d_model = 32;
  Model m(c, 2, 8, Recompute::none, 9);
  std::vector<int32_t> in, tg;
  batch(c, 2, 8, 17, in, tg);
  double first = 0, last = 0;
  for (int step = 1; step <= 300; ++step) {
    last = m.train_pass(in, tg);
    if (step == 1) first = last;
    AdamWStep h;
    h.lr = 1e-2f;
    h.step = step;
    h.weight_decay = 0;
    m.store.optimizer_step(h);
  }
  MESSAGE("loss " << first << " -> " << last);
  CHECK(first > 3.0);
  CHECK(last < 0.05);
}
