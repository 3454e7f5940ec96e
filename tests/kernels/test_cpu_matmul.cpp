// CPU matmul and bias_backward: closed forms, fast path against the reference loops for every
// transpose/bias/accumulate/GELU combination on odd shapes, and the linear layer's backward
// (expressed through matmul and bias_backward) against central finite differences.
#include <doctest/doctest.h>

#include <array>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_matmul.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

Tensor none_tensor() { return Tensor{}; }

}  // namespace

TEST_CASE("cpu matmul: closed form with bias and accumulation") {
  auto be = make_cpu_backend();
  std::vector<float> a = {1, 2, 3, 4, 5, 6};        // (2,3)
  std::vector<float> b = {7, 8, 9, 10, 11, 12};     // (3,2)
  std::vector<float> bias = {1, -1};
  std::vector<float> out(4, 123.0f);
  be->matmul(view(out, {2, 2}), view(a, {2, 3}), view(b, {3, 2}), Transpose::none,
             Transpose::none, none_tensor(), Accumulate::overwrite, none_tensor());
  CHECK(out == std::vector<float>{58, 64, 139, 154});
  be->matmul(view(out, {2, 2}), view(a, {2, 3}), view(b, {3, 2}), Transpose::none,
             Transpose::none, view(bias, {2}), Accumulate::overwrite, none_tensor());
  CHECK(out == std::vector<float>{59, 63, 140, 153});
  be->matmul(view(out, {2, 2}), view(a, {2, 3}), view(b, {3, 2}), Transpose::none,
             Transpose::none, view(bias, {2}), Accumulate::add, none_tensor());
  CHECK(out == std::vector<float>{118, 126, 280, 306});
  // a^T: a stored (3,2) as the transpose of [[1,2,3],[4,5,6]]; b^T likewise.
  std::vector<float> at = {1, 4, 2, 5, 3, 6};
  std::vector<float> bt = {7, 9, 11, 8, 10, 12};
  be->matmul(view(out, {2, 2}), view(at, {3, 2}), view(bt, {2, 3}), Transpose::transpose,
             Transpose::transpose, none_tensor(), Accumulate::overwrite, none_tensor());
  CHECK(out == std::vector<float>{58, 64, 139, 154});
}

TEST_CASE("cpu matmul: gelu epilogue and K = 0") {
  auto be = make_cpu_backend();
  std::vector<float> a = {1, -2}, b = {0.5f, 1.5f}, out(4), g(4);  // (2,1) x (1,2)
  be->matmul(view(out, {2, 2}), view(a, {2, 1}), view(b, {1, 2}), Transpose::none,
             Transpose::none, none_tensor(), Accumulate::overwrite, view(g, {2, 2}));
  CHECK(out == std::vector<float>{0.5f, 1.5f, -1.0f, -3.0f});
  for (int i = 0; i < 4; ++i) CHECK(g[i] == doctest::Approx(ref::gelu<double>(out[i])).epsilon(1e-6));
  std::vector<float> bias = {2, 3};
  std::vector<float> o2(4, 9.0f);
  Tensor a0 = make_tensor(nullptr, DType::f32, Device::cpu, {2, 0});
  Tensor b0 = make_tensor(nullptr, DType::f32, Device::cpu, {0, 2});
  a0.data = a.data();  // defined but empty: only the shape matters
  b0.data = b.data();
  be->matmul(view(o2, {2, 2}), a0, b0, Transpose::none, Transpose::none, view(bias, {2}),
             Accumulate::overwrite, none_tensor());
  CHECK(o2 == std::vector<float>{2, 3, 2, 3});
}

