// CpuBackend: memory (aligned host allocations with byte accounting), FTZ/DAZ set-up, and
// dispatch of every Backend op to the fast kernels in cpu_ops.h. The front doors
// (backend_ops.cpp) have checked each op's contract; the only limit left here is sgemm's
// 32-bit sizes. Matrices are read as in backend.h: rows = numel / size(-1), cols = size(-1).
// Graph capture records the checked ops, copies and memsets as closures (RecordedOps).
#include "kernels/cpu/cpu_backend.h"

#include <pmmintrin.h>
#include <xmmintrin.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/base/check.h"
#include "kernels/cpu/cpu_host_info.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/init_normal.h"

namespace trainer {

namespace {

constexpr size_t kAlign = 64;  // a cache line, and one AVX-512 vector

// The contract holds (the front door checked it): act is f32, so every float tensor is f32.
float* f32(const Tensor& t) { return t.ptr<float>(); }
const int32_t* i32(const Tensor& t) { return t.ptr<int32_t>(); }

// CPU ops are synchronous, so a mark is a clock reading.
class CpuEventTimer final : public EventTimer {
 public:
  int record() override {
    marks_.push_back(std::chrono::steady_clock::now());
    return int(marks_.size()) - 1;
  }
  double seconds(int from, int to) override {
    TRAINER_CHECK(from >= 0 && to >= 0 && size_t(from) < marks_.size() && size_t(to) < marks_.size(),
                  "CpuEventTimer: unknown mark");
    return std::chrono::duration<double>(marks_[size_t(to)] - marks_[size_t(from)]).count();
  }
  void reset() override { marks_.clear(); }

 private:
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() { cpu_enable_flush_denormals(); }

  Device device() const override { return Device::cpu; }
  std::string name() const override { return "cpu"; }
  std::string device_name() const override { return cpu_model_name(); }
  DeviceMemory device_memory() const override { return host_memory(); }
  std::unique_ptr<EventTimer> make_event_timer() override { return std::make_unique<CpuEventTimer>(); }
  DType act_dtype() const override { return DType::f32; }

  // ---- memory ----
  void* raw_alloc(size_t bytes) override {
    refuse_while_capturing("alloc");
    if (bytes == 0) return nullptr;
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kAlign, bytes) != 0)
      throw std::runtime_error("CPU backend: cannot allocate " + std::to_string(bytes) +
                               " bytes (" + std::to_string(allocated_bytes()) +
                               " already allocated)");
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[ptr] = bytes;
    allocated_ += bytes;
    if (allocated_ > peak_) peak_ = allocated_;
    return ptr;
  }

