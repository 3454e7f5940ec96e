// The emulated CUDA backend (emu_backend.h): CudaBackend's op dispatch (kernels/cuda/
// cuda_backend.cpp) without cuBLASLt, cuDNN, streams or graphs, on host memory.
#include "tests/kernels/cuda_emu/emu_backend.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/bf16.h"
#include "kernels/base/errors.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_workspace.h"

// cuda_emu.h's control (that header's device macros are for the kernels' code only).
namespace emu {
void alternate_order();
}

namespace trainer {

namespace testing {
namespace {

// Every op runs its launches in the other order from the op before (cuda_emu.h), so the
// parity harness's second run of an op sees a race the first one hid.
class EmulatedCudaBackend final : public Backend {
 public:
  explicit EmulatedCudaBackend(const BackendOptions& options)
      : act_(options.precision == Precision::bf16 ? DType::bf16 : DType::f32),
        rounding_(options.stochastic_rounding ? cuda::Rounding::stochastic : cuda::Rounding::nearest),
        workspace_(memory_, nullptr) {
    ctx_.workspace = &workspace_;
  }
  Device device() const override { return Device::cuda; }
  std::string name() const override { return std::string("cuda emulator (") + dtype_name(act_) + ")"; }
  std::string device_name() const override { return "cuda emulator"; }
  DeviceMemory device_memory() const override { return {}; }
  // The emulated ops are synchronous host code, as the CPU backend's: its clock-reading timer.
  std::unique_ptr<EventTimer> make_event_timer() override { return cpu_->make_event_timer(); }
  DType act_dtype() const override { return act_; }
  void* raw_alloc(size_t bytes) override { return memory_.alloc(bytes); }
  void raw_free(void* ptr) override { memory_.free(ptr); }
  void copy_from_host(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memmove(dst, src, bytes); }
  void memset_zero(void* dst, size_t bytes) override { std::memset(dst, 0, bytes); }
  void synchronize() override {}
  size_t allocated_bytes() const override { return memory_.live_bytes(); }
  size_t peak_allocated_bytes() const override { return memory_.peak_bytes(); }

