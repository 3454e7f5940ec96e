// Packed equals separate: a batch of packed documents trained under the document mask with
// positions restarting per document gives each document the loss and the gradients it gets
// alone (gpt2's learned positions and llama's rotary ones with grouped k/v heads, two rows
// packed differently, recompute none and block). Also the document layout itself: starts at
// each start token or after each end token, the row's first tokens a document of their own.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "model/documents.h"
#include "model/gpt_stage.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/mpi_comm.h"
#include "tests/support/ensure_mpi.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

namespace {

constexpr int32_t kStart = 0;  // the start token of the packed rows below

GptConfig family_config(ModelArch arch) {
  GptConfig c = testing::gpt_config(2, 4, 16, 37, 40, 16);
  c.arch = arch;
  if (arch == llama_family().arch) {
    c.n_kv_head = 2;
    c.ffn_dim = 24;
    c.norm_eps = 1e-6f;
    c.rope_theta = 10000.0f;
  }
  return c;
}

// One forward and backward of B rows of T tokens; the loss sum and every gradient.
struct Pass {
  double loss = 0;
  std::vector<float> grads;
};

Pass run(const GptConfig& c, int B, int T, const std::vector<int32_t>& in, const std::vector<int32_t>& tg,
         const DocumentOptions& docs, Recompute recompute) {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  MpiComm self(MPI_COMM_SELF, "self", 60);
  StageLayout layout(c, LayoutOptions{});
  ParamStore store(layout, *backend, self, nullptr, zero_policy(0), 1.0);
  store.init_random(7);
  StageOptions o;
  o.micro_batch = B;
  o.seq_len = T;
  o.recompute = recompute;
  o.dloss = 1.0f;  // the gradient of the loss sum, so that separate runs add up
  o.documents = docs;
  GptStage stage(layout, store, *backend, nullptr, o);
  store.zero_grads();
  store.begin_micro(true);
  stage.set_batch(0, 0, in.data(), tg.data());
  stage.forward(0, 0, StageMode::train);
  stage.backward(0, 0);
  store.finish_grads();
  Pass p;
  p.loss = stage.take_loss_sum();
  for (int u = 0; u < int(layout.units().size()); ++u) {
    const Tensor g = store.grads(u);
    p.grads.insert(p.grads.end(), g.ptr<float>(), g.ptr<float>() + g.numel());
  }
  return p;
}

std::vector<int32_t> random_tokens(size_t n, uint64_t seed, int32_t vocab) {
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    out[i] = 1 + int32_t((seed >> 33) % uint64_t(vocab - 1));  // never the start token
  }
  return out;
}

}  // namespace

TEST_CASE("documents: starts at each start token or after each end token, from 0") {
  const std::vector<int32_t> row = {5, 6, 0, 7, 8, 0, 0, 9};
  std::vector<int32_t> start(row.size()), pos(row.size());
  DocumentOptions o;
  o.mask = AttentionMask::document;
  o.positions = PositionReset::per_document;
  o.token = 0;
  document_layout(row.data(), 1, int64_t(row.size()), o, start.data(), pos.data());
  CHECK(start == std::vector<int32_t>{0, 0, 2, 2, 2, 5, 6, 6});
  CHECK(pos == std::vector<int32_t>{0, 1, 0, 1, 2, 0, 0, 1});
  o.boundary = DocumentBoundary::ends;
  document_layout(row.data(), 1, int64_t(row.size()), o, start.data(), pos.data());
  CHECK(start == std::vector<int32_t>{0, 0, 0, 3, 3, 3, 6, 7});
  CHECK(pos == std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0, 0});
  o.positions = PositionReset::off;
  document_layout(row.data(), 1, int64_t(row.size()), o, start.data(), pos.data());
  CHECK(pos == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("packed documents under the document mask give each document its loss and gradients alone") {
  testing::ensure_mpi();
  const int T = 16;
  // Two rows packed differently: documents [0, 5), [5, 9), [9, 16) and [0, 3), [3, 16).
  const std::vector<std::vector<int>> starts = {{0, 5, 9}, {0, 3}};
  for (ModelArch arch : {gpt2_family().arch, llama_family().arch}) {
    for (Recompute recompute : {Recompute::none, Recompute::block}) {
      const std::string what = std::string(model_arch_name(arch)) + ", recompute " + recompute_name(recompute);
      CAPTURE(what);
      const GptConfig c = family_config(arch);
      std::vector<int32_t> in = random_tokens(2 * T, 3, c.vocab_size), tg = random_tokens(2 * T, 9, c.vocab_size);
      for (size_t b = 0; b < starts.size(); ++b)
        for (int s : starts[b]) in[b * T + size_t(s)] = kStart;
      DocumentOptions docs;
      docs.mask = AttentionMask::document;
      docs.positions = PositionReset::per_document;
      docs.token = kStart;
      const Pass packed = run(c, 2, T, in, tg, docs, recompute);

      double loss = 0;
      std::vector<double> grads(packed.grads.size(), 0.0);
      for (size_t b = 0; b < starts.size(); ++b) {
        for (size_t k = 0; k < starts[b].size(); ++k) {
          const int s = starts[b][k], e = k + 1 < starts[b].size() ? starts[b][k + 1] : T;
          const std::vector<int32_t> doc_in(in.begin() + long(b * T) + s, in.begin() + long(b * T) + e);
          const std::vector<int32_t> doc_tg(tg.begin() + long(b * T) + s, tg.begin() + long(b * T) + e);
          const Pass alone = run(c, 1, e - s, doc_in, doc_tg, DocumentOptions{}, recompute);
          loss += alone.loss;
          for (size_t i = 0; i < grads.size(); ++i) grads[i] += alone.grads[i];
        }
      }
      CHECK(std::fabs(packed.loss - loss) <= 1e-5 * std::fabs(loss));
      double worst = 0, scale = 0;
      for (size_t i = 0; i < grads.size(); ++i) {
        worst = std::max(worst, std::fabs(double(packed.grads[i]) - grads[i]));
        scale = std::max(scale, std::fabs(grads[i]));
      }
      CAPTURE(worst);
      CAPTURE(scale);
      CHECK(worst <= 1e-5 * scale);
      // Without the mask the documents see each other: the control that the check can fail.
      const Pass causal = run(c, 2, T, in, tg, DocumentOptions{}, recompute);
      double apart = 0;
      for (size_t i = 0; i < grads.size(); ++i) apart = std::max(apart, std::fabs(double(causal.grads[i]) - grads[i]));
      CHECK(apart > 1e-3 * scale);
    }
  }
}
