// Backend: the one interface between the model and the hardware. Memory (alloc, copies,
// memset, synchronize) plus one method per op, forward and backward, at llm.c's granularity.
//
// Conventions every implementation keeps (the tests in tests/kernels check them):
// - "act" tensors (activations, their gradients, the compute copy of the weights) have the
//   backend's activation dtype: f32 on the CPU, bf16 or f32 on CUDA. Parameter gradients,
//   optimizer state and statistics (mean, rstd, lse, max, sum-exp, losses) are always f32;
//   tokens and targets are i32.
// - Parameter gradients are accumulated (+=), so gradient accumulation over micro-batches
//   needs no extra pass. Activation gradients are overwritten unless an Accumulate argument
//   says otherwise.
// - Linear weights use nn.Linear's layout (out_features, in_features).
// - An undefined Tensor (data == nullptr) is an absent optional argument.
// - Ops are asynchronous on devices that are; synchronize() waits. Copies to the host and
//   sum_squares() synchronize.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/tensor.h"

namespace trainer {

enum class Accumulate : uint8_t { overwrite, add };
enum class Transpose : uint8_t { none, transpose };

class Backend;

// Owning device memory obtained from a Backend; freed on destruction. Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend* backend, size_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // A view of the whole buffer (or its first elements) as a tensor.
  Tensor tensor(DType dtype, std::initializer_list<int64_t> shape) const;

 private:
  Backend* backend_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// One AdamW step over a contiguous range (decoupled weight decay, bias correction).
struct AdamWStep {
  float lr = 0;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0;  // already 0 for tensors that are not decayed
  float grad_scale = 1;    // multiplies the gradient first (grad-norm clipping)
  int64_t step = 1;        // 1-based, for bias correction
  uint64_t seed = 0;       // stochastic rounding of the low-precision copy (CUDA), keyed by
  uint64_t offset = 0;     // (seed, element offset within the rank's slice of the tensor)
};

// Memory of the device as the device itself reports it: for a GPU what the driver says is
// used (the context, library workspaces and other processes included), for the CPU the host's
// MemTotal and MemAvailable.
struct DeviceMemory {
  int64_t total_bytes = 0;
  int64_t free_bytes = 0;
  int64_t used_bytes() const { return total_bytes - free_bytes; }
};

// Times device work without a synchronisation per region: record() marks a point in the
// backend's queue (a CUDA event on the compute stream, a clock reading on the CPU, whose ops
// are synchronous) and returns its index; seconds(a, b) is the time between two marks, waiting
// for b if needed. reset() forgets all marks (their storage is reused).
class EventTimer {
 public:
  virtual ~EventTimer() = default;
  virtual int record() = 0;
  virtual double seconds(int from, int to) = 0;
  virtual void reset() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  // "cpu", "cuda:0 (bf16)": the backend and its settings.
  virtual std::string name() const = 0;
  // The hardware's own name: the GPU's as the driver reports it ("NVIDIA H200"), the CPU's
  // model name from /proc/cpuinfo.
  virtual std::string device_name() const = 0;
  virtual DeviceMemory device_memory() const = 0;
  virtual std::unique_ptr<EventTimer> make_event_timer() = 0;
  // Dtype of activations and of the compute copy of the weights.
  virtual DType act_dtype() const = 0;

