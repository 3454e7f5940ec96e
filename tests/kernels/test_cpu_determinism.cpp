// The CPU kernels give bit-identical results with 1 and with 2 OpenMP threads: every
// reduction (layernorm dweight/dbias, bias_backward, encoder_backward, sum_squares, the
// cross-entropy passes, attention's dK/dV, matmul's panels) is split independently of the thread count.
// Sizes are above the kernels' parallel thresholds and not multiples of the thread count.
#include <doctest/doctest.h>
#include <omp.h>

#include <cstring>
#include <map>
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

using Results = std::map<std::string, std::vector<float>>;

Results run_ops(Backend& be) {
  Results r;
  const int64_t N = 37, C = 1000;
  auto x = random_floats(N * C, 1, -2, 2), w = random_floats(C, 2), b = random_floats(C, 3);
  auto dout = random_floats(N * C, 4);
  std::vector<float> out(N * C), mean(N), rstd(N), dinp(N * C), dw(C, 0.5f), db(C, 0.25f);
  be.layernorm_forward(view(out, {N, C}), view(mean, {N}), view(rstd, {N}), view(x, {N, C}),
                       view(w, {C}), view(b, {C}));
  be.layernorm_backward(view(dinp, {N, C}), view(dw, {C}), view(db, {C}), view(dout, {N, C}),
                        view(x, {N, C}), view(w, {C}), view(mean, {N}), view(rstd, {N}),
                        Accumulate::overwrite);
  r["layernorm out"] = out;
  r["layernorm dinp"] = dinp;
  r["layernorm dweight"] = dw;
  r["layernorm dbias"] = db;

  std::vector<float> dbias(C, 0.0f);
  be.bias_backward(view(dbias, {C}), view(dout, {N, C}));
  r["bias_backward"] = dbias;

  const int64_t M = 300, K = 301, Nn = 600;  // 2 x 2 output panels, edges included
  auto a = random_floats(M * K, 5), bm = random_floats(Nn * K, 6);
  std::vector<float> prod(M * Nn), g(M * Nn);
  be.matmul(view(prod, {M, Nn}), view(a, {M, K}), view(bm, {Nn, K}), Transpose::none,
            Transpose::transpose, view(dbias, {Nn}), Accumulate::overwrite, view(g, {M, Nn}));
  r["matmul"] = prod;
  r["matmul gelu"] = g;
  // One panel by size, cut in two because of its depth; and 3 row panels made 4.
  for (const auto& shape : {std::vector<int64_t>{64, 256, 600}, std::vector<int64_t>{600, 200, 40}}) {
    const int64_t sm = shape[0], sn = shape[1], sk = shape[2];
    auto sa = random_floats(sk * sm, 16), sb = random_floats(sk * sn, 17);
    std::vector<float> sp(sm * sn);
    be.matmul(view(sp, {sm, sn}), view(sa, {sk, sm}), view(sb, {sk, sn}), Transpose::transpose, Transpose::none,
              Tensor{}, Accumulate::overwrite, Tensor{});
    r["matmul TN " + std::to_string(sm) + "x" + std::to_string(sn)] = sp;
  }

  const int64_t B = 2, T = 19, V = 50;
  auto tokens = random_ints(B * T, 0, int32_t(V), 7);
  auto edout = random_floats(B * T * C, 15);
  std::vector<float> dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
  be.encoder_backward(view(dwte, {V, C}), view(dwpe, {T, C}), view(edout, {B, T, C}),
                      view(tokens, {B, T}), 0);
  r["encoder dwte"] = dwte;
  r["encoder dwpe"] = dwpe;

  const int64_t n = 200001;
  auto big = random_floats(n, 8);
  const double ss = be.sum_squares(view(big, {n}));
  std::vector<float> ss_bits(2);
  std::memcpy(ss_bits.data(), &ss, sizeof ss);
  r["sum_squares"] = ss_bits;

  const int64_t Vl = 1024, valid = 1001;
  auto logits = random_floats(N * Vl, 9, -5, 5);
  auto targets = random_ints(N, 0, int32_t(valid), 10);
  std::vector<float> mx(N), se(N), tl(N), loss(N), dl(N * Vl);
  be.xent_max(view(mx, {N}), view(logits, {N, Vl}), valid);
  be.xent_sumexp(view(se, {N}), view(tl, {N}), view(logits, {N, Vl}), view(mx, {N}),
                 view(targets, {N}), 0, valid);
  be.xent_loss(view(loss, {N}), view(mx, {N}), view(se, {N}), view(tl, {N}));
  be.xent_backward(view(dl, {N, Vl}), view(logits, {N, Vl}), view(mx, {N}), view(se, {N}),
                   view(targets, {N}), 0, valid, 0.1f);
  r["xent sumexp"] = se;
  r["xent loss"] = loss;
  r["xent dlogits"] = dl;
  std::vector<float> fused = logits, fused_loss(N);
  be.xent_fused(view(fused_loss, {N}), view(fused, {N, Vl}), view(targets, {N}), valid, XentGrad::in_place, 0.1f);
  r["xent_fused loss"] = fused_loss;
  r["xent_fused dlogits"] = fused;

  const int64_t AB = 3, AT = 70, H = 3, D = 8, AC = H * D;
  auto qkv = random_floats(AB * AT * 3 * AC, 11, -2, 2), adout = random_floats(AB * AT * AC, 12);
  std::vector<float> aout(AB * AT * AC), lse(AB * H * AT), dqkv(qkv.size());
  be.attention_forward(view(aout, {AB, AT, AC}), view(lse, {AB, H, AT}),
                       view(qkv, {AB, AT, 3 * AC}), int(H));
  be.attention_backward(view(dqkv, {AB, AT, 3 * AC}), view(adout, {AB, AT, AC}),
                        view(qkv, {AB, AT, 3 * AC}), view(aout, {AB, AT, AC}),
                        view(lse, {AB, H, AT}), int(H));
  r["attention out"] = aout;
  r["attention lse"] = lse;
  r["attention dqkv"] = dqkv;

  auto p = random_floats(n, 13), grad = random_floats(n, 14);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  AdamWStep h;
  h.lr = 1e-3f;
  h.weight_decay = 0.1f;
  be.adamw(view(p, {n}), view(grad, {n}), view(m, {n}), view(v, {n}), Tensor{}, h);
  r["adamw"] = p;
  return r;
}

}  // namespace

TEST_CASE("cpu kernels: bit-identical results with 1 and 2 OpenMP threads") {
  auto be = make_cpu_backend();
  const int saved = omp_get_max_threads();
  omp_set_dynamic(0);
  omp_set_num_threads(1);
  const Results one = run_ops(*be);
  omp_set_num_threads(2);
  REQUIRE(omp_get_max_threads() == 2);
  const Results two = run_ops(*be);
  omp_set_num_threads(saved);
  for (const auto& entry : one) {
    const auto& name = entry.first;  // no structured binding: clang 14 cannot capture one
    const auto& values = entry.second;
    INFO(name);
    CHECK(bitwise_equal(values, two.at(name)));
  }
}