TEST_CASE("cpu matmul: fast path matches the reference on odd shapes") {
  auto be = make_cpu_backend();
  struct Shape {
    int64_t M, N, K;
  };
  // The last shape spans 2 x 2 output panels of the fast path, edge panels included.
  const Shape shapes[] = {{1, 1, 1},     {1, 7, 13},    {37, 53, 19},
                          {5, 1000, 24}, {64, 129, 96}, {260, 530, 17}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (Transpose ta : {Transpose::none, Transpose::transpose}) {
      for (Transpose tb : {Transpose::none, Transpose::transpose}) {
        for (Accumulate mode : {Accumulate::overwrite, Accumulate::add}) {
          for (bool with_bias : {false, true}) {
            const bool with_gelu = mode == Accumulate::overwrite && with_bias;
            auto a = random_floats(size_t(s.M * s.K), ++seed);
            auto b = random_floats(size_t(s.K * s.N), ++seed);
            auto bias = random_floats(size_t(s.N), ++seed);
            auto out = random_floats(size_t(s.M * s.N), ++seed);
            auto want = out;
            std::vector<float> g(out.size()), want_g(out.size());
            Tensor ta_view = ta == Transpose::none ? view(a, {s.M, s.K}) : view(a, {s.K, s.M});
            Tensor tb_view = tb == Transpose::none ? view(b, {s.K, s.N}) : view(b, {s.N, s.K});
            be->matmul(view(out, {s.M, s.N}), ta_view, tb_view, ta, tb,
                       with_bias ? view(bias, {s.N}) : none_tensor(), mode,
                       with_gelu ? view(g, {s.M, s.N}) : none_tensor());
            ref::matmul<float>(want.data(), a.data(), b.data(), with_bias ? bias.data() : nullptr,
                               s.M, s.N, s.K, ta, tb, mode, with_gelu ? want_g.data() : nullptr);
            const std::string what = "M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                                     " K=" + std::to_string(s.K);
            check_close(out, want, 1e-5, 1e-6 * double(s.K + 1), what);
            if (with_gelu) check_close(g, want_g, 1e-5, 1e-6 * double(s.K + 1), what + " gelu");
          }
        }
      }
    }
  }
}

TEST_CASE("cpu matmul: a residual gives the bits of the product followed by add") {
  auto be = make_cpu_backend();
  uint64_t seed = 500;
  for (auto [M, N, K] : {std::array<int64_t, 3>{1, 1, 1}, {37, 53, 19}, {64, 129, 96}, {6, 5, 0}}) {
    for (bool with_bias : {false, true}) {
      CAPTURE(M);
      CAPTURE(with_bias);
      auto a = random_floats(size_t(M * K), ++seed), b = random_floats(size_t(N * K), ++seed);
      auto bias = random_floats(size_t(N), ++seed), residual = random_floats(size_t(M * N), ++seed);
      std::vector<float> fused(size_t(M * N), 7.0f), separate(size_t(M * N), -7.0f);
      // Defined but possibly empty (K = 0): only the shape matters there.
      std::vector<float> empty(1);
      Tensor av = make_tensor(K > 0 ? a.data() : empty.data(), DType::f32, Device::cpu, {M, K});
      Tensor bv = make_tensor(K > 0 ? b.data() : empty.data(), DType::f32, Device::cpu, {N, K});
      const Tensor bias_view = with_bias ? view(bias, {N}) : none_tensor();
      be->matmul_residual(view(fused, {M, N}), av, bv, Transpose::none, Transpose::transpose, bias_view,
                          view(residual, {M, N}));
      be->matmul(view(separate, {M, N}), av, bv, Transpose::none, Transpose::transpose, bias_view,
                 Accumulate::overwrite, none_tensor());
      be->add(view(separate, {M, N}), view(separate, {M, N}), view(residual, {M, N}));
      CHECK(fused == separate);
      if (K == 0) CHECK(fused[0] == residual[0] + (with_bias ? bias[0] : 0.0f));
    }
  }
}

