// cuDNN fused causal attention (cudnn_attention.h). The graphs follow cudnn-frontend's
// composite SDPA node (its forward and its non-ragged, no-dropout backward), written against
// the backend API: S = Q K^T * scale, a causal mask from generated row/column indices
// (row >= col keeps the score), softmax with Stats = max + log(sum exp), O = P V; backward
// recomputes P from Stats, with softmax_sum = rowsum(dO * O). GQA: K and V have Hkv heads and
// the matmuls broadcast them over their groups; dK and dV are computed per query head and
// reduced over each group inside the graph. Compiled to nothing without cuDNN.
#ifdef TRAINER_HAVE_CUDNN

#include "kernels/cuda/cudnn_attention.h"

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/cuda/cuda_check.h"

namespace trainer::cuda {

namespace {

using Uid = CudnnGraph::Uid;
using Kind = CudnnTensorKind;
constexpr cudnnDataType_t kF32 = CUDNN_DATA_FLOAT;
constexpr cudnnDataType_t kBf16 = CUDNN_DATA_BFLOAT16;

std::string shape_text(const AttentionDims& s) {
  return "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " H=" + std::to_string(s.H) +
         " Hkv=" + std::to_string(s.Hkv) + " D=" + std::to_string(s.D);
}

void require_supported(const AttentionDims& s, std::initializer_list<const Tensor*> acts) {
  for (const Tensor* t : acts) {
    if (t->dtype != DType::bf16)
      throw ConfigError(std::string("train.attention: cudnn needs bf16 activations, got ") +
                        dtype_name(t->dtype) + "; valid with fp32: flash, auto");
    TRAINER_CHECK(aligned16(t->data), "cuDNN attention: a tensor is not 16-byte aligned (" + shape_text(s) + ")");
  }
  if (s.D % 8 != 0 || s.D > 128)
    throw ConfigError("train.attention: cudnn needs a head size that is a multiple of 8 and at most 128, got " +
                      std::to_string(s.D) + "; valid for this model: flash, auto");
}

}  // namespace

// The graph and the unique ids of the tensors the variant pack names.
struct CudnnAttention::Plan {
  CudnnGraph graph;
  Uid q = 0, kt = 0, v = 0, o = 0, stats = 0, scale = 0, negative_inf = 0;
  Uid dout = 0, dq = 0, dk = 0, dv = 0, one = 0, softmax_sum = 0, dq_accum = CudnnGraph::kNone;
};

namespace {

// Strided views of one qkv (or dqkv) row block: (B, heads, T, D) starting at column `col`.
struct QkvViews {
  const AttentionDims& s;
  int64_t W() const { return s.width(); }
  Dims4 heads_dims(int64_t heads) const { return {s.B, heads, s.T, s.D}; }
  Dims4 rows() const { return {s.T * W(), s.D, W(), 1}; }          // (B, heads, T, D) in a qkv
  Dims4 rows_t() const { return {s.T * W(), s.D, 1, W()}; }        // (B, heads, D, T) in a qkv
  Dims4 out_rows() const { return {s.T * s.H * s.D, s.D, s.H * s.D, 1}; }  // (B, H, T, D) in out
  Dims4 scores() const { return {s.B, s.H, s.T, s.T}; }
  Dims4 scores_strides() const { return {s.H * s.T * s.T, s.T * s.T, s.T, 1}; }
  Dims4 scores_t_strides() const { return {s.H * s.T * s.T, s.T * s.T, 1, s.T}; }
  Dims4 per_row() const { return {s.B, s.H, s.T, 1}; }
  Dims4 per_row_strides() const { return {s.H * s.T, s.T, 1, 1}; }
  Dims4 packed_strides() const { return {s.H * s.T * s.D, s.T * s.D, s.D, 1}; }  // (B, H, T, D) dense
};

// Scores after scale and the causal mask: mask(x) keeps x where row >= col, else negative_inf.
Uid causal_mask(CudnnGraph& g, const QkvViews& L, Uid x, Uid negative_inf) {
  const Uid row = g.tensor(L.scores(), L.scores_strides(), CUDNN_DATA_INT32, Kind::virtual_);
  const Uid col = g.tensor(L.scores(), L.scores_strides(), CUDNN_DATA_INT32, Kind::virtual_);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, kF32, x, row, CudnnGraph::kNone, CudnnGraph::kNone, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, kF32, x, col, CudnnGraph::kNone, CudnnGraph::kNone, 3);
  const Uid keep = g.tensor(L.scores(), L.scores_strides(), CUDNN_DATA_BOOLEAN, Kind::virtual_);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, keep, col);
  const Uid masked = g.tensor(L.scores(), L.scores_strides(), kF32, Kind::virtual_);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, kF32, x, masked, negative_inf, keep);
  return masked;
}

