// CPU token + position embedding: closed form (including tokens outside a vocabulary slice
// and no wpe), backward accumulation with repeated tokens, fast path against the reference,
// and the reference backward against finite differences.
#include <doctest/doctest.h>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_encoder.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu encoder: closed form forward and backward") {
  auto be = make_cpu_backend();
  // Slice of the vocabulary holding ids [10, 13); C = 2; B = 1, T = 3.
  std::vector<float> wte = {1, 2, 3, 4, 5, 6};
  std::vector<float> wpe = {0.5f, 0.25f, -1, -2, 10, 20, 99, 99};  // 4 positions >= T
  std::vector<int32_t> tokens = {12, 9, 12};
  std::vector<float> out(6);
  be->encoder_forward(view(out, {1, 3, 2}), view(tokens, {1, 3}), view(wte, {3, 2}),
                      view(wpe, {4, 2}), 10);
  CHECK(out == std::vector<float>{5.5f, 6.25f, -1, -2, 15, 26});
  be->encoder_forward(view(out, {1, 3, 2}), view(tokens, {1, 3}), view(wte, {3, 2}), Tensor{}, 10);
  CHECK(out == std::vector<float>{5, 6, 0, 0, 5, 6});

  std::vector<float> dout = {1, 2, 3, 4, 5, 6};
  std::vector<float> dwte(6, 1.0f), dwpe(8, 0.0f);
  be->encoder_backward(view(dwte, {3, 2}), view(dwpe, {4, 2}), view(dout, {1, 3, 2}),
                       view(tokens, {1, 3}), 10);
  CHECK(dwte == std::vector<float>{1, 1, 1, 1, 7, 9});  // id 12 twice, id 9 not in the slice
  CHECK(dwpe == std::vector<float>{1, 2, 3, 4, 5, 6, 0, 0});
}

TEST_CASE("cpu encoder: fast path matches the reference") {
  auto be = make_cpu_backend();
  const int64_t B = 3, T = 17, C = 200, V = 101, P = 20;
  auto wte = random_floats(V * C, 1), wpe = random_floats(P * C, 2), dout = random_floats(B * T * C, 3);
  auto tokens = random_ints(B * T, 0, 20, 4);  // many repeats
  tokens[5] = 150;                             // outside the slice
  tokens[6] = int32_t(V);                      // first id past the slice
  std::vector<float> out(B * T * C), rout(B * T * C);
  be->encoder_forward(view(out, {B, T, C}), view(tokens, {B, T}), view(wte, {V, C}),
                      view(wpe, {P, C}), 0);
  ref::encoder_forward<float>(rout.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, V, 0);
  CHECK(bitwise_equal(out, rout));
  auto dwte = random_floats(V * C, 5), dwpe = random_floats(P * C, 6);
  auto rdwte = dwte, rdwpe = dwpe;
  be->encoder_backward(view(dwte, {V, C}), view(dwpe, {P, C}), view(dout, {B, T, C}),
                       view(tokens, {B, T}), 0);
  ref::encoder_backward<float>(rdwte.data(), rdwpe.data(), dout.data(), tokens.data(), B, T, C, V, 0);
  check_close(dwte, rdwte, 1e-6, 1e-6, "dwte");
  check_close(dwpe, rdwpe, 1e-6, 1e-6, "dwpe");
}

TEST_CASE("cpu encoder: positions restarting per document match the reference") {
  auto be = make_cpu_backend();
  const int64_t B = 3, T = 17, C = 40, V = 31, P = 20;
  auto wte = random_floats(V * C, 11), wpe = random_floats(P * C, 12), dout = random_floats(B * T * C, 13);
  auto tokens = random_ints(B * T, 0, int32_t(V), 14);
  RandomDocuments docs = random_documents(B, T, 5, 15);
  std::vector<float> out(B * T * C), rout(B * T * C);
  be->encoder_forward(view(out, {B, T, C}), view(tokens, {B, T}), view(wte, {V, C}), view(wpe, {P, C}), 0,
                      view(docs.positions, {B, T}));
  ref::encoder_forward<float>(rout.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, V, 0,
                              docs.positions.data());
  CHECK(bitwise_equal(out, rout));
  auto dwte = random_floats(V * C, 16), dwpe = random_floats(P * C, 17);
  auto rdwte = dwte, rdwpe = dwpe;
  be->encoder_backward(view(dwte, {V, C}), view(dwpe, {P, C}), view(dout, {B, T, C}), view(tokens, {B, T}), 0,
                       view(docs.positions, {B, T}));
  ref::encoder_backward<float>(rdwte.data(), rdwpe.data(), dout.data(), tokens.data(), B, T, C, V, 0,
                               docs.positions.data());
  check_close(dwte, rdwte, 1e-6, 1e-6, "dwte");
  check_close(dwpe, rdwpe, 1e-6, 1e-6, "dwpe");
  // Positions pick the table's rows: without wpe they are refused rather than ignored.
  CHECK_THROWS_WITH_AS(be->encoder_forward(view(out, {B, T, C}), view(tokens, {B, T}), view(wte, {V, C}), Tensor{}, 0,
                                           view(docs.positions, {B, T})),
                       doctest::Contains("positions needs wpe"), std::logic_error);
}

TEST_CASE("cpu encoder_backward: reference against finite differences") {
  const int64_t B = 2, T = 3, C = 3, V = 4;
  auto wte = to_double(random_floats(V * C, 7)), wpe = to_double(random_floats(T * C, 8));
  auto dout = to_double(random_floats(B * T * C, 9));
  std::vector<int32_t> tokens = {1, 1, 3, 0, 1, 7};
  auto loss = [&] {
    std::vector<double> out(B * T * C);
    ref::encoder_forward<double>(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, V, 0);
    return dot(dout, out);
  };
  std::vector<double> dwte(V * C, 0.0), dwpe(T * C, 0.0);
  ref::encoder_backward<double>(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, V, 0);
  check_close(dwte, numeric_gradient(wte, loss), 1e-7, 1e-9, "dwte");
  check_close(dwpe, numeric_gradient(wpe, loss), 1e-7, 1e-9, "dwpe");
}