 protected:
  void compute(const EncoderForwardOp& op) override { emu::alternate_order(); cuda::encoder_forward(ctx_, op); }
  void compute(const EncoderBackwardOp& op) override { emu::alternate_order(); cuda::encoder_backward(ctx_, op); }
  void compute(const LayernormForwardOp& op) override { emu::alternate_order(); cuda::layernorm_forward(ctx_, op); }
  void compute(const LayernormBackwardOp& op) override { emu::alternate_order(); cuda::layernorm_backward(ctx_, op); }
  // cuBLASLt cannot run here: the product, its epilogues and their gradients are the CPU
  // backend's, on f32 copies of the operands (bf16 widened exactly), and its outputs are
  // rounded back once, as cuBLASLt rounds its f32 accumulators.
  void compute(const MatmulOp& op) override {
    std::vector<std::vector<float>> copies;
    copies.reserve(9);  // the host tensors point into them
    auto widen = [&copies](const Tensor& t) {
      if (!t.defined()) return t;
      std::vector<float>& v = copies.emplace_back(size_t(t.numel()));
      if (t.dtype == DType::bf16) {
        const uint16_t* src = static_cast<const uint16_t*>(t.data);
        for (size_t i = 0; i < v.size(); ++i) v[i] = f32_from_bf16(src[i]);
      } else {
        std::memcpy(v.data(), t.data, t.bytes());
      }
      Tensor host = t;
      host.data = v.data();
      host.dtype = DType::f32;
      host.device = Device::cpu;
      return host;
    };
    const MatmulOp host{widen(op.out),      widen(op.a),        widen(op.b),        op.ta, op.tb, widen(op.bias), op.mode,
                        widen(op.gelu_out), widen(op.residual), widen(op.gelu_inp), widen(op.dbias),
                        widen(op.dbias_a)};
    cpu_->run(host);
    for (auto [dev, result] : {std::pair{op.out, host.out}, std::pair{op.gelu_out, host.gelu_out},
                               std::pair{op.dbias, host.dbias}, std::pair{op.dbias_a, host.dbias_a}}) {
      if (!dev.defined()) continue;
      const float* src = result.ptr<float>();
      if (dev.dtype == DType::bf16) {
        uint16_t* dst = static_cast<uint16_t*>(dev.data);
        for (int64_t i = 0; i < dev.numel(); ++i) dst[i] = bf16_from_f32(src[i]);
      } else {
        std::memcpy(dev.data, src, dev.bytes());
      }
    }
  }
  void compute(const BiasBackwardOp& op) override { emu::alternate_order(); cuda::bias_backward(ctx_, op); }
  void compute(const AttentionForwardOp& op) override { emu::alternate_order(); cuda::attention_forward(ctx_, op); }
  void compute(const AttentionBackwardOp& op) override { emu::alternate_order(); cuda::attention_backward(ctx_, op); }
  void compute(const AttentionCachedOp& op) override { emu::alternate_order(); cuda::attention_cached(ctx_, op); }
  void compute(const RmsnormForwardOp& op) override { emu::alternate_order(); cuda::rmsnorm_forward(ctx_, op); }
  void compute(const RmsnormBackwardOp& op) override { emu::alternate_order(); cuda::rmsnorm_backward(ctx_, op); }
  void compute(const HeadRmsnormForwardOp& op) override { emu::alternate_order(); cuda::head_rmsnorm_forward(ctx_, op); }
  void compute(const HeadRmsnormBackwardOp& op) override { emu::alternate_order(); cuda::head_rmsnorm_backward(ctx_, op); }
  void compute(const RopeForwardOp& op) override { emu::alternate_order(); cuda::rope_forward(ctx_, op); }
  void compute(const RopeBackwardOp& op) override { emu::alternate_order(); cuda::rope_backward(ctx_, op); }
  void compute(const SwigluForwardOp& op) override { emu::alternate_order(); cuda::swiglu_forward(ctx_, op); }
  void compute(const SwigluBackwardOp& op) override { emu::alternate_order(); cuda::swiglu_backward(ctx_, op); }
  void compute(const GeluForwardOp& op) override { emu::alternate_order(); cuda::gelu_forward(ctx_, op); }
  void compute(const GeluBackwardOp& op) override { emu::alternate_order(); cuda::gelu_backward(ctx_, op); }
  void compute(const AddOp& op) override { emu::alternate_order(); cuda::add(ctx_, op); }
  void compute(const ScaleOp& op) override { emu::alternate_order(); cuda::scale(ctx_, op); }
  void compute(const FillOp& op) override { emu::alternate_order(); cuda::fill(ctx_, op); }
  void compute(const InitNormalOp& op) override { emu::alternate_order(); cuda::init_normal(ctx_, op); }
  void compute(const CastOp& op) override { emu::alternate_order(); cuda::cast(ctx_, op); }
  double compute(const SumSquaresOp& op) override { emu::alternate_order(); return cuda::sum_squares(ctx_, op); }
  void compute(const XentMaxOp& op) override { emu::alternate_order(); cuda::xent_max(ctx_, op); }
  void compute(const XentSumexpOp& op) override { emu::alternate_order(); cuda::xent_sumexp(ctx_, op); }
  void compute(const XentLossOp& op) override { emu::alternate_order(); cuda::xent_loss(ctx_, op); }
  void compute(const XentBackwardOp& op) override { emu::alternate_order(); cuda::xent_backward(ctx_, op); }
  void compute(const XentFusedOp& op) override { emu::alternate_order(); cuda::xent_fused(ctx_, op); }
  void compute(const AdamWOp& op) override { emu::alternate_order(); cuda::adamw(ctx_, op, rounding_); }
  void compute(const AdamWManyOp& op) override { emu::alternate_order(); cuda::adamw_many(ctx_, op, rounding_); }
  double compute(const SumSquaresManyOp& op) override { emu::alternate_order(); return cuda::sum_squares_many(ctx_, op); }

 private:
  DType act_;
  cuda::Rounding rounding_;
  cuda::DeviceMemory memory_;
  cuda::Workspace workspace_;
  cuda::Context ctx_;
  std::unique_ptr<Backend> cpu_ = make_cpu_backend();  // the matrix products and the timer
};

}  // namespace

std::unique_ptr<Backend> make_emulated_cuda_backend(const BackendOptions& options) {
  if (options.attention == AttentionImpl::cudnn)
    throw ConfigError("attention: cudnn: cuDNN cannot run on the CUDA emulator");
  return std::make_unique<EmulatedCudaBackend>(options);
}

}  // namespace testing
}  // namespace trainer
