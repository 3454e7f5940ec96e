// Backend: the one interface between the model and the hardware. Memory (alloc, copies,
// memset, synchronize), graph capture (op_graph.h), and one op per struct, forward and
// backward, at llm.c's granularity.
//
// Front doors (ggml's style: ggml_mul_mat checks once, backends only compute):
// - Each op's arguments live in one struct (MatmulOp, ...) that the front door, both
//   implementations, the profiler and the tests share; the structs, each with its contract in
//   words, are in the backend_*_ops.h headers, and op_list.h lists them once (run, compute,
//   the backends' dispatch, MetaBackend and the profile keys are expanded from that list).
// - Backend::run(op) is public and not virtual: it checks the op's whole contract below once
//   (TRAINER_CHECK, a message "<op>: <argument> ..."), times it when an OpProfiler is
//   attached, then calls the protected virtual compute(op). The positional methods
//   (matmul(out, a, b, ...)) build the struct and call run(); they are what the model calls.
// - An implementation checks only its device's limits (sgemm's 32-bit sizes, head sizes and
//   grid limits of CUDA kernels, shared memory) and never repeats the contract.
// - Adding an op: its struct, contract and line in the op list in a backend_*_ops.h header;
//   its check, op_check::check(op, k) (declared from the list in op_checks.h), next to its
//   kin's (backend_ops.cpp, <op>_op_checks.cpp); cpu::run(op) in kernels/cpu/cpu_<op>.cpp with
//   its reference loop in kernels/cpu/reference_<op>.h, and cuda::run(ctx, op) in
//   kernels/cuda/cuda_<op>.cu; its CPU test (tests/kernels/test_cpu_<op>.cpp), a row in
//   tests/kernels/contract_cases.h and one in a parity table (tests/kernels/cuda/parity_*.h).
//   Source lists are globs; a positional form below is a convenience, not a requirement.
//
// Contract (checked by the front door, the same on every backend; tests/kernels check it):
// - Every defined tensor lives on the backend's device. An undefined Tensor (data == nullptr)
//   is an absent optional argument; only arguments marked "optional" may be absent.
// - dtypes: "act" is the backend's activation dtype (activations, their gradients, the compute
//   copy of the weights: f32 on the CPU, bf16 or f32 on CUDA); "f32" is f32 whatever act is
//   (parameter gradients, optimizer state, statistics such as mean, rstd, lse, max, sum-exp,
//   losses); "float" is f32 or act (cast also takes bf16 on every backend); tokens and
//   targets are i32.
// - Shapes: "(R, C)" is a matrix: any tensor whose last dimension is C and whose other
//   dimensions multiply to R, so (B, T, C) may stand where (B*T, C) is asked for. "(n)" is a
//   vector: only the element count is checked. Shapes spelled "exactly" must match dimension
//   by dimension (they define B and T).
// - Aliasing: an output never overlaps another argument, except the in-place forms listed
//   with its op, where it is exactly the same tensor (same pointer, dtype and element count),
//   never a partial overlap. Inputs may overlap each other.
// - Parameter gradients are accumulated (+=), so gradient accumulation over micro-batches
//   needs no extra pass. Activation gradients are overwritten unless an Accumulate argument
//   says otherwise. Linear weights use nn.Linear's layout (out_features, in_features).
// - Ops are asynchronous on devices that are; synchronize() waits. Copies to the host and
//   sum_squares synchronize.
// Where the two backends disagreed before the front doors, the rule is now: layernorm's mean
// and rstd are required (the backward needs them; CUDA used to accept them absent); matrices
// are read as matrices everywhere (CUDA used to ask for exact (B, T, C) outputs in encoder and
// attention); matmul's bias and adamw's param_copy are act (CUDA took any float) and gelu_out
// has out's dtype; a matmul with K = 0 is an empty sum (CUDA used to reject it); the aliasing
// rule is new to both (neither checked overlaps).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend_options.h"
#include "kernels/base/enum_names.h"
#include "kernels/op_graph.h"
#include "kernels/op_list.h"
#include "kernels/op_modes.h"
#include "kernels/tensor.h"