// The backward form (the MLP's dX through fc_proj with the GELU's and fc's bias gradients) is
// what the separate ops compute, bit for bit: the model's CPU numbers do not move.
TEST_CASE("cpu matmul: gelu_inp and dbias give the bits of the product, gelu_backward and bias_backward") {
  auto be = make_cpu_backend();
  uint64_t seed = 700;
  for (auto [M, N, K] : {std::array<int64_t, 3>{1, 1, 1}, {37, 53, 19}, {64, 256, 96}, {6, 5, 0}}) {
    for (int form = 0; form < 3; ++form) {  // gelu_inp and dbias, gelu_inp alone, dbias alone
      CAPTURE(M);
      CAPTURE(form);
      const bool with_gelu = form != 2, with_dbias = form != 1;
      auto a = random_floats(size_t(M * K), ++seed), b = random_floats(size_t(K * N), ++seed);
      auto pre = random_floats(size_t(M * N), ++seed);
      for (float& x : pre) x *= 4;  // through the GELU's curved part
      const auto dbias_start = random_floats(size_t(N), ++seed);
      std::vector<float> fused(size_t(M * N), 7.0f), separate(size_t(M * N), -7.0f);
      std::vector<float> fused_db = dbias_start, separate_db = dbias_start;
      std::vector<float> empty(1);
      Tensor av = make_tensor(K > 0 ? a.data() : empty.data(), DType::f32, Device::cpu, {M, K});
      Tensor bv = make_tensor(K > 0 ? b.data() : empty.data(), DType::f32, Device::cpu, {K, N});
      be->matmul_gelu_backward(view(fused, {M, N}), av, bv, Transpose::none, Transpose::none,
                               with_gelu ? view(pre, {M, N}) : none_tensor(),
                               with_dbias ? view(fused_db, {N}) : none_tensor());
      be->matmul(view(separate, {M, N}), av, bv, Transpose::none, Transpose::none, none_tensor(),
                 Accumulate::overwrite, none_tensor());
      if (with_gelu) be->gelu_backward(view(separate, {M, N}), view(pre, {M, N}), view(separate, {M, N}));
      if (with_dbias) be->bias_backward(view(separate_db, {N}), view(separate, {M, N}));
      CHECK(fused == separate);
      CHECK(fused_db == separate_db);
      if (K == 0) CHECK(fused[0] == 0.0f);
      // Something happened: the product is not the identity of the GELU's gradient.
      if (K > 0 && with_dbias) CHECK(fused_db != dbias_start);
    }
  }
}

// A weight gradient's product with its bias gradient (dbias_a, a's column sums) is the product
// followed by bias_backward on a, bit for bit, in both accumulate modes.
TEST_CASE("cpu matmul: dbias_a gives the bits of the product and bias_backward on a") {
  auto be = make_cpu_backend();
  uint64_t seed = 800;
  for (auto [M, N, K] : {std::array<int64_t, 3>{1, 1, 1}, {53, 37, 19}, {192, 64, 256}, {5, 6, 0}, {7, 0, 9}}) {
    for (Accumulate mode : {Accumulate::add, Accumulate::overwrite}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(int(mode));
      auto a = random_floats(size_t(K * M), ++seed), b = random_floats(size_t(K * N), ++seed);
      const auto out_start = random_floats(size_t(M * N), ++seed);
      const auto db_start = random_floats(size_t(M), ++seed);
      std::vector<float> fused = out_start, separate = out_start, fused_db = db_start, separate_db = db_start;
      std::vector<float> empty(1);
      Tensor av = make_tensor(K > 0 ? a.data() : empty.data(), DType::f32, Device::cpu, {K, M});
      Tensor bv = make_tensor(K * N > 0 ? b.data() : empty.data(), DType::f32, Device::cpu, {K, N});
      Tensor fo = make_tensor(M * N > 0 ? fused.data() : empty.data(), DType::f32, Device::cpu, {M, N});
      Tensor so = make_tensor(M * N > 0 ? separate.data() : empty.data(), DType::f32, Device::cpu, {M, N});
      be->run(MatmulOp{fo, av, bv, Transpose::transpose, Transpose::none, none_tensor(), mode, none_tensor(),
                       none_tensor(), none_tensor(), none_tensor(), view(fused_db, {M})});
      be->matmul(so, av, bv, Transpose::transpose, Transpose::none, none_tensor(), mode, none_tensor());
      be->bias_backward(view(separate_db, {M}), av);
      CHECK(fused == separate);
      CHECK(fused_db == separate_db);
      // Something happened: a's column sums moved the bias gradient (N = 0 included).
      if (K > 0) CHECK(fused_db != db_start);
    }
  }
  // The positional form is the model's weight-gradient call: dweight += dout^T inp.
  std::vector<float> dout = {1, 2, 3, 4, 5, 6}, inp = {1, 0, 0, 1, 1, 1}, dw(4, 1.0f), db = {0.5f, 0.5f};
  be->linear_weight_backward(view(dw, {2, 2}), view(db, {2}), view(dout, {3, 2}), view(inp, {3, 2}));
  // dout^T (2, 3) x inp (3, 2) = {{1+5, 3+5}, {2+6, 4+6}}, added to 1; db += {1+3+5, 2+4+6}.
  CHECK(dw == std::vector<float>{7, 9, 9, 11});
  CHECK(db == std::vector<float>{9.5f, 12.5f});
}