  void raw_free(void* ptr) override {
    if (!ptr) return;
    spoil_capture("free");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = sizes_.find(ptr);
      TRAINER_CHECK(it != sizes_.end(), "CPU backend: raw_free of a pointer it did not allocate");
      allocated_ -= it->second;
      sizes_.erase(it);
    }
    std::free(ptr);
  }

  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    refuse_while_capturing("copy_from_host");
    cpu::copy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    refuse_while_capturing("copy_to_host");
    cpu::copy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (recording_now()) return recording_.push_back([dst, src, bytes] { cpu::copy(dst, src, bytes); });
    cpu::copy(dst, src, bytes);
  }
  void memset_zero(void* dst, size_t bytes) override {
    if (recording_now()) return recording_.push_back([dst, bytes] { if (bytes) std::memset(dst, 0, bytes); });
    if (bytes) std::memset(dst, 0, bytes);
  }
  void synchronize() override { refuse_while_capturing("synchronize"); }

  size_t allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocated_;
  }
  size_t peak_allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

  // ---- ops (contracts checked by the front doors in backend_ops.cpp) ----
 protected:
  // Capture records: the front doors append each checked op, copy and memset_zero append
  // theirs; the graph computes them again in that order.
  void start_capture() override {
    recording_.clear();
    op_recording_ = &recording_;
  }
  std::unique_ptr<OpGraph> finish_capture() override {
    op_recording_ = nullptr;
    return std::make_unique<RecordedOps>(std::exchange(recording_, {}));
  }
  void cancel_capture() noexcept override {
    op_recording_ = nullptr;
    recording_.clear();
  }
  bool recording_now() const { return op_recording_ != nullptr; }

  void compute(const EncoderForwardOp& op) override {
    cpu::encoder_forward(f32(op.out), i32(op.tokens), f32(op.wte), f32(op.wpe), op.tokens.shape[0],
                         op.tokens.shape[1], matrix_cols(op.wte), matrix_rows(op.wte), op.vocab_start);
  }
  void compute(const EncoderBackwardOp& op) override {
    cpu::encoder_backward(f32(op.dwte), f32(op.dwpe), f32(op.dout), i32(op.tokens), op.tokens.shape[0],
                          op.tokens.shape[1], matrix_cols(op.dwte), matrix_rows(op.dwte), op.vocab_start);
  }
  void compute(const LayernormForwardOp& op) override {
    cpu::layernorm_forward(f32(op.out), f32(op.mean), f32(op.rstd), f32(op.inp), f32(op.weight), f32(op.bias),
                           matrix_rows(op.inp), matrix_cols(op.inp));
  }
  void compute(const LayernormBackwardOp& op) override {
    cpu::layernorm_backward(f32(op.dinp), f32(op.dweight), f32(op.dbias), f32(op.dout), f32(op.inp),
                            f32(op.weight), f32(op.mean), f32(op.rstd), matrix_rows(op.inp), matrix_cols(op.inp),
                            op.dinp_mode);
  }
  void compute(const MatmulOp& op) override {
    const MatmulDims d = matmul_dims(op);
    TRAINER_CHECK(d.M <= INT_MAX && d.N <= INT_MAX && d.K <= INT_MAX,
                  "matmul: a dimension exceeds sgemm's 32-bit sizes");
    cpu::matmul(f32(op.out), f32(op.a), f32(op.b), f32(op.bias), d.M, d.N, d.K, op.ta, op.tb, op.mode,
                f32(op.gelu_out));
    // The residual as AddOp adds it: the same bits as the product followed by add; the backward
    // forms as GeluBackwardOp and BiasBackwardOp (on out, or on a for dbias_a) would after it.
    if (op.residual.defined()) cpu::add(f32(op.out), f32(op.out), f32(op.residual), d.M * d.N);
    if (op.gelu_inp.defined()) cpu::gelu_backward(f32(op.out), f32(op.gelu_inp), f32(op.out), d.M * d.N);
    if (op.dbias.defined()) cpu::bias_backward(f32(op.dbias), f32(op.out), d.M, d.N);
    if (op.dbias_a.defined()) cpu::bias_backward(f32(op.dbias_a), f32(op.a), d.K, d.M);
  }
  void compute(const BiasBackwardOp& op) override {
    cpu::bias_backward(f32(op.dbias), f32(op.dout), matrix_rows(op.dout), matrix_cols(op.dout));
  }
  void compute(const AttentionForwardOp& op) override {
    const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
    cpu::attention_forward(f32(op.out), f32(op.lse), f32(op.qkv), s.B, s.T, s.H, s.Hkv, s.D);
  }
  void compute(const AttentionBackwardOp& op) override {
    const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
    cpu::attention_backward(f32(op.dqkv), f32(op.dout), f32(op.qkv), f32(op.out), f32(op.lse), s.B, s.T, s.H,
                            s.Hkv, s.D);
  }
  void compute(const AttentionCachedOp& op) override {
    const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
    cpu::attention_cached(f32(op.out), f32(op.k_cache), f32(op.v_cache), f32(op.qkv), s.B, s.T, s.H, s.Hkv, s.D,
                          op.k_cache.shape[2], op.past);
  }
  void compute(const RmsnormForwardOp& op) override {
    cpu::rmsnorm_forward(f32(op.out), f32(op.rstd), f32(op.inp), f32(op.weight), matrix_rows(op.inp),
                         matrix_cols(op.inp), op.eps);
  }
  void compute(const RmsnormBackwardOp& op) override {
    cpu::rmsnorm_backward(f32(op.dinp), f32(op.dweight), f32(op.dout), f32(op.inp), f32(op.weight), f32(op.rstd),
                          matrix_rows(op.inp), matrix_cols(op.inp), op.dinp_mode);
  }
  void compute(const HeadRmsnormForwardOp& op) override {
    const AttentionDims s = attention_dims(op.inp, op.n_head, op.n_kv_head);
    cpu::head_rmsnorm_forward(f32(op.out), f32(op.rstd), f32(op.inp), f32(op.q_weight), f32(op.k_weight),
                              s.B * s.T, s.H, s.Hkv, s.D, op.eps);
  }
  void compute(const HeadRmsnormBackwardOp& op) override {
    const AttentionDims s = attention_dims(op.inp, op.n_head, op.n_kv_head);
    cpu::head_rmsnorm_backward(f32(op.dinp), f32(op.dq_weight), f32(op.dk_weight), f32(op.dout), f32(op.inp),
                               f32(op.q_weight), f32(op.k_weight), f32(op.rstd), s.B * s.T, s.H, s.Hkv, s.D);
  }
  void compute(const RopeForwardOp& op) override {
    const AttentionDims s = attention_dims(op.inp, op.n_head, op.n_kv_head);
    cpu::rope(f32(op.out), f32(op.inp), f32(op.inv_freq), s.B, s.T, s.H, s.Hkv, s.D, op.pos_offset, 1);
  }
  void compute(const RopeBackwardOp& op) override {
    const AttentionDims s = attention_dims(op.dout, op.n_head, op.n_kv_head);
    cpu::rope(f32(op.dinp), f32(op.dout), f32(op.inv_freq), s.B, s.T, s.H, s.Hkv, s.D, op.pos_offset, -1);
  }
  void compute(const SwigluForwardOp& op) override {
    cpu::swiglu_forward(f32(op.out), f32(op.inp), matrix_rows(op.inp), matrix_cols(op.inp) / 2);
  }
  void compute(const SwigluBackwardOp& op) override {
    cpu::swiglu_backward(f32(op.dinp), f32(op.inp), f32(op.dout), matrix_rows(op.inp), matrix_cols(op.inp) / 2);
  }
  void compute(const GeluForwardOp& op) override { cpu::gelu_forward(f32(op.out), f32(op.inp), op.inp.numel()); }
  void compute(const GeluBackwardOp& op) override {
    cpu::gelu_backward(f32(op.dinp), f32(op.inp), f32(op.dout), op.inp.numel());
  }
  void compute(const AddOp& op) override { cpu::add(f32(op.out), f32(op.a), f32(op.b), op.a.numel()); }
  void compute(const ScaleOp& op) override { cpu::scale(f32(op.x), op.alpha, op.x.numel()); }
  void compute(const FillOp& op) override { cpu::fill(f32(op.x), op.value, op.x.numel()); }
  void compute(const InitNormalOp& op) override { init_normal_host(f32(op.out), op.out.numel(), op.fill); }
  // Between equal dtypes a copy (dst and src never overlap); bf16 is the one other dtype here.
  void compute(const CastOp& op) override {
    const int64_t n = op.src.numel();
    if (op.dst.dtype == op.src.dtype) cpu::copy(op.dst.data, op.src.data, op.src.bytes());
    else if (op.dst.dtype == DType::bf16) cpu::cast_to_bf16(op.dst.ptr<uint16_t>(), f32(op.src), n);
    else cpu::cast_from_bf16(f32(op.dst), op.src.ptr<uint16_t>(), n);
  }
  double compute(const SumSquaresOp& op) override { return cpu::sum_squares(f32(op.x), op.x.numel()); }
  void compute(const XentMaxOp& op) override {
    cpu::xent_max(f32(op.maxes), f32(op.logits), matrix_rows(op.logits), matrix_cols(op.logits), op.valid_cols);
  }
  void compute(const XentSumexpOp& op) override {
    cpu::xent_sumexp(f32(op.sumexp), f32(op.target_logit), f32(op.logits), f32(op.maxes), i32(op.targets),
                     matrix_rows(op.logits), matrix_cols(op.logits), op.vocab_start, op.valid_cols);
  }
  void compute(const XentLossOp& op) override {
    cpu::xent_loss(f32(op.losses), f32(op.maxes), f32(op.sumexp), f32(op.target_logit), op.losses.numel());
  }
  void compute(const XentBackwardOp& op) override {
    cpu::xent_backward(f32(op.dlogits), f32(op.logits), f32(op.maxes), f32(op.sumexp), i32(op.targets),
                       matrix_rows(op.logits), matrix_cols(op.logits), op.vocab_start, op.valid_cols, op.dloss);
  }
  // The unfused passes' results, bit for bit, in one pass over each row (see cpu_xent.cpp).
  void compute(const XentFusedOp& op) override {
    cpu::xent_fused(f32(op.losses), f32(op.logits), i32(op.targets), matrix_rows(op.logits), matrix_cols(op.logits),
                    op.valid_cols, op.grad, op.dloss);
  }
  void compute(const AdamWOp& op) override {
    cpu::adamw(f32(op.param), f32(op.grad), f32(op.m), f32(op.v), f32(op.param_copy), op.param.numel(), op.h);
  }
  // The pieces in order, each as its single-tensor op: the same bits.
  void compute(const AdamWManyOp& op) override {
    for (const AdamWOp& p : op.pieces) compute(p);
  }
  double compute(const SumSquaresManyOp& op) override {
    double total = 0;
    for (const Tensor& x : op.xs) total += cpu::sum_squares(f32(x), x.numel());
    return total;
  }

 private:
  std::vector<std::function<void()>> recording_;  // while capturing
  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;
  size_t allocated_ = 0;
  size_t peak_ = 0;
};

}  // namespace

void cpu_enable_flush_denormals() {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#pragma omp parallel
  {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace trainer