namespace trainer {

class Backend;
class OpProfiler;

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

// Shapes the contract derives, shared by the front doors and the implementations.
// A tensor read as a matrix: the last dimension is the columns, the others fold into rows.
int64_t matrix_rows(const Tensor& t);
int64_t matrix_cols(const Tensor& t);
struct MatmulDims {
  int64_t M = 0, N = 0, K = 0;
};
// M and K from a (and ta), N from b (and tb).
MatmulDims matmul_dims(const MatmulOp& op);
struct AttentionDims {
  int64_t B = 0, T = 0, H = 0, Hkv = 0, D = 0;
  int64_t width() const { return (H + 2 * Hkv) * D; }  // a qkv row
};
// From qkv (B, T, (H + 2*Hkv)*D), n_head and n_kv_head (0: n_head); valid once the front door
// has accepted the op.
AttentionDims attention_dims(const Tensor& qkv, int n_head, int n_kv_head = 0);

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

  // ---- the front doors (backend_ops.cpp): one run(op) per op of the op list (op_list.h) ----
#define TRAINER_DECLARE_RUN(Op, Result, ...) Result run(const Op& op);
  TRAINER_OPS(TRAINER_DECLARE_RUN)
#undef TRAINER_DECLARE_RUN

  // ---- the same front doors, positionally (argument order of the structs) ----
  void encoder_forward(Tensor out, Tensor tokens, Tensor wte, Tensor wpe, int64_t vocab_start, Tensor positions = {}) {
    run(EncoderForwardOp{out, tokens, wte, wpe, vocab_start, positions});
  }
  void encoder_backward(Tensor dwte, Tensor dwpe, Tensor dout, Tensor tokens, int64_t vocab_start,
                        Tensor positions = {}) {
    run(EncoderBackwardOp{dwte, dwpe, dout, tokens, vocab_start, positions});
  }
  void layernorm_forward(Tensor out, Tensor mean, Tensor rstd, Tensor inp, Tensor weight, Tensor bias) {
    run(LayernormForwardOp{out, mean, rstd, inp, weight, bias});
  }
  void layernorm_backward(Tensor dinp, Tensor dweight, Tensor dbias, Tensor dout, Tensor inp, Tensor weight,
                          Tensor mean, Tensor rstd, Accumulate dinp_mode) {
    run(LayernormBackwardOp{dinp, dweight, dbias, dout, inp, weight, mean, rstd, dinp_mode});
  }
  void matmul(Tensor out, Tensor a, Tensor b, Transpose ta, Transpose tb, Tensor bias, Accumulate mode,
              Tensor gelu_out) {
    run(MatmulOp{out, a, b, ta, tb, bias, mode, gelu_out, Tensor{}, Tensor{}, Tensor{}, Tensor{}});
  }
  // out = op(a) x op(b) + bias + residual: a row-parallel layer's product added to the residual.
  void matmul_residual(Tensor out, Tensor a, Tensor b, Transpose ta, Transpose tb, Tensor bias, Tensor residual) {
    run(MatmulOp{out, a, b, ta, tb, bias, Accumulate::overwrite, Tensor{}, residual, Tensor{}, Tensor{}, Tensor{}});
  }
  // out = (op(a) x op(b)) * gelu'(gelu_inp); dbias += its column sums (either may be absent).
  void matmul_gelu_backward(Tensor out, Tensor a, Tensor b, Transpose ta, Transpose tb, Tensor gelu_inp,
                            Tensor dbias) {
    run(MatmulOp{out, a, b, ta, tb, Tensor{}, Accumulate::overwrite, Tensor{}, Tensor{}, gelu_inp, dbias,
                 Tensor{}});
  }
  // A linear layer's parameter gradients from its output gradient dout (rows, out) and input
  // inp (rows, in): dweight (out, in) += dout^T inp; dbias (out) += the column sums of dout
  // (absent: none).
  void linear_weight_backward(Tensor dweight, Tensor dbias, Tensor dout, Tensor inp) {
    run(MatmulOp{dweight, dout, inp, Transpose::transpose, Transpose::none, Tensor{}, Accumulate::add, Tensor{},
                 Tensor{}, Tensor{}, Tensor{}, dbias});
  }
  void bias_backward(Tensor dbias, Tensor dout) { run(BiasBackwardOp{dbias, dout}); }
  void attention_forward(Tensor out, Tensor lse, Tensor qkv, int n_head, int n_kv_head = 0, Tensor doc_start = {}) {
    run(AttentionForwardOp{out, lse, qkv, n_head, n_kv_head, doc_start});
  }
  void attention_backward(Tensor dqkv, Tensor dout, Tensor qkv, Tensor out, Tensor lse, int n_head,
                          int n_kv_head = 0, Tensor doc_start = {}) {
    run(AttentionBackwardOp{dqkv, dout, qkv, out, lse, n_head, n_kv_head, doc_start});
  }
  void attention_block_forward(Tensor out, Tensor lse, Tensor qkv, Tensor kv, Tensor q_pos, Tensor k_pos, Tensor q_doc,
                               int n_head, int n_kv_head = 0) {
    run(AttentionBlockForwardOp{out, lse, qkv, kv, q_pos, k_pos, q_doc, n_head, n_kv_head});
  }
  void attention_block_backward(Tensor dq, Tensor dkv, Tensor dout, Tensor qkv, Tensor kv, Tensor out, Tensor lse,
                                Tensor q_pos, Tensor k_pos, Tensor q_doc, int n_head, int n_kv_head = 0) {
    run(AttentionBlockBackwardOp{dq, dkv, dout, qkv, kv, out, lse, q_pos, k_pos, q_doc, n_head, n_kv_head});
  }
  void attention_cached(Tensor out, Tensor k_cache, Tensor v_cache, Tensor qkv, int n_head, int n_kv_head,
                        int64_t past) {
    run(AttentionCachedOp{out, k_cache, v_cache, qkv, n_head, n_kv_head, past});
  }
  void rmsnorm_forward(Tensor out, Tensor rstd, Tensor inp, Tensor weight, float eps) {
    run(RmsnormForwardOp{out, rstd, inp, weight, eps});
  }
  void rmsnorm_backward(Tensor dinp, Tensor dweight, Tensor dout, Tensor inp, Tensor weight, Tensor rstd,
                        Accumulate dinp_mode) {
    run(RmsnormBackwardOp{dinp, dweight, dout, inp, weight, rstd, dinp_mode});
  }
  void head_rmsnorm_forward(Tensor out, Tensor rstd, Tensor inp, Tensor q_weight, Tensor k_weight, int n_head,
                            int n_kv_head, float eps) {
    run(HeadRmsnormForwardOp{out, rstd, inp, q_weight, k_weight, n_head, n_kv_head, eps});
  }
  void head_rmsnorm_backward(Tensor dinp, Tensor dq_weight, Tensor dk_weight, Tensor dout, Tensor inp,
                             Tensor q_weight, Tensor k_weight, Tensor rstd, int n_head, int n_kv_head) {
    run(HeadRmsnormBackwardOp{dinp, dq_weight, dk_weight, dout, inp, q_weight, k_weight, rstd, n_head, n_kv_head});
  }
  void rope_forward(Tensor out, Tensor inp, Tensor inv_freq, int n_head, int n_kv_head, int64_t pos_offset,
                    Tensor positions = {}) {
    run(RopeForwardOp{out, inp, inv_freq, n_head, n_kv_head, pos_offset, positions});
  }
  void rope_backward(Tensor dinp, Tensor dout, Tensor inv_freq, int n_head, int n_kv_head, int64_t pos_offset,
                     Tensor positions = {}) {
    run(RopeBackwardOp{dinp, dout, inv_freq, n_head, n_kv_head, pos_offset, positions});
  }
  void swiglu_forward(Tensor out, Tensor inp) { run(SwigluForwardOp{out, inp}); }
  void swiglu_backward(Tensor dinp, Tensor inp, Tensor dout) { run(SwigluBackwardOp{dinp, inp, dout}); }
  void gelu_forward(Tensor out, Tensor inp) { run(GeluForwardOp{out, inp}); }
  void gelu_backward(Tensor dinp, Tensor inp, Tensor dout) { run(GeluBackwardOp{dinp, inp, dout}); }
  void add(Tensor out, Tensor a, Tensor b) { run(AddOp{out, a, b}); }
  void scale(Tensor x, float alpha) { run(ScaleOp{x, alpha}); }
  void fill(Tensor x, float value) { run(FillOp{x, value}); }
  void init_normal(Tensor out, const NormalFill& fill) { run(InitNormalOp{out, fill}); }
  void cast(Tensor dst, Tensor src) { run(CastOp{dst, src}); }
  double sum_squares(Tensor x) { return run(SumSquaresOp{x}); }
  void xent_max(Tensor maxes, Tensor logits, int64_t valid_cols) { run(XentMaxOp{maxes, logits, valid_cols}); }
  void xent_sumexp(Tensor sumexp, Tensor target_logit, Tensor logits, Tensor maxes, Tensor targets,
                   int64_t vocab_start, int64_t valid_cols) {
    run(XentSumexpOp{sumexp, target_logit, logits, maxes, targets, vocab_start, valid_cols});
  }
  void xent_loss(Tensor losses, Tensor maxes, Tensor sumexp, Tensor target_logit) {
    run(XentLossOp{losses, maxes, sumexp, target_logit});
  }
  void xent_backward(Tensor dlogits, Tensor logits, Tensor maxes, Tensor sumexp, Tensor targets,
                     int64_t vocab_start, int64_t valid_cols, float dloss) {
    run(XentBackwardOp{dlogits, logits, maxes, sumexp, targets, vocab_start, valid_cols, dloss});
  }
  void xent_fused(Tensor losses, Tensor logits, Tensor targets, int64_t valid_cols, XentGrad grad, float dloss) {
    run(XentFusedOp{losses, logits, targets, valid_cols, grad, dloss});
  }
  void adamw(Tensor param, Tensor grad, Tensor m, Tensor v, Tensor param_copy, const AdamWStep& h) {
    run(AdamWOp{param, grad, m, v, param_copy, h});
  }
  void adamw_many(std::vector<AdamWOp> pieces) { run(AdamWManyOp{std::move(pieces)}); }
  double sum_squares_many(std::vector<Tensor> xs) { return run(SumSquaresManyOp{std::move(xs)}); }