  // ---- memory ----
  Buffer alloc(size_t bytes) { return Buffer(this, bytes); }
  virtual void* raw_alloc(size_t bytes) = 0;
  virtual void raw_free(void* ptr) = 0;
  virtual void copy_from_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // device to device
  virtual void memset_zero(void* dst, size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Bytes currently allocated through this backend and the peak since construction.
  virtual size_t allocated_bytes() const = 0;
  virtual size_t peak_allocated_bytes() const = 0;

  // ---- encoder ----
  // out[b,t,:] = wte[tok - vocab_start] if vocab_start <= tok < vocab_start + Vl, else 0;
  // plus wpe[t] when wpe is defined. The zero rows make a vocabulary-parallel embedding a
  // sum over the tensor group.
  // out (B,T,C) act; tokens (B,T) i32; wte (Vl,C) act; wpe (>=T,C) act or undefined.
  virtual void encoder_forward(Tensor out, Tensor tokens, Tensor wte, Tensor wpe,
                               int64_t vocab_start) = 0;
  // dwte (Vl,C) f32 +=; dwpe (>=T,C) f32 += or undefined; dout (B,T,C) act.
  // Deterministic: no floating-point atomics.
  virtual void encoder_backward(Tensor dwte, Tensor dwpe, Tensor dout, Tensor tokens,
                                int64_t vocab_start) = 0;

  // ---- layernorm (eps 1e-5) ----
  // out (N,C) act; mean, rstd (N) f32; inp (N,C) act; weight, bias (C) act.
  virtual void layernorm_forward(Tensor out, Tensor mean, Tensor rstd, Tensor inp, Tensor weight,
                                 Tensor bias) = 0;
  // dinp (N,C) act (overwritten or added per dinp_mode); dweight, dbias (C) f32 +=.
  virtual void layernorm_backward(Tensor dinp, Tensor dweight, Tensor dbias, Tensor dout,
                                  Tensor inp, Tensor weight, Tensor mean, Tensor rstd,
                                  Accumulate dinp_mode) = 0;

  // ---- matmul ----
  // out (M,N) = op(a) (M,K) x op(b) (K,N) [+ bias (N) broadcast over rows]; with
  // Accumulate::add the product is added to out. If gelu_out is defined (only with
  // Accumulate::overwrite) it receives gelu(out) as well (a fused epilogue where it pays).
  // a, b act; out act or f32 (f32 is how weight gradients are accumulated); bias act.
  virtual void matmul(Tensor out, Tensor a, Tensor b, Transpose ta, Transpose tb, Tensor bias,
                      Accumulate mode, Tensor gelu_out) = 0;
  // dbias (N) f32 += column sums of dout (M,N) act.
  virtual void bias_backward(Tensor dbias, Tensor dout) = 0;

  // ---- attention (causal, scale 1/sqrt(head_dim)) ----
  // qkv (B,T,3*H*D) act laid out [q heads | k heads | v heads]; out (B,T,H*D) act;
  // lse (B,H,T) f32 log-sum-exp of each softmax row, saved for backward.
  virtual void attention_forward(Tensor out, Tensor lse, Tensor qkv, int n_head) = 0;
  // dqkv (B,T,3*H*D) act overwritten; dout, out (B,T,H*D) act.
  virtual void attention_backward(Tensor dqkv, Tensor dout, Tensor qkv, Tensor out, Tensor lse,
                                  int n_head) = 0;

  // ---- element-wise ----
  // GELU, tanh approximation. dinp may alias dout.
  virtual void gelu_forward(Tensor out, Tensor inp) = 0;
  virtual void gelu_backward(Tensor dinp, Tensor inp, Tensor dout) = 0;
  // out = a + b (residual); out may alias a or b. Any dtype pair the backend supports
  // (act + act, f32 + f32).
  virtual void add(Tensor out, Tensor a, Tensor b) = 0;
  virtual void scale(Tensor x, float alpha) = 0;
  virtual void fill(Tensor x, float value) = 0;
  // Element-wise conversion between f32 and act dtypes (same numel).
  virtual void cast(Tensor dst, Tensor src) = 0;
  // Sum of squares of x (f32 or act) in double precision; synchronizes.
  virtual double sum_squares(Tensor x) = 0;

  // ---- softmax cross-entropy over the (local slice of the) vocabulary ----
  // Split in three passes so that a vocabulary-parallel caller can reduce the row max, the
  // sum of exponentials and the target logit across its tensor group in between.
  // logits (N,Vl) act; only the first valid_cols columns are real vocabulary (padding is
  // ignored); targets (N) i32 are global ids, local column = target - vocab_start.
  // maxes (N) f32 = row max over valid columns.
  virtual void xent_max(Tensor maxes, Tensor logits, int64_t valid_cols) = 0;
  // sumexp (N) f32 = sum over valid columns of exp(logit - maxes); target_logit (N) f32 = the
  // target's logit when it falls in this slice, else 0.
  virtual void xent_sumexp(Tensor sumexp, Tensor target_logit, Tensor logits, Tensor maxes,
                           Tensor targets, int64_t vocab_start, int64_t valid_cols) = 0;
  // losses (N) f32 = log(sumexp) + maxes - target_logit.
  virtual void xent_loss(Tensor losses, Tensor maxes, Tensor sumexp, Tensor target_logit) = 0;
  // dlogits (N,Vl) act = dloss * (softmax - onehot(target)) on valid columns, 0 on padding.
  // dlogits may alias logits (the logits are not needed afterwards).
  virtual void xent_backward(Tensor dlogits, Tensor logits, Tensor maxes, Tensor sumexp,
                             Tensor targets, int64_t vocab_start, int64_t valid_cols,
                             float dloss) = 0;

  // ---- optimizer ----
  // AdamW on one contiguous range: param (n) f32 master, grad (n) f32, m, v (n) f32;
  // param_copy (n) act receives the updated weights in the compute dtype (undefined when the
  // master is itself the compute copy).
  virtual void adamw(Tensor param, Tensor grad, Tensor m, Tensor v, Tensor param_copy,
                     const AdamWStep& h) = 0;
};

// Which backend a recipe asked for. auto picks CUDA when a GPU is present.
enum class DeviceChoice : uint8_t { cpu, cuda, auto_detect };
enum class Precision : uint8_t { fp32, bf16 };
// CUDA attention kernels: our own flash-style kernels or cuDNN's fused attention.
enum class AttentionImpl : uint8_t { auto_detect, flash, cudnn };

struct BackendOptions {
  DeviceChoice device = DeviceChoice::auto_detect;
  Precision precision = Precision::fp32;  // bf16 only on CUDA
  AttentionImpl attention = AttentionImpl::auto_detect;
  bool stochastic_rounding = true;  // bf16 copy of the weights after AdamW (CUDA)
  int local_rank = 0;               // picks the GPU: local_rank % device count
};

// True when this build has CUDA and a GPU answers (any error counts as "no GPU").
bool cuda_available();
bool cuda_compiled();
// Resolves device auto and builds the backend. A request that cannot be met (cuda without a
// GPU or in a build without CUDA, bf16 on the CPU) throws ConfigError naming what is valid.
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

}  // namespace trainer
