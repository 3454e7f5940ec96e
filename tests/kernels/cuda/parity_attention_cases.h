// The parity tables of attention (tests/kernels/cuda/parity.h). attention_parity_cases: causal
// attention over the whole sequence, forward and backward, over a KV cache, and with the
// document mask. attention_block_parity_cases: ring attention's block ops
// (backend_attention_block_ops.h), this rank's rows (two chunks of the sequence) against
// another rank's keys, merged into a running (out, lse) given as random accumulators, and the
// block's backward into f32 dq and dkv; with and without documents, multi-head, grouped and
// multi-query k/v heads, head sizes 8 to 128, at the causal attention's tolerances.
#pragma once

#include <string>
#include <vector>

#include "tests/kernels/cuda/parity.h"
#include "tests/kernels/cuda/parity_cases.h"
#include "tests/kernels/kernel_test_util.h"

namespace trainer::testing {

// ---- attention ----
// Shapes (B, T, H, Hkv, D): multi-head (Hkv = H), grouped and multi-query k/v heads, on the
// tensor-core path (bf16, D = 64 and 128) and the scalar one (f32, other D), T off the tiles
// and across several row blocks and key tiles for both head sizes.
inline std::vector<ParityCase> attention_parity_cases() {
  // bf16 rounds P and dS to bf16 inside the products as well as the outputs. The backward's
  // sums over up to a few hundred queries of such products (dK, dV) leave a worst element of
  // 3.2% among the 10^5 of {1, 130, 4, 1, 128} and {1, 257, 4, 2, 64} on the CUDA emulator's
  // tensor-core kernels (mean error 0.1%; test_cuda_emu), above the forward's 3%.
  const Tol tol{5e-5, 3e-2}, backward_tol{5e-5, 5e-2};
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 37, 3, 3, 64}, {1, 130, 2, 2, 128}, {2, 17, 2, 2, 40}, {1, 1, 1, 1, 64}, {1, 64, 2, 2, 64},
      {1, 200, 1, 1, 128}, {1, 45, 2, 2, 96}, {2, 33, 1, 1, 16}, {2, 37, 4, 2, 64}, {1, 130, 4, 1, 128},
      {2, 70, 8, 2, 64}, {2, 17, 6, 3, 40}, {1, 45, 3, 1, 8}, {1, 1, 2, 1, 64}, {1, 65, 2, 1, 96},
      // D = 64 past one 128-row block: forward row blocks after the first, the key-tile ring's
      // reuse (tile 2 into buffer 0), dK/dV blocks at k0 > 0 and warps whose keys are all past T.
      {1, 300, 2, 2, 64}, {1, 257, 4, 2, 64}};
  std::vector<ParityCase> cases;
  for (const auto& s : shapes) {
    const int64_t B = s[0], T = s[1], H = s[2], Hkv = s[3], C = s[2] * s[4], W = (H + 2 * Hkv) * s[4];
    const int n_head = int(H), n_kv_head = int(Hkv);
    ParityCase f;
    f.label = dims_label("attention_forward", s);
    f.args = {output("out", Kind::act, {B, T, C}, tol), output("lse", Kind::f32, {B, H, T}, Tol{kTolF32, 1e-3}),
              input("qkv", Kind::act, {B, T, W}, -1.5f, 1.5f)};
    f.run = [n_head, n_kv_head](Backend& be, const ParityArgs& t) {
      be.run(AttentionForwardOp{t["out"], t["lse"], t["qkv"], n_head, n_kv_head});
    };
    cases.push_back(f);
    ParityCase b;
    b.label = dims_label("attention_backward", s);
    b.args = {output("dqkv", Kind::act, {B, T, W}, backward_tol), input("dout", Kind::act, {B, T, C}),
              input("qkv", Kind::act, {B, T, W}, -1.5f, 1.5f), input("out", Kind::act, {B, T, C}),
              input("lse", Kind::f32, {B, H, T})};
    // out and lse from the reference's forward pass, so both sides see the same inputs.
    b.prepare = [n_head, n_kv_head](Backend& ref, const ParityArgs& t, Tensors&) {
      ref.run(AttentionForwardOp{t["out"], t["lse"], t["qkv"], n_head, n_kv_head});
    };
    b.run = [n_head, n_kv_head](Backend& be, const ParityArgs& t) {
      be.run(AttentionBackwardOp{t["dqkv"], t["dout"], t["qkv"], t["out"], t["lse"], n_head, n_kv_head});
    };
    cases.push_back(b);
    // Generation: the last rows of the sequence (one, or a few) against a cache holding the
    // rest (random values stand for the earlier rows' k and v).
    for (int64_t n : {int64_t(1), std::min<int64_t>(T, 5)}) {
      const int64_t past = T - n, t_max = T + 3, D = s[4];
      ParityCase k;
      k.label = dims_label("attention_cached", s) + " new=" + std::to_string(n);
      k.args = {output("out", Kind::act, {B * n, C}, tol), accumulated("k_cache", Kind::act, {B, Hkv, t_max, D}, kTolAct),
                accumulated("v_cache", Kind::act, {B, Hkv, t_max, D}, kTolAct),
                input("qkv", Kind::act, {B, n, W}, -1.5f, 1.5f)};
      k.run = [n_head, n_kv_head, past](Backend& be, const ParityArgs& t) {
        be.run(AttentionCachedOp{t["out"], t["k_cache"], t["v_cache"], t["qkv"], n_head, n_kv_head, past});
      };
      cases.push_back(k);
    }
  }
  // The document mask (the scalar kernels on every dtype): documents shorter than a tile,
  // around a row block and longer, one of a single token; T off the tiles.
  const std::vector<std::vector<int64_t>> doc_shapes = {
      {2, 70, 4, 2, 64, 9}, {1, 130, 2, 2, 128, 50}, {2, 37, 3, 3, 40, 1}, {1, 300, 2, 1, 64, 100}};
  for (const auto& s : doc_shapes) {
    const int64_t B = s[0], T = s[1], H = s[2], Hkv = s[3], C = s[2] * s[4], W = (H + 2 * Hkv) * s[4];
    const int n_head = int(H), n_kv_head = int(Hkv);
    const std::vector<int32_t> doc = random_documents(B, T, s[5], uint64_t(T * 7 + B)).doc_start;
    const std::string dims = dims_label("", {B, T, H, Hkv, s[4]}) + " documents up to " + std::to_string(s[5]);
    ParityCase f;
    f.label = "attention_forward" + dims;
    f.args = {output("out", Kind::act, {B, T, C}, tol), output("lse", Kind::f32, {B, H, T}, Tol{kTolF32, 1e-3}),
              input("qkv", Kind::act, {B, T, W}, -1.5f, 1.5f), fixed_ints("doc", {B, T}, doc)};
    f.run = [n_head, n_kv_head](Backend& be, const ParityArgs& t) {
      be.run(AttentionForwardOp{t["out"], t["lse"], t["qkv"], n_head, n_kv_head, t["doc"]});
    };
    cases.push_back(f);
    ParityCase b;
    b.label = "attention_backward" + dims;
    b.args = {output("dqkv", Kind::act, {B, T, W}, backward_tol), input("dout", Kind::act, {B, T, C}),
              input("qkv", Kind::act, {B, T, W}, -1.5f, 1.5f), input("out", Kind::act, {B, T, C}),
              input("lse", Kind::f32, {B, H, T}), fixed_ints("doc", {B, T}, doc)};
    b.prepare = [n_head, n_kv_head](Backend& ref, const ParityArgs& t, Tensors&) {
      ref.run(AttentionForwardOp{t["out"], t["lse"], t["qkv"], n_head, n_kv_head, t["doc"]});
    };
    b.run = [n_head, n_kv_head](Backend& be, const ParityArgs& t) {
      be.run(AttentionBackwardOp{t["dqkv"], t["dout"], t["qkv"], t["out"], t["lse"], n_head, n_kv_head, t["doc"]});
    };
    cases.push_back(b);
  }
  return cases;
}

