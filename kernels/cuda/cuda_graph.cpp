// CUDA stream capture into an instantiated graph (see cuda_graph.h).
#include "kernels/cuda/cuda_graph.h"

#include "kernels/base/check.h"
#include "kernels/cuda/cuda_check.h"

namespace trainer::cuda {

namespace {

class CudaGraph final : public OpGraph {
 public:
  // Owns `graph` from here on, also when instantiating it fails.
  CudaGraph(cudaStream_t stream, cudaGraph_t graph, const Workspace& workspace)
      : stream_(stream), graph_(graph), workspace_(workspace), generation_(workspace.generation()) {
    cudaError_t status = cudaGraphGetNodes(graph_, nullptr, &nodes_);
    const char* call = "cudaGraphGetNodes";
    if (status == cudaSuccess) {
      status = cudaGraphInstantiate(&exec_, graph_, 0);
      call = "cudaGraphInstantiate";
    }
    if (status != cudaSuccess) {
      (void)cudaGetLastError();  // not left for the next launch check to report
      TRAINER_CUDA_REPORT(cudaGraphDestroy(graph_));
      fail_cuda(status, call, __FILE__, __LINE__);
    }
  }
  ~CudaGraph() override {
    TRAINER_CUDA_REPORT(cudaGraphExecDestroy(exec_));
    TRAINER_CUDA_REPORT(cudaGraphDestroy(graph_));
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  void replay() override {
    TRAINER_CHECK(valid(), "replay of a CUDA graph captured before the workspace grew");
    TRAINER_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
  }
  bool valid() const override { return workspace_.generation() == generation_; }
  size_t nodes() const override { return nodes_; }

 private:
  cudaStream_t stream_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_ = nullptr;
  const Workspace& workspace_;
  uint64_t generation_;
  size_t nodes_ = 0;
};

}  // namespace

void begin_stream_capture(cudaStream_t stream) {
  TRAINER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
}

std::unique_ptr<OpGraph> end_stream_capture(cudaStream_t stream, const Workspace& workspace) {
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream, &graph);
  if (status != cudaSuccess) {
    // An invalidated capture (an unsafe call while capturing) leaves its error as the
    // thread's last error: cleared here so the next launch check does not report it again.
    (void)cudaGetLastError();
    if (graph) TRAINER_CUDA_REPORT(cudaGraphDestroy(graph));
    fail_cuda(status, "cudaStreamEndCapture (a call while capturing invalidated the capture)", __FILE__, __LINE__);
  }
  return std::make_unique<CudaGraph>(stream, graph, workspace);
}

void cancel_stream_capture(cudaStream_t stream) noexcept {
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream, &graph);
  // An invalidated capture ends with an error and no graph: expected on this path.
  if (status != cudaSuccess) (void)cudaGetLastError();
  if (graph) TRAINER_CUDA_REPORT(cudaGraphDestroy(graph));
}

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  TRAINER_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace trainer::cuda