Uid scores_f32(CudnnGraph& g, const QkvViews& L) {
  return g.tensor(L.scores(), L.scores_strides(), kF32, Kind::virtual_);
}

void build_forward(CudnnAttention::Plan& p, const AttentionDims& s) {
  CudnnGraph& g = p.graph;
  const QkvViews L{s};
  p.q = g.tensor(L.heads_dims(s.H), L.rows(), kBf16, Kind::device);
  p.kt = g.tensor({s.B, s.Hkv, s.D, s.T}, L.rows_t(), kBf16, Kind::device);
  p.v = g.tensor(L.heads_dims(s.Hkv), L.rows(), kBf16, Kind::device);
  p.o = g.tensor(L.heads_dims(s.H), L.out_rows(), kBf16, Kind::device);
  p.stats = g.tensor(L.per_row(), L.per_row_strides(), kF32, Kind::device);
  p.scale = g.scalar();
  p.negative_inf = g.scalar();

  const Uid raw = scores_f32(g, L);
  g.matmul(p.q, p.kt, raw);
  const Uid scaled = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, raw, scaled, p.scale);
  const Uid masked = causal_mask(g, L, scaled, p.negative_inf);

  const Uid max = g.tensor(L.per_row(), L.per_row_strides(), kF32, Kind::virtual_);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, masked, max);
  const Uid shifted = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_SUB, kF32, masked, shifted, max);
  const Uid e = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_EXP, kF32, shifted, e);
  const Uid sum = g.tensor(L.per_row(), L.per_row_strides(), kF32, Kind::virtual_);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  const Uid log_sum = g.tensor(L.per_row(), L.per_row_strides(), kF32, Kind::virtual_);
  g.pointwise(CUDNN_POINTWISE_LOG, kF32, sum, log_sum);
  g.pointwise(CUDNN_POINTWISE_ADD, kF32, max, p.stats, log_sum);
  // The second matmul takes P in the I/O type (a backend requirement).
  const Uid prob = g.tensor(L.scores(), L.scores_strides(), kBf16, Kind::virtual_);
  g.pointwise(CUDNN_POINTWISE_DIV, kF32, e, prob, sum);
  g.matmul(prob, p.v, p.o);
}

// out = a @ b into a (B, Hkv, ., D) gradient: directly when Hkv == H, else through a per-query-
// head (B, H, T, D) product reduced over each group of H / Hkv heads.
void grouped_matmul(CudnnGraph& g, const QkvViews& L, Uid a, Uid b, Uid out) {
  if (L.s.Hkv == L.s.H) {
    g.matmul(a, b, out);
    return;
  }
  const Uid full = g.tensor(L.heads_dims(L.s.H), L.packed_strides(), kBf16, Kind::virtual_);
  g.matmul(a, b, full);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, out);
}