TEST_CASE("cpu bias_backward: column sums, accumulated, fast matches reference") {
  auto be = make_cpu_backend();
  std::vector<float> dout = {1, 2, 3, 4, 5, 6};  // (3,2)
  std::vector<float> dbias = {10, 20};
  be->bias_backward(view(dbias, {2}), view(dout, {3, 2}));
  CHECK(dbias == std::vector<float>{19, 32});
  for (auto [M, N] : {std::pair<int64_t, int64_t>{1, 1}, {37, 1000}, {256, 131}}) {
    auto d = random_floats(size_t(M * N), uint64_t(M * N));
    auto got = random_floats(size_t(N), 7);
    auto want = got;
    be->bias_backward(view(got, {N}), view(d, {M, N}));
    ref::bias_backward<float>(want.data(), d.data(), M, N);
    check_close(got, want, 1e-5, 1e-5, "bias_backward");
  }
}

TEST_CASE("cpu linear backward (matmul + bias_backward) against finite differences") {
  // y (M,N) = x (M,K) W^T + bias with W (N,K); loss = sum(dy * y).
  auto be = make_cpu_backend();
  const int64_t M = 3, K = 5, N = 7;
  auto xf = random_floats(M * K, 11), wf = random_floats(N * K, 12), bf = random_floats(N, 13);
  auto dyf = random_floats(M * N, 14);
  auto x = to_double(xf), w = to_double(wf), bias = to_double(bf), dy = to_double(dyf);
  auto loss = [&] {
    std::vector<double> y(M * N);
    ref::matmul<double>(y.data(), x.data(), w.data(), bias.data(), M, N, K, Transpose::none,
                        Transpose::transpose, Accumulate::overwrite, nullptr);
    return dot(dy, y);
  };
  std::vector<float> dx(M * K), dw(N * K, 0.0f), db(N, 0.0f);
  be->matmul(view(dx, {M, K}), view(dyf, {M, N}), view(wf, {N, K}), Transpose::none,
             Transpose::none, none_tensor(), Accumulate::overwrite, none_tensor());
  be->matmul(view(dw, {N, K}), view(dyf, {M, N}), view(xf, {M, K}), Transpose::transpose,
             Transpose::none, none_tensor(), Accumulate::add, none_tensor());
  be->bias_backward(view(db, {N}), view(dyf, {M, N}));
  check_close(dx, numeric_gradient(x, loss), 1e-5, 1e-5, "dx");
  check_close(dw, numeric_gradient(w, loss), 1e-5, 1e-5, "dW");
  check_close(db, numeric_gradient(bias, loss), 1e-5, 1e-5, "dbias");
}

TEST_CASE("cpu matmul: shape and dtype errors are rejected") {
  auto be = make_cpu_backend();
  std::vector<float> a(6), b(6), out(4);
  CHECK_THROWS_AS(be->matmul(view(out, {2, 2}), view(a, {2, 3}), view(b, {2, 3}), Transpose::none,
                             Transpose::none, none_tensor(), Accumulate::overwrite, none_tensor()),
                  std::logic_error);
  Tensor bf16 = view(a, {2, 3});
  bf16.dtype = DType::bf16;
  CHECK_THROWS_AS(be->matmul(view(out, {2, 2}), bf16, view(b, {3, 2}), Transpose::none,
                             Transpose::none, none_tensor(), Accumulate::overwrite, none_tensor()),
                  std::logic_error);
  std::vector<float> g(4);
  CHECK_THROWS_AS(be->matmul(view(out, {2, 2}), view(a, {2, 3}), view(b, {3, 2}), Transpose::none,
                             Transpose::none, none_tensor(), Accumulate::add, view(g, {2, 2})),
                  std::logic_error);
}
