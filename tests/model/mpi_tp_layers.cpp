// ranks: 2 4
// Every tensor-parallel layer against its unsharded version, outputs and gradients, without
// and with sequence parallelism:
// - a transformer block (column-parallel QKV and FC, row-parallel projections, f/g pairs);
// - the vocabulary-parallel embedding and the vocabulary-parallel head with cross-entropy
//   (a one-layer stage: loss and every parameter gradient).
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "model/gpt_block.h"
#include "model/gpt_stage.h"
#include "model/param_store.h"
#include "model/param_table.h"
#include "model/stage_layout.h"
#include "parallel/mpi_comm.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

namespace {

GptConfig tp_config() { return testing::gpt_config(1, 4, 32, 97, 128, 8); }

std::vector<float> random_vec(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

std::vector<float> take_runs(const std::vector<float>& full, const std::vector<Range>& runs) {
  std::vector<float> out;
  for (const Range& r : runs) out.insert(out.end(), full.begin() + r.begin, full.begin() + r.end);
  return out;
}

double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 1e-6;
  for (float x : b) scale = std::max(scale, double(std::fabs(x)));
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])) / scale);
  return a.size() == b.size() ? worst : INFINITY;
}

Tensor host(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return make_tensor(v.data(), DType::f32, Device::cpu, shape);
}

// One block's weights, gradients, activations and scratch for a given tensor degree.
struct BlockSetup {
  std::map<std::string, std::vector<float>> w, g;
  std::vector<std::vector<float>> store;
  BlockParams params, grads;
  BlockActs acts;
  BlockScratch scratch;

  Tensor alloc(std::initializer_list<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    store.emplace_back(size_t(n), NAN);
    return make_tensor(store.back().data(), DType::f32, Device::cpu, shape);
  }

  BlockSetup(const GptConfig& c, const std::map<std::string, std::vector<float>>& full, int tp_rank, int tp, int B,
             int T, SeqParallel sp) {
    store.reserve(64);
    const int64_t C = c.d_model, Cl = C / tp, N = int64_t(B) * T, Hl = c.n_head / tp;
    const int64_t Nr = sp == SeqParallel::on ? N / tp : N;
    for (const ParamSpec& s : param_table(c)) {
      if (s.unit != block_unit(c, 0)) continue;
      w[s.name] = take_runs(full.at(s.name), tp_runs(s, tp_rank, tp));
      g[s.name].assign(w[s.name].size(), 0.0f);
    }
    auto bp = [&](std::map<std::string, std::vector<float>>& m) {
      auto t = [&](const char* n, std::initializer_list<int64_t> shape) { return host(m["h.0." + std::string(n)], shape); };
      return BlockParams{t("ln_1.weight", {C}), t("ln_1.bias", {C}), t("attn.c_attn.weight", {3 * Cl, C}),
                         t("attn.c_attn.bias", {3 * Cl}), t("attn.c_proj.weight", {C, Cl}), t("attn.c_proj.bias", {C}),
                         t("ln_2.weight", {C}), t("ln_2.bias", {C}), t("mlp.c_fc.weight", {4 * Cl, C}),
                         t("mlp.c_fc.bias", {4 * Cl}), t("mlp.c_proj.weight", {C, 4 * Cl}), t("mlp.c_proj.bias", {C}),
                         Tensor{}, Tensor{}};
    };
    params = bp(w);
    grads = bp(g);
    acts.ln1 = alloc({N, C});
    acts.ln1_mean = alloc({Nr});
    acts.ln1_rstd = alloc({Nr});
    acts.qkv = alloc({N, 3 * Cl});
    acts.atty = alloc({N, Cl});
    acts.lse = alloc({B, Hl, T});
    acts.resid2 = alloc({Nr, C});
    acts.ln2 = alloc({N, C});
    acts.ln2_mean = alloc({Nr});
    acts.ln2_rstd = alloc({Nr});
    acts.fch = alloc({N, 4 * Cl});
    acts.fch_gelu = alloc({N, 4 * Cl});
    scratch.dln = alloc({N, C});
    scratch.datty = alloc({N, Cl});
    scratch.dfch = alloc({N, 4 * Cl});
    scratch.dqkv = alloc({N, 3 * Cl});
    if (sp == SeqParallel::on) {
      scratch.row_out = alloc({N, C});
      scratch.d_full = alloc({N, C});
      scratch.dln_local = alloc({Nr, C});
    }
  }
};

std::vector<float> rows_of(const std::vector<float>& v, int64_t cols, int rank, int parts) {
  const int64_t n = int64_t(v.size()) / cols / parts;
  return std::vector<float>(v.begin() + rank * n * cols, v.begin() + (rank + 1) * n * cols);
}

}  // namespace

