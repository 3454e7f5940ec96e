// Graph capture cases for any backend that captures (the CPU records its ops, CUDA captures
// its stream; Backend::begin_capture): a capture runs nothing, a replay gives the eager run's
// bits and reads the inputs as they are at replay time, and what a graph cannot hold (host
// copies, waits, allocations, frees, host results, a profiler) is refused without leaving the
// backend stuck in capture. tests/kernels/test_op_graph.cpp runs them on the CPU,
// tests/kernels/cuda/test_cuda_graph.cpp on CUDA in both precisions.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kernels/backend.h"
#include "kernels/op_profiler.h"
#include "tests/kernels/device_tensors.h"
#include "tests/support/test_util.h"

namespace trainer::testing {

// The outputs of one run of graph_work.
struct GraphOutputs {
  Tensor y, z, mean, rstd, c, zeroed;
};

inline GraphOutputs graph_outputs(Tensors& ts, DType act, int64_t M, int64_t N) {
  return {ts.poisoned(act, {M, N}), ts.poisoned(act, {M, N}), ts.poisoned(DType::f32, {M}),
          ts.poisoned(DType::f32, {M}), ts.poisoned(act, {M, N}), ts.poisoned(DType::f32, {M})};
}

// y = x w^T + bias; z = layernorm(y); c = copy of z; zeroed = 0.
inline void graph_work(Backend& be, const GraphOutputs& o, Tensor x, Tensor w, Tensor bias, Tensor g, Tensor b) {
  be.matmul(o.y, x, w, Transpose::none, Transpose::transpose, bias, Accumulate::overwrite, Tensor{});
  be.layernorm_forward(o.z, o.mean, o.rstd, o.y, g, b);
  be.copy(o.c.data, o.z.data, o.z.bytes());
  be.memset_zero(o.zeroed.data, o.zeroed.bytes());
}

inline void check_same_outputs(Tensors& ts, const GraphOutputs& got, const GraphOutputs& want) {
  check_equal(ts.read(got.y), ts.read(want.y), "y");
  check_equal(ts.read(got.z), ts.read(want.z), "z");
  check_equal(ts.read(got.mean), ts.read(want.mean), "mean");
  check_equal(ts.read(got.rstd), ts.read(want.rstd), "rstd");
  check_equal(ts.read(got.c), ts.read(want.c), "c");
  check_equal(ts.read(got.zeroed), std::vector<float>(size_t(got.zeroed.numel()), 0.0f), "zeroed");
}

inline void check_graph_replay(Backend& be) {
  Tensors ts(be);
  const DType act = be.act_dtype();
  const int64_t M = 24, K = 32, N = 40;
  Tensor x = ts.upload(random_floats(size_t(M * K), 1), act, {M, K});
  Tensor w = ts.upload(random_floats(size_t(N * K), 2), act, {N, K});
  Tensor bias = ts.upload(random_floats(size_t(N), 3), act, {N});
  Tensor g = ts.upload(random_floats(size_t(N), 4, 0.5f, 1.5f), act, {N});
  Tensor b = ts.upload(random_floats(size_t(N), 5), act, {N});
  const GraphOutputs eager = graph_outputs(ts, act, M, N);
  const GraphOutputs graphed = graph_outputs(ts, act, M, N);
  // The eager run first: it makes whatever the ops keep (workspace, plans) before the capture.
  graph_work(be, eager, x, w, bias, g, b);
  const std::vector<float> poison = ts.read(graphed.y);

  be.begin_capture();
  CHECK(be.capturing());
  graph_work(be, graphed, x, w, bias, g, b);
  std::unique_ptr<OpGraph> graph = be.end_capture();
  CHECK_FALSE(be.capturing());
  REQUIRE(graph != nullptr);
  CHECK(graph->valid());
  CHECK(graph->nodes() >= 4);
  // The capture computed nothing.
  be.synchronize();
  check_equal(ts.read(graphed.y), poison, "y before the replay");

  graph->replay();
  be.synchronize();
  check_same_outputs(ts, graphed, eager);

  // A replay reads its inputs as they are now: new x, the eager run again, the graph again.
  ts.write(x, random_floats(size_t(M * K), 6));
  graph_work(be, eager, x, w, bias, g, b);
  graph->replay();
  graph->replay();  // twice: a replay repeats, nothing accumulates
  be.synchronize();
  check_same_outputs(ts, graphed, eager);
}

// Each call that needs the host, or memory a graph could not keep, throws a logic_error while
// capturing; abort_capture leaves the backend as it was.
inline void check_graph_refusals(Backend& be) {
  Tensors ts(be);
  const DType act = be.act_dtype();
  Tensor x = ts.upload(random_floats(64, 7), act, {64});
  std::vector<float> host(64);
  auto refused = [&](const char* what, const std::function<void()>& call) {
    CAPTURE(what);
    be.begin_capture();
    CHECK_THROWS_AS(call(), std::logic_error);
    CHECK(be.capturing());
    be.abort_capture();
    CHECK_FALSE(be.capturing());
  };
  refused("copy_to_host", [&] { be.copy_to_host(host.data(), x.data, 16); });
  refused("copy_from_host", [&] { be.copy_from_host(x.data, host.data(), 16); });
  refused("synchronize", [&] { be.synchronize(); });
  refused("alloc", [&] { Buffer extra = be.alloc(256); });
  refused("sum_squares", [&] { (void)be.sum_squares(x); });
  refused("begin_capture twice", [&] { be.begin_capture(); });
  CHECK_THROWS_AS(be.end_capture(), std::logic_error);  // none begun

  // A free while capturing spoils the capture: end_capture throws and keeps nothing.
  {
    Buffer spare = be.alloc(256);
    be.begin_capture();
    be.memset_zero(x.data, x.bytes());
    spare = Buffer();
    CHECK_THROWS_AS(be.end_capture(), std::logic_error);
    CHECK_FALSE(be.capturing());
  }
  {
    OpProfiler profiler(be);
    CHECK_THROWS_AS(be.begin_capture(), std::logic_error);
    CHECK_FALSE(be.capturing());
  }
  // The backend still computes eagerly and still captures.
  ts.write(x, std::vector<float>(64, 2.0f));
  CHECK(be.sum_squares(x) == doctest::Approx(256.0));
  be.begin_capture();
  be.memset_zero(x.data, x.bytes());
  std::unique_ptr<OpGraph> graph = be.end_capture();
  CHECK(ts.read(x) == std::vector<float>(64, 2.0f));
  graph->replay();
  CHECK(ts.read(x) == std::vector<float>(64, 0.0f));
}

}  // namespace trainer::testing
