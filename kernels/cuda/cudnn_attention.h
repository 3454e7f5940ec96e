// train.attention: cudnn — causal attention through cuDNN's fused scaled-dot-product-attention
// graphs (forward and backward), with the same contract as attention_forward / _backward
// (backend.h): packed qkv (B, T, (H + 2*Hkv)*D) read in place through strided views, out
// (B*T, H*D), lse (B, H, T) f32 = the natural-log log-sum-exp of each scaled score row (cuDNN's
// "Stats"), so its forward and the hand-written backward (or the reverse) can be mixed.
// Limits: bf16 tensors, head size a multiple of 8 and at most 128, cuDNN >= 9.0 but not 9.10.0 or
// 9.10.1 (cudnn-frontend refuses those for bf16 attention: known bugs), backward as
// cudnn_backward_supported says, and not on Blackwell (its deterministic backward needs engine
// overrides cudnn-frontend hard-codes; not done here); anything else is a ConfigError naming the
// value ("valid: flash"), never a silent fallback.
// Plans are built once per (B, T, H, Hkv, D) and direction, on first use, and cached.
//
// Backward's dQ: cuDNN either writes dQ directly from a dP workspace (CudnnDq::direct,
// deterministic run to run) or accumulates it in f32 with atomics (CudnnDq::accumulate,
// cuDNN's default, not deterministic). The backend uses direct, because the CUDA path promises
// bit-identical runs (cuda_ops.h); the tests run both against the CPU. Scratch (the plan's
// workspace, which in direct mode holds dP, about B*H*T*T*2 bytes by cudnn-frontend's sizing,
// plus softmax_sum and any f32 dQ) comes from the backend's workspace; `trainer plan` does not
// count it yet.
// Only built with cuDNN (TRAINER_HAVE_CUDNN).
#pragma once

#include <cudnn.h>

#include <map>
#include <memory>
#include <tuple>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cudnn_graph.h"

namespace trainer::cuda {

enum class CudnnDq : uint8_t { direct, accumulate };

// Whether the loaded cuDNN runs our backward graph at sequence length T: not T = 1 (cuDNN has
// no engine), and up to 9.15.0 only T a multiple of 128 (cudnn-frontend adds a padding-mask
// workaround there against wrong gradients, which this graph does not carry).
bool cudnn_backward_supported(int64_t T);

class CudnnAttention {
 public:
  // ConfigError when the loaded cuDNN is older than 9.0.
  CudnnAttention(cudaStream_t stream, CudnnDq dq);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  void forward(const Context& ctx, const AttentionForwardOp& op);
  void backward(const Context& ctx, const AttentionBackwardOp& op);

  struct Plan;  // one built graph and the ids of its variant-pack tensors (cudnn_attention.cpp)

 private:
  enum class Direction : uint8_t { forward, backward };
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, Direction>;
  Plan& plan(const AttentionDims& s, Direction direction);

  cudnnHandle_t handle_ = nullptr;
  CudnnDq dq_;
  float negative_inf_;  // the masked score: -inf, or -FLT_MAX before cuDNN 9.10 (as cudnn-frontend)
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace trainer::cuda
