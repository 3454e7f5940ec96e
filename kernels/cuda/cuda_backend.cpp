// CudaBackend: the Backend interface on one GPU. One compute stream (non-blocking) carries
// every op, copy and memset in issue order; device memory comes from cudaMalloc only (counted
// for allocated_bytes / peak); a scratch workspace grows to its largest request and is reused;
// the cuBLASLt workspace is allocated once. The ops themselves live in the .cu files
// (cuda_ops.h) and cuda_matmul.cpp; they receive ops the front doors have checked. Graph
// capture captures the compute stream (cuda_graph.h). With
// attention: cudnn, training attention goes to cuDNN (cudnn_attention.h) instead; generation
// (attention_cached) always uses our kernel.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_event_timer.h"
#include "kernels/cuda/cuda_graph.h"
#include "kernels/cuda/cuda_matmul.h"
#include "kernels/cuda/cuda_ops.h"
#ifdef TRAINER_HAVE_CUDNN
#include "kernels/cuda/cudnn_attention.h"
#endif

namespace trainer {

namespace {

class CudaBackend final : public Backend {
 public:
  CudaBackend(const BackendOptions& options, int device)
      : device_(device),
        act_(options.precision == Precision::bf16 ? DType::bf16 : DType::f32),
        rounding_(options.stochastic_rounding ? cuda::Rounding::stochastic : cuda::Rounding::nearest) {
    TRAINER_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    TRAINER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    device_name_ = prop.name;
    TRAINER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    workspace_ = std::make_unique<cuda::Workspace>(memory_, stream_);
    matmul_ = std::make_unique<cuda::Matmul>(memory_);
    ctx_.stream = stream_;
    ctx_.workspace = workspace_.get();
    ctx_.matmul = matmul_.get();
    ctx_.rounding = rounding_;
#ifdef TRAINER_HAVE_CUDNN
    if (options.attention == AttentionImpl::cudnn)
      cudnn_attention_ = std::make_unique<cuda::CudnnAttention>(stream_, cuda::CudnnDq::direct);
#endif
  }

  ~CudaBackend() override {
    TRAINER_CUDA_REPORT(cudaStreamSynchronize(stream_));
#ifdef TRAINER_HAVE_CUDNN
    cudnn_attention_.reset();
#endif
    matmul_.reset();
    workspace_.reset();
    TRAINER_CUDA_REPORT(cudaStreamDestroy(stream_));
  }

  Device device() const override { return Device::cuda; }
  std::string name() const override {
    return std::string("cuda:") + std::to_string(device_) + " (" + dtype_name(act_) + ")";
  }
  DType act_dtype() const override { return act_; }
  std::string device_name() const override { return device_name_; }
  DeviceMemory device_memory() const override {
    size_t free_bytes = 0, total_bytes = 0;
    TRAINER_CUDA_CHECK(cudaSetDevice(device_));
    TRAINER_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return {int64_t(total_bytes), int64_t(free_bytes)};
  }
  std::unique_ptr<EventTimer> make_event_timer() override { return cuda::make_cuda_event_timer(stream_); }