void build_backward(CudnnAttention::Plan& p, const AttentionDims& s, CudnnDq dq) {
  CudnnGraph& g = p.graph;
  const QkvViews L{s};
  p.q = g.tensor(L.heads_dims(s.H), L.rows(), kBf16, Kind::device);
  p.kt = g.tensor({s.B, s.Hkv, s.D, s.T}, L.rows_t(), kBf16, Kind::device);
  const Uid vt = g.tensor({s.B, s.Hkv, s.D, s.T}, L.rows_t(), kBf16, Kind::device);
  p.v = vt;
  p.o = g.tensor(L.heads_dims(s.H), L.out_rows(), kBf16, Kind::device);
  p.dout = g.tensor(L.heads_dims(s.H), L.out_rows(), kBf16, Kind::device);
  p.stats = g.tensor(L.per_row(), L.per_row_strides(), kF32, Kind::device);
  p.dq = g.tensor(L.heads_dims(s.H), L.rows(), kBf16, Kind::device);
  p.dk = g.tensor(L.heads_dims(s.Hkv), L.rows(), kBf16, Kind::device);
  p.dv = g.tensor(L.heads_dims(s.Hkv), L.rows(), kBf16, Kind::device);
  p.scale = g.scalar();
  p.negative_inf = g.scalar();
  p.one = g.scalar();
  p.softmax_sum = g.tensor(L.per_row(), L.per_row_strides(), kF32, Kind::device);  // scratch

  // softmax_sum = rowsum(dO * O)
  const Uid dout_out = g.tensor(L.heads_dims(s.H), {s.H * s.T * s.D, s.T * s.D, s.H * s.D, 1}, kF32, Kind::virtual_);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, p.dout, dout_out, p.o);
  const Uid row_sum = g.tensor(L.per_row(), L.per_row_strides(), kF32, Kind::virtual_);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, dout_out, row_sum);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, row_sum, p.softmax_sum, p.one);

  // P = exp(mask(Q K^T * scale - Stats))
  const Uid raw = scores_f32(g, L);
  g.matmul(p.q, p.kt, raw);
  const Uid scaled = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, raw, scaled, p.scale);
  const Uid centred = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_SUB, kF32, scaled, centred, p.stats);
  const Uid masked = causal_mask(g, L, centred, p.negative_inf);
  const Uid prob = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_EXP, kF32, masked, prob);

  // dV = P^T dO
  const Uid prob_t = g.tensor(L.scores(), L.scores_t_strides(), kBf16, Kind::virtual_);
  g.reshape(prob, prob_t);
  grouped_matmul(g, L, prob_t, p.dout, p.dv);

  // dS = P * (dO V^T - softmax_sum) * scale
  const Uid dprob = scores_f32(g, L);
  g.matmul(p.dout, vt, dprob);
  const Uid dprob_centred = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_SUB, kF32, dprob, dprob_centred, p.softmax_sum);
  const Uid dscore_unscaled = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, dprob_centred, dscore_unscaled, prob);
  const Uid dscore = scores_f32(g, L);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, dscore_unscaled, dscore, p.scale);

  // dK = dS^T Q
  const Uid dscore_t = g.tensor(L.scores(), L.scores_t_strides(), kBf16, Kind::virtual_);
  g.reshape(dscore, dscore_t);
  grouped_matmul(g, L, dscore_t, p.q, p.dk);

  // dQ = dS K
  // f32, as cudnn-frontend's reshape infers for a virtual output (the context's intermediate type).
  const Uid k = g.tensor(L.heads_dims(s.Hkv), L.rows(), kF32, Kind::virtual_);
  g.reshape(p.kt, k);
  if (dq == CudnnDq::direct) {
    g.matmul(dscore, k, p.dq);
  } else {
    p.dq_accum = g.tensor(L.heads_dims(s.H), L.packed_strides(), kF32, Kind::device);  // scratch
    g.matmul(dscore, k, p.dq_accum);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, kF32, p.dq_accum, p.dq);
  }
}

}  // namespace

bool cudnn_backward_supported(int64_t T) { return T > 1 && (cudnnGetVersion() > 91500 || T % 128 == 0); }

CudnnAttention::CudnnAttention(cudaStream_t stream, CudnnDq dq) : dq_(dq) {
  const size_t version = cudnnGetVersion();
  if (version < 90000 || version == 91000 || version == 91001)
    throw ConfigError("train.attention: cudnn needs cuDNN 9.0 or newer other than 9.10.0 and 9.10.1 (known bf16 "
                      "attention bugs), found " + cudnn_version_string() + "; valid: flash, auto");
  int device = 0;
  cudaDeviceProp prop{};
  TRAINER_CUDA_CHECK(cudaGetDevice(&device));
  TRAINER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  if (prop.major >= 10 && dq == CudnnDq::direct)
    throw ConfigError(std::string("train.attention: cudnn on ") + prop.name + " (sm_" + std::to_string(prop.major) +
                      std::to_string(prop.minor) + ") is not supported: its deterministic backward needs engine "
                      "overrides this build does not set; valid: flash, auto");
  negative_inf_ = version < 91000 ? -FLT_MAX : -std::numeric_limits<float>::infinity();
  TRAINER_CUDNN_CHECK(cudnnCreate(&handle_));
  TRAINER_CUDNN_CHECK(cudnnSetStream(handle_, stream));
}

CudnnAttention::~CudnnAttention() {
  plans_.clear();
  if (handle_) cudnnDestroy(handle_);  // teardown: nothing to report to
}

CudnnAttention::Plan& CudnnAttention::plan(const AttentionDims& s, Direction direction) {
  const Key key{s.B, s.T, s.H, s.Hkv, s.D, direction};
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  if (direction == Direction::forward)
    build_forward(*p, s);
  else
    build_backward(*p, s, dq_);
  if (!p->graph.build(handle_))
    throw ConfigError(std::string("train.attention: cudnn has no engine for the ") +
                      (direction == Direction::forward ? "forward" : "backward") + " pass at " + shape_text(s) +
                      (direction == Direction::backward && dq_ == CudnnDq::direct ? " (deterministic dQ)" : "") +
                      " with cuDNN " + cudnn_version_string() + " on this GPU (" + p->graph.refusal() +
                      "); valid: flash, auto");
  return *plans_.emplace(key, std::move(p)).first->second;
}

namespace {

// The recipe refuses train.attention: cudnn with attention_mask: document; a call that gets
// here with one anyway must not run causal attention in its place.
void refuse_document_mask(const Tensor& doc_start) {
  if (doc_start.defined())
    throw ConfigError("train.attention: cudnn does not implement train.attention_mask: document (its variable-length "
                      "support is not wired here); valid: train.attention: flash or auto with document masks");
}

}  // namespace

