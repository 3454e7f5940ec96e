// The ops only generation uses (trainer sample, log.sample_every), split out of backend.h,
// which includes this file and states the rules every op follows (dtypes "act"/"f32",
// "(R, C)" matrices, "exactly", aliasing).
// Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace trainer {

// Causal attention of new tokens over a KV cache. The k and v heads of qkv's T new rows, the
// tokens at sequence positions past .. past + T - 1, are first written into the caches at
// those positions; then new row t's query head h attends to cache positions [0, past + t] of
// k/v head h / (H / Hkv), scale 1/sqrt(D), as attention_forward does over a whole sequence
// (the same rows out, up to rounding). One call serves the prompt (past = 0, T = its length)
// and each generated token (T = 1). out (B*T, H*D) act; k_cache, v_cache exactly
// (B, Hkv, Tmax, D) act, read and written (positions other than the new ones are left as they
// are); qkv exactly (B, T, (H + 2*Hkv)*D) act; 0 <= past and past + T <= Tmax. No
// log-sum-exp: nothing flows backward through generation.
struct AttentionCachedOp {
  static constexpr const char* kName = "attention_cached";
  Tensor out, k_cache, v_cache, qkv;
  int n_head = 0;
  int n_kv_head = 0;
  int64_t past = 0;
};

}  // namespace trainer

#define TRAINER_GENERATION_OPS(X) X(AttentionCachedOp, void, heads_of(op.qkv, op.n_head, op.n_kv_head))