  // Every op that passes a front door is timed by `profiler` (null: none) until it is
  // detached; OpProfiler attaches and detaches itself.
  void set_op_profiler(OpProfiler* profiler) { profiler_ = profiler; }

  // ---- graph capture (op_graph.h; train.graphs) ----
  // Between begin_capture and end_capture the device work this backend is given (ops, copy,
  // memset_zero) is captured, not run; end_capture returns it as one OpGraph. While capturing,
  // what needs the host to wait or the device to allocate is a logic_error naming it: copies
  // to or from the host, synchronize, alloc, and the ops that return a host value
  // (sum_squares, sum_squares_many); so is a profiler attached. abort_capture ends a capture
  // that failed half way (nothing is kept). Backends without capture refuse begin_capture.
  void begin_capture();
  std::unique_ptr<OpGraph> end_capture();
  void abort_capture() noexcept;
  bool capturing() const { return capturing_; }

 protected:
  // The backend's side of capture: the CPU records (op_recording_), CUDA captures its stream.
  virtual void start_capture();
  virtual std::unique_ptr<OpGraph> finish_capture();
  virtual void cancel_capture() noexcept {}
  // Throws the logic_error above when capturing; `what` names the call.
  void refuse_while_capturing(const char* what) const;
  // For calls that must not throw (raw_free from a destructor): while capturing, remembers
  // `what`, and end_capture then throws that logic_error instead of returning a graph.
  void spoil_capture(const char* what) noexcept;
  // Where the backend records rather than captures: each op that passes a front door while
  // capturing is appended here as a closure that computes it, and not computed.
  std::vector<std::function<void()>>* op_recording_ = nullptr;

  // The implementations: the contract holds; only the device's own limits are left to check.
#define TRAINER_DECLARE_COMPUTE(Op, Result, ...) virtual Result compute(const Op& op) = 0;
  TRAINER_OPS(TRAINER_DECLARE_COMPUTE)
#undef TRAINER_DECLARE_COMPUTE

 private:
  // Check, time when profiled, compute: the body of every front door.
  template <class Op>
  auto enter(const Op& op);

  OpProfiler* profiler_ = nullptr;
  [[noreturn]] void refuse_while_capturing_text(const char* what) const;

  bool capturing_ = false;
  const char* spoiled_by_ = nullptr;
};

}  // namespace trainer