  void* raw_alloc(size_t bytes) override {
    refuse_while_capturing("alloc");
    return memory_.alloc(bytes);
  }
  void raw_free(void* ptr) override {
    if (capturing()) {
      // A graph may name this memory: the capture is spoiled (end_capture throws), and the
      // synchronize below would fail it anyway. The memory is freed once the capture ended.
      spoil_capture("free");
      freed_while_capturing_.push_back(ptr);
      return;
    }
    // Called from Buffer's destructor, which must not throw: after a fault (a sticky CUDA
    // error) every Buffer freed while the first exception unwinds would otherwise call
    // std::terminate, and that first error would never reach main. CUDA failures here are
    // reported and skipped; a pointer this backend did not allocate stays a logic_error.
    // The stream may still use the memory: cudaFree waits for the device, but be explicit.
    TRAINER_CUDA_REPORT(cudaStreamSynchronize(stream_));
    try {
      memory_.free(ptr);
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "CUDA backend: freeing device memory failed: %s\n", e.what());
    }
  }
  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    refuse_while_capturing("copy_from_host");
    // From pageable memory (all our host buffers) the runtime stages the data before it
    // returns, so the caller may reuse its buffer at once while the GPU keeps working.
    if (bytes) TRAINER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    refuse_while_capturing("copy_to_host");
    if (bytes) TRAINER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    TRAINER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) TRAINER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void memset_zero(void* dst, size_t bytes) override {
    if (bytes) TRAINER_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_));
  }
  void synchronize() override {
    refuse_while_capturing("synchronize");
    TRAINER_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  size_t allocated_bytes() const override { return memory_.live_bytes(); }
  size_t peak_allocated_bytes() const override { return memory_.peak_bytes(); }

  cudaStream_t stream() const { return stream_; }
  const std::map<std::string, int64_t>& matmul_epilogue_runs() const { return matmul_->epilogue_runs(); }
  int device_index() const { return device_; }

 protected:
  // ---- graph capture: the compute stream (cuda_graph.h) ----
  void start_capture() override { cuda::begin_stream_capture(stream_); }
  std::unique_ptr<OpGraph> finish_capture() override {
    return cuda::end_stream_capture(stream_, *workspace_);
  }
  void cancel_capture() noexcept override {
    cuda::cancel_stream_capture(stream_);
    for (void* ptr : std::exchange(freed_while_capturing_, {})) raw_free(ptr);
  }

 private:
  // ---- ops (contracts checked by the front doors in backend_ops.cpp) ----
  template <class Op>
  auto launch(const Op& op) {
    return cuda::run(ctx_, op);
  }
  // Training attention goes to cuDNN instead with train.attention: cudnn.
  void launch(const AttentionForwardOp& op) {
#ifdef TRAINER_HAVE_CUDNN
    if (cudnn_attention_) return cudnn_attention_->forward(ctx_, op);
#endif
    cuda::run(ctx_, op);
  }
  void launch(const AttentionBackwardOp& op) {
#ifdef TRAINER_HAVE_CUDNN
    if (cudnn_attention_) return cudnn_attention_->backward(ctx_, op);
#endif
    cuda::run(ctx_, op);
  }

 protected:
  // Every op of the op list (op_list.h) runs its kernels, cuda::run (cuda_ops.h).
#define TRAINER_CUDA_COMPUTE(Op, Result, ...) \
  Result compute(const Op& op) override { return launch(op); }
  TRAINER_OPS(TRAINER_CUDA_COMPUTE)
#undef TRAINER_CUDA_COMPUTE

 private:
  int device_;
  std::string device_name_;
  DType act_;
  cuda::Rounding rounding_;
  cudaStream_t stream_ = nullptr;
  cuda::DeviceMemory memory_;
  std::unique_ptr<cuda::Workspace> workspace_;
  std::unique_ptr<cuda::Matmul> matmul_;
#ifdef TRAINER_HAVE_CUDNN
  std::unique_ptr<cuda::CudnnAttention> cudnn_attention_;  // train.attention: cudnn
#endif
  cuda::Context ctx_;
  std::vector<void*> freed_while_capturing_;  // freed by cancel_capture (a spoiled capture)
};

CudaBackend& as_cuda(Backend& backend) {
  auto* cuda_backend = dynamic_cast<CudaBackend*>(&backend);
  TRAINER_CHECK(cuda_backend != nullptr, "expected the CUDA backend, got " + backend.name());
  return *cuda_backend;
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
#ifdef TRAINER_HAVE_CUDNN
  if (options.attention == AttentionImpl::cudnn && options.precision != Precision::bf16)
    throw ConfigError(std::string("train.attention: cudnn needs train.precision: bf16, got ") +
                      precision_name(options.precision) + "; valid with " + precision_name(options.precision) +
                      ": flash, auto");
#else
  if (options.attention == AttentionImpl::cudnn)
    throw ConfigError("train.attention: cudnn, but this build has no cuDNN (configure found none; see "
                      "cmake/cuda_libraries.cmake for CUDNN_HOME); valid: flash, auto");
#endif
  const int count = cuda_device_count();
  if (count == 0)
    throw ConfigError("train.device: cuda was requested but no CUDA GPU is available on this machine; "
                      "valid here: cpu, auto");
  TRAINER_CHECK(options.local_rank >= 0, "local_rank " + std::to_string(options.local_rank));
  return std::make_unique<CudaBackend>(options, options.local_rank % count);
}

CUstream_st* cuda_backend_stream(Backend& backend) { return as_cuda(backend).stream(); }

int cuda_backend_device(Backend& backend) { return as_cuda(backend).device_index(); }

std::map<std::string, int64_t> cuda_backend_matmul_epilogues(Backend& backend) {
  return as_cuda(backend).matmul_epilogue_runs();
}

}  // namespace trainer
