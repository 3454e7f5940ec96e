// OpProfiler through the front doors: each accepted op is one call of its row, keyed by the op's
// name and shape as `trainer bench --profile` prints them (matmul by M, N, K, transposes and
// dtype, named by its epilogue; AdamW as one row); a rejected call is not timed; clear() and
// detaching on destruction; the bytes and FLOPs each row's calls add up to.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/op_profiler.h"
#include "tests/kernels/kernel_test_util.h"

namespace trainer::testing {
namespace {

// The row of (op, shape); the test stops if there is none.
const OpProfileRow& find_row(const std::vector<OpProfileRow>& rows, const std::string& op, const std::string& shape) {
  const OpProfileRow* found = nullptr;
  for (const OpProfileRow& r : rows)
    if (r.op == op && r.shape == shape) found = &r;
  REQUIRE_MESSAGE(found, op, " ", shape);
  return *found;
}

TEST_CASE("op profiler: front doors file each call under its name and shape") {
  auto be = make_cpu_backend();
  std::vector<float> out(6), a(8), b(12), bias(3), g(6), p(4), gr(4), m(4), v(4);
  {
    OpProfiler prof(*be);
    for (int i = 0; i < 2; ++i) {
      be->matmul(view(out, {2, 3}), view(a, {2, 4}), view(b, {3, 4}), Transpose::none, Transpose::transpose,
                 view(bias, {3}), Accumulate::overwrite, Tensor{});
      be->matmul(view(out, {2, 3}), view(a, {2, 4}), view(b, {3, 4}), Transpose::none, Transpose::transpose,
                 Tensor{}, Accumulate::overwrite, view(g, {2, 3}));
      be->adamw(view(p, {4}), view(gr, {4}), view(m, {4}), view(v, {4}), Tensor{}, AdamWStep{});
      be->adamw(view(p, {2}), view(gr, {2}), view(m, {2}), view(v, {2}), Tensor{}, AdamWStep{});
    }
    be->gelu_forward(view(g, {6}), view(out, {6}));
    CHECK_THROWS_AS(be->gelu_forward(view(g, {5}), view(out, {6})), std::logic_error);
    prof.collect();
    const auto rows = prof.rows();
    CHECK(rows.size() == 4);
    const OpProfileRow* bias_row = &find_row(rows, "matmul+bias", "M=2 N=3 K=4 NT f32");
    const OpProfileRow* gelu_row = &find_row(rows, "matmul+gelu", "M=2 N=3 K=4 NT f32");
    const OpProfileRow* adamw_row = &find_row(rows, "adamw", "all parameters");
    const OpProfileRow* gelu_fwd = &find_row(rows, "gelu_forward", "(6) f32");
    CHECK(bias_row->calls == 2);
    CHECK(gelu_row->calls == 2);
    CHECK(adamw_row->calls == 4);
    CHECK(gelu_fwd->calls == 1);  // the rejected call is not counted
    for (const OpProfileRow& r : rows) CHECK(r.seconds >= 0);
    for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i - 1].seconds >= rows[i].seconds);
    prof.clear();
    CHECK(prof.rows().empty());
  }
  // Detached: ops run untimed, with no profiler to call.
  be->gelu_forward(view(g, {6}), view(out, {6}));
}

TEST_CASE("op profiler: each row carries the bytes its calls move and the FLOPs they compute") {
  auto be = make_cpu_backend();
  std::vector<float> out(6), a(8), b(12), bias(3), p(4), gr(4), m(4), v(4);
  std::vector<float> qkv(1 * 3 * 6), att(3 * 2), lse(3);
  OpProfiler prof(*be);
  for (int i = 0; i < 2; ++i) {
    be->matmul(view(out, {2, 3}), view(a, {2, 4}), view(b, {3, 4}), Transpose::none, Transpose::transpose,
               view(bias, {3}), Accumulate::overwrite, Tensor{});
    be->adamw(view(p, {4}), view(gr, {4}), view(m, {4}), view(v, {4}), Tensor{}, AdamWStep{});
  }
  // Accumulating: out is read as well as written.
  be->matmul(view(out, {2, 3}), view(a, {4, 2}), view(b, {4, 3}), Transpose::transpose, Transpose::none, Tensor{},
             Accumulate::add, Tensor{});
  be->scale(view(out, {6}), 2.0f);
  // One head of D = 2 over T = 3: 6 causal (query, key) pairs, two products of 2 D FLOPs each.
  be->attention_forward(view(att, {1, 3, 2}), view(lse, {3}), view(qkv, {1, 3, 6}), 1);
  prof.collect();
  const auto rows = prof.rows();
  const OpProfileRow* bias_row = &find_row(rows, "matmul+bias", "M=2 N=3 K=4 NT f32");
  const OpProfileRow* add_row = &find_row(rows, "matmul", "M=2 N=3 K=4 TN f32");
  const OpProfileRow* adamw_row = &find_row(rows, "adamw", "all parameters");
  const OpProfileRow* scale_row = &find_row(rows, "scale", "(6) f32");
  const OpProfileRow* att_row = &find_row(rows, "attention_forward", "(1, 3, 6) f32 heads=1");
  // out 6, a 8, b 12 and bias 3 floats, twice; 2 M N K = 48 FLOPs, twice.
  CHECK(bias_row->bytes == 2 * 4 * (6 + 8 + 12 + 3));
  CHECK(bias_row->flops == 2 * 48);
  CHECK(add_row->bytes == 4 * (2 * 6 + 8 + 12));
  CHECK(add_row->flops == 48);
  // param, m and v updated, grad read: 7 vectors of 4 floats per call; no FLOPs counted.
  CHECK(adamw_row->bytes == 2 * 7 * 4 * 4);
  CHECK(adamw_row->flops == 0);
  CHECK(scale_row->bytes == 2 * 6 * 4);
  CHECK(att_row->flops == 2 * 6 * 2 * 2);
  CHECK(att_row->bytes == 4 * (6 + 3 + 18));
  prof.clear();
  be->scale(view(out, {6}), 2.0f);
  // A multi-tensor op moves what its pieces move; the backward's five products count.
  std::vector<float> p2(2), gr2(2), m2(2), v2(2);
  be->adamw_many({AdamWOp{view(p, {4}), view(gr, {4}), view(m, {4}), view(v, {4}), Tensor{}, AdamWStep{}},
                  AdamWOp{view(p2, {2}), view(gr2, {2}), view(m2, {2}), view(v2, {2}), Tensor{}, AdamWStep{}}});
  std::vector<float> dqkv(18), dout(6);
  be->attention_backward(view(dqkv, {1, 3, 6}), view(dout, {1, 3, 2}), view(qkv, {1, 3, 6}), view(att, {1, 3, 2}),
                         view(lse, {3}), 1);
  prof.collect();
  const auto after = prof.rows();
  REQUIRE(after.size() == 3);
  CHECK(find_row(after, "scale", "(6) f32").bytes == 2 * 6 * 4);  // clear() forgot the earlier calls' bytes
  CHECK(find_row(after, "adamw_many", "all parameters").bytes == 7 * 4 * (4 + 2));
  const OpProfileRow& back = find_row(after, "attention_backward", "(1, 3, 6) f32 heads=1");
  CHECK(back.flops == 5 * 6 * 2 * 2);
  CHECK(back.bytes == 4 * (18 + 6 + 18 + 6 + 3));
}

}  // namespace
}  // namespace trainer::testing