inline std::vector<ParityCase> attention_block_parity_cases() {
  const Tol tol{5e-5, 3e-2}, backward_tol{5e-5, 5e-2};
  std::vector<ParityCase> cases;
  const std::vector<std::vector<int64_t>> block_shapes = {{2, 16, 24, 4, 2, 8}, {1, 40, 40, 2, 1, 64},
                                                          {2, 33, 7, 3, 3, 40}, {1, 64, 64, 2, 2, 128}};
  for (const auto& s : block_shapes) {
    const int64_t B = s[0], Tq = s[1], Tk = s[2], H = s[3], Hkv = s[4], D = s[5], C = H * D, W = (H + 2 * Hkv) * D,
                  Wkv = 2 * Hkv * D;
    const int n_head = int(H), n_kv_head = int(Hkv);
    std::vector<int32_t> q_pos(size_t(B * Tq)), k_pos(size_t(B * Tk)), q_doc(size_t(B * Tq));
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < Tq; ++i) q_pos[size_t(b * Tq + i)] = int32_t(i < Tq / 2 ? i : 3 * Tq - i);  // two chunks
      for (int64_t j = 0; j < Tk; ++j) k_pos[size_t(b * Tk + j)] = int32_t(2 * j + b);
      for (int64_t i = 0; i < Tq; ++i) q_doc[size_t(b * Tq + i)] = q_pos[size_t(b * Tq + i)] / 3;
    }
    for (bool documents : {false, true}) {
      const std::string dims = dims_label("", s) + (documents ? " documents" : "");
      ParityCase f;
      f.label = "attention_block_forward" + dims;
      f.args = {accumulated("out", Kind::f32, {B * Tq, C}, tol), accumulated("lse", Kind::f32, {B, H, Tq}, Tol{kTolF32, 1e-3}),
                input("qkv", Kind::act, {B, Tq, W}, -1.5f, 1.5f), input("kv", Kind::act, {B, Tk, Wkv}, -1.5f, 1.5f),
                fixed_ints("q_pos", {B, Tq}, q_pos), fixed_ints("k_pos", {B, Tk}, k_pos),
                documents ? fixed_ints("q_doc", {B, Tq}, q_doc) : absent("q_doc")};
      f.run = [n_head, n_kv_head](Backend& be, const ParityArgs& t) {
        be.run(AttentionBlockForwardOp{t["out"], t["lse"], t["qkv"], t["kv"], t["q_pos"], t["k_pos"], t["q_doc"], n_head,
                                       n_kv_head});
      };
      cases.push_back(f);
      ParityCase g;
      g.label = "attention_block_backward" + dims;
      g.args = {accumulated("dq", Kind::f32, {B * Tq, C}, backward_tol), accumulated("dkv", Kind::f32, {B * Tk, Wkv}, backward_tol),
                input("dout", Kind::act, {B, Tq, C}), input("qkv", Kind::act, {B, Tq, W}, -1.5f, 1.5f),
                input("kv", Kind::act, {B, Tk, Wkv}, -1.5f, 1.5f), input("out", Kind::f32, {B * Tq, C}),
                input("lse", Kind::f32, {B, H, Tq}, 1.0f, 3.0f), fixed_ints("q_pos", {B, Tq}, q_pos),
                fixed_ints("k_pos", {B, Tk}, k_pos), documents ? fixed_ints("q_doc", {B, Tq}, q_doc) : absent("q_doc")};
      g.run = [n_head, n_kv_head](Backend& be, const ParityArgs& t) {
        be.run(AttentionBlockBackwardOp{t["dq"], t["dkv"], t["dout"], t["qkv"], t["kv"], t["out"], t["lse"], t["q_pos"],
                                        t["k_pos"], t["q_doc"], n_head, n_kv_head});
      };
      cases.push_back(g);
    }
  }
  return cases;
}

}  // namespace trainer::testing