void CudnnAttention::forward(const Context& ctx, const AttentionForwardOp& op) {
  refuse_document_mask(op.doc_start);
  const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
  require_supported(s, {&op.out, &op.qkv});
  TRAINER_CHECK(aligned16(op.lse.data), "cuDNN attention: lse is not 16-byte aligned (" + shape_text(s) + ")");
  // Per call, as the scratch below follows ctx.stream: the handle must run where it does.
  TRAINER_CUDNN_CHECK(cudnnSetStream(handle_, ctx.stream));
  Plan& p = plan(s, Direction::forward);
  auto* qkv = static_cast<char*>(op.qkv.data);
  const int64_t bytes = 2;  // bf16
  float scale = 1.0f / std::sqrt(float(s.D));
  float negative_inf = negative_inf_;
  const size_t workspace_bytes = size_t(p.graph.workspace_bytes());
  void* workspace = workspace_bytes ? ctx.workspace->get(workspace_bytes) : nullptr;
  p.graph.execute(handle_, {p.q, p.kt, p.v, p.o, p.stats, p.scale, p.negative_inf},
                  {qkv, qkv + s.H * s.D * bytes, qkv + (s.H + s.Hkv) * s.D * bytes, op.out.data, op.lse.data,
                   &scale, &negative_inf},
                  workspace);
}

void CudnnAttention::backward(const Context& ctx, const AttentionBackwardOp& op) {
  refuse_document_mask(op.doc_start);
  const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
  require_supported(s, {&op.dqkv, &op.dout, &op.qkv, &op.out});
  TRAINER_CHECK(aligned16(op.lse.data), "cuDNN attention: lse is not 16-byte aligned (" + shape_text(s) + ")");
  TRAINER_CUDNN_CHECK(cudnnSetStream(handle_, ctx.stream));
  if (!cudnn_backward_supported(s.T))
    throw ConfigError("train.attention: cudnn cannot run the backward pass at sequence length " + std::to_string(s.T) +
                      " with cuDNN " + cudnn_version_string() +
                      (s.T == 1 ? "" : " (before 9.15.1 it needs a multiple of 128)") + "; valid: flash, auto");
  Plan& p = plan(s, Direction::backward);
  auto* qkv = static_cast<char*>(op.qkv.data);
  auto* dqkv = static_cast<char*>(op.dqkv.data);
  const int64_t bytes = 2;  // bf16
  const int64_t k_offset = s.H * s.D * bytes, v_offset = (s.H + s.Hkv) * s.D * bytes;
  float scale = 1.0f / std::sqrt(float(s.D));
  float negative_inf = negative_inf_;
  float one = 1.0f;

  const bool accumulate = p.dq_accum != CudnnGraph::kNone;
  const size_t rows = size_t(s.B * s.H * s.T);
  auto carve = [&](ScratchCarver& c, char*& plan_ws, float*& softmax_sum, float*& dq_accum) {
    plan_ws = c.take<char>(size_t(p.graph.workspace_bytes()));
    softmax_sum = c.take<float>(rows);
    dq_accum = accumulate ? c.take<float>(rows * size_t(s.D)) : nullptr;
  };
  char* plan_ws = nullptr;
  float *softmax_sum = nullptr, *dq_accum = nullptr;
  ScratchCarver sizing(nullptr);
  carve(sizing, plan_ws, softmax_sum, dq_accum);
  ScratchCarver carver(ctx.workspace->get(sizing.bytes()));
  carve(carver, plan_ws, softmax_sum, dq_accum);
  // cuDNN zeroes its f32 dQ accumulator itself from 9.6 on (cudnn-frontend memsets it before).
  if (accumulate && cudnnGetVersion() < 90600)
    TRAINER_CUDA_CHECK(cudaMemsetAsync(dq_accum, 0, rows * size_t(s.D) * sizeof(float), ctx.stream));

  std::vector<Uid> uids{p.q,  p.kt, p.v,     p.o,      p.dout,         p.stats,      p.dq,
                        p.dk, p.dv, p.scale, p.negative_inf, p.one, p.softmax_sum};
  std::vector<void*> pointers{qkv,          qkv + k_offset,  qkv + v_offset, op.out.data, op.dout.data,
                              op.lse.data, dqkv,           dqkv + k_offset, dqkv + v_offset, &scale,
                              &negative_inf, &one,           softmax_sum};
  if (accumulate) {
    uids.push_back(p.dq_accum);
    pointers.push_back(dq_accum);
  }
  p.graph.execute(handle_, uids, pointers, plan_ws);
}

}  // namespace trainer::cuda

#endif  // TRAINER_HAVE_CUDNN