TEST_CASE("tensor-parallel block equals the unsharded block, with and without sequence parallelism") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  const int tp = world.size(), rank = world.rank();
  const GptConfig c = tp_config();
  const int B = 2, T = 8, N = B * T, C = c.d_model;
  auto backend = make_cpu_backend();
  std::map<std::string, std::vector<float>> full;
  uint64_t seed = 1;
  for (const ParamSpec& s : param_table(c)) full[s.name] = random_vec(size_t(s.numel()), seed++, 0.2f);
  std::vector<float> x = random_vec(size_t(N) * C, 101, 1.0f), dout = random_vec(size_t(N) * C, 102, 1.0f);

  BlockSetup ref(c, full, 0, 1, B, T, SeqParallel::off);
  std::vector<float> out_ref(size_t(N) * C), dx_ref = dout;
  BlockContext ctx_ref{*backend, nullptr, 0, B, T, C, c.n_head, SeqParallel::off, NormKind::layernorm, 1e-5f, 0,
                       QkNorm::off, Tensor{}};
  block_forward(ctx_ref, ref.params, ref.acts, ref.scratch, host(x, {N, C}), host(out_ref, {N, C}));
  block_backward(ctx_ref, ref.params, ref.grads, ref.acts, ref.scratch, host(x, {N, C}), host(dx_ref, {N, C}),
                 Recompute::none, nullptr);

  for (SeqParallel sp : {SeqParallel::off, SeqParallel::on}) {
    CAPTURE(int(sp));
    const bool split = sp == SeqParallel::on;
    const int Nr = split ? N / tp : N;
    BlockSetup mine(c, full, rank, tp, B, T, sp);
    std::vector<float> in = split ? rows_of(x, C, rank, tp) : x;
    std::vector<float> out_tp(size_t(Nr) * C), dx_tp = split ? rows_of(dout, C, rank, tp) : dout;
    BlockContext ctx_tp{*backend, &world, rank, B, T, C, c.n_head / tp, sp, NormKind::layernorm, 1e-5f, 0,
                        QkNorm::off, Tensor{}};
    block_forward(ctx_tp, mine.params, mine.acts, mine.scratch, host(in, {Nr, C}), host(out_tp, {Nr, C}));
    CHECK(max_rel(out_tp, split ? rows_of(out_ref, C, rank, tp) : out_ref) < 1e-5);
    block_backward(ctx_tp, mine.params, mine.grads, mine.acts, mine.scratch, host(in, {Nr, C}), host(dx_tp, {Nr, C}),
                   Recompute::none, nullptr);
    CHECK(max_rel(dx_tp, split ? rows_of(dx_ref, C, rank, tp) : dx_ref) < 1e-5);
    for (const ParamSpec& s : param_table(c)) {
      if (s.unit != block_unit(c, 0)) continue;
      CAPTURE(s.name);
      std::vector<float>& got = mine.g[s.name];
      // Under sequence parallelism a replicated parameter's gradient covers this rank's rows.
      if (split && s.split == TpSplit::none)
        world.all_reduce(make_tensor(got.data(), DType::f32, Device::cpu, {int64_t(got.size())}), ReduceOp::sum);
      CHECK(max_rel(got, take_runs(ref.g[s.name], tp_runs(s, rank, tp))) < 1e-5);
    }
  }
}

TEST_CASE("vocabulary-parallel embedding and head equal the unsharded ones, with and without sequence parallelism") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  MpiComm self(MPI_COMM_SELF, "self", 60);
  const int tp = world.size(), rank = world.rank();
  const GptConfig c = tp_config();
  const int B = 2, T = 8;
  auto backend = make_cpu_backend();
  std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = int32_t((i * 37 + 5) % size_t(c.vocab_size));
    tg[i] = int32_t((i * 53 + 96) % size_t(c.vocab_size));  // includes ids in the last tp slice
  }
  struct Run {
    std::unique_ptr<StageLayout> layout;
    std::unique_ptr<ParamStore> store;
    std::unique_ptr<GptStage> stage;
    double loss = 0;
  };
  auto run = [&](Comm& comm, int tp_rank, int degree, SeqParallel sp) {
    Run r;
    LayoutOptions o;
    o.at.tp = tp_rank;
    o.dims.tensor = degree;
    r.layout = std::make_unique<StageLayout>(c, o);
    r.store = std::make_unique<ParamStore>(*r.layout, *backend, self, nullptr, zero_policy(0), 1.0);
    r.store->init_random(77);
    StageOptions so;
    so.micro_batch = B;
    so.seq_len = T;
    so.dloss = 1.0f / float(B * T);
    so.sequence_parallel = sp;
    if (sp == SeqParallel::on) r.store->set_tensor_partial_grads(&comm, TpPartialGrads::all_replicated);
    r.stage = std::make_unique<GptStage>(*r.layout, *r.store, *backend, degree > 1 ? &comm : nullptr, so);
    r.store->zero_grads();
    r.store->begin_micro(true);
    r.stage->set_batch(0, 0, in.data(), tg.data());
    r.stage->forward(0, 0, StageMode::train);
    r.stage->backward(0, 0);
    r.store->finish_grads();
    r.loss = r.stage->take_loss_sum();
    return r;
  };
  Run ref = run(self, 0, 1, SeqParallel::off);
  for (SeqParallel sp : {SeqParallel::off, SeqParallel::on}) {
    CAPTURE(int(sp));
    Run mine = run(world, rank, tp, sp);
    CHECK(std::fabs(mine.loss - ref.loss) <= 1e-5 * std::fabs(ref.loss));
    for (const LocalParam& p : mine.layout->params()) {
      const std::string& name = mine.layout->spec(p).name;
      CAPTURE(name);
      const LocalParam& q = ref.layout->params()[size_t(&p - mine.layout->params().data())];
      Tensor gm = mine.store->grads(p.unit), gr = ref.store->grads(q.unit);
      const LocalUnit& um = mine.layout->units()[p.unit];
      const LocalUnit& ur = ref.layout->units()[q.unit];
      std::vector<float> got(gm.ptr<float>() + (p.offset - um.offset), gm.ptr<float>() + (p.offset - um.offset) + p.numel);
      std::vector<float> all(gr.ptr<float>() + (q.offset - ur.offset), gr.ptr<float>() + (q.offset - ur.offset) + q.numel);
      CHECK(max_rel(got, take_runs(all, p.runs)) < 1e-5);
    }
  }
}
