// CUDA graphs of the compute stream (Backend::begin_capture, cuda_graph.h): the shared cases of
// tests/kernels/graph_cases.h in both precisions, and the workspace rule: it may not grow
// while capturing (a clear logic_error, the capture abandoned), and a graph captured before it
// grew is no longer valid and refuses to replay.
#include <stdexcept>

#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/graph_cases.h"

namespace trainer::testing {
namespace {

TEST_CASE("cuda graph: a captured sequence replays the eager run's bits") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    CAPTURE(rig.label);
    check_graph_replay(*rig.gpu);
  }
}

TEST_CASE("cuda graph: host copies, waits, allocations, frees and host results are refused while capturing") {
  Rig rig = make_rig(Precision::bf16);
  check_graph_refusals(*rig.gpu);
}

// layernorm_backward takes its partial sums from the workspace, more of it for more rows.
void layernorm_backward_rows(Backend& be, Tensors& ts, int64_t N, int64_t C) {
  const DType act = be.act_dtype();
  Tensor x = ts.upload(random_floats(size_t(N * C), 81), act, {N, C});
  Tensor w = ts.upload(random_floats(size_t(C), 82), act, {C});
  Tensor mean = ts.alloc(DType::f32, {N}), rstd = ts.alloc(DType::f32, {N});
  be.layernorm_forward(ts.alloc(act, {N, C}), mean, rstd, x, w, ts.upload(random_floats(size_t(C), 83), act, {C}));
  be.layernorm_backward(ts.alloc(act, {N, C}), ts.upload(std::vector<float>(size_t(C), 0.0f), DType::f32, {C}),
                        ts.upload(std::vector<float>(size_t(C), 0.0f), DType::f32, {C}),
                        ts.upload(random_floats(size_t(N * C), 84), act, {N, C}), x, w, mean, rstd,
                        Accumulate::overwrite);
}

TEST_CASE("cuda graph: the workspace does not grow while capturing, and a graph from before it grew is stale") {
  Rig rig = make_rig(Precision::bf16);
  Backend& be = *rig.gpu;
  const int64_t C = 256;
  // Inputs made outside the capture: only the backward is captured.
  {
    Tensors ts(be);
    const DType act = be.act_dtype();
    const int64_t N = 4096;
    Tensor x = ts.upload(random_floats(size_t(N * C), 91), act, {N, C});
    Tensor w = ts.upload(random_floats(size_t(C), 92), act, {C});
    Tensor mean = ts.alloc(DType::f32, {N}), rstd = ts.alloc(DType::f32, {N});
    be.layernorm_forward(ts.alloc(act, {N, C}), mean, rstd, x, w, w);
    Tensor dinp = ts.alloc(act, {N, C}), dout = ts.upload(random_floats(size_t(N * C), 93), act, {N, C});
    Tensor dw = ts.upload(std::vector<float>(size_t(C), 0.0f), DType::f32, {C});
    Tensor db = ts.upload(std::vector<float>(size_t(C), 0.0f), DType::f32, {C});
    be.begin_capture();
    CHECK_THROWS_WITH_AS(be.layernorm_backward(dinp, dw, db, dout, x, w, mean, rstd, Accumulate::overwrite),
                         doctest::Contains("must grow"), std::logic_error);
    be.abort_capture();
    // Eagerly once (the workspace grows), then the capture holds.
    be.layernorm_backward(dinp, dw, db, dout, x, w, mean, rstd, Accumulate::overwrite);
    be.begin_capture();
    be.layernorm_backward(dinp, dw, db, dout, x, w, mean, rstd, Accumulate::overwrite);
    std::unique_ptr<OpGraph> graph = be.end_capture();
    CHECK(graph->valid());
    graph->replay();
    be.synchronize();
    // Four times the rows: the workspace grows and the graph is stale.
    layernorm_backward_rows(be, ts, 4 * N, C);
    be.synchronize();
    CHECK_FALSE(graph->valid());
    CHECK_THROWS_WITH_AS(graph->replay(), doctest::Contains("workspace grew"), std::logic_error);
  }
}

}  // namespace
}  // namespace trainer::testing
