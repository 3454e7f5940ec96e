// Ring attention's block ops on the CPU: a sequence cut into 2N chunks over N "ranks" (rank r
// holds chunks r and 2N-1-r, as context parallelism balances causal work), every rank's rows
// attended to every rank's block in ring order and merged, gives causal attention over the
// whole sequence (out and lse, with and without documents, grouped k/v heads); the backward
// blocks give its dQ, and each block's dK, dV summed over the ranks give the rest of dqkv. The
// fast kernels match the reference loops on random positions, and a block no row sees leaves
// the running result as it was.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_attention.h"
#include "kernels/cpu/reference_attention_block.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

struct Shape {
  int64_t B, T, H, Hkv, D, ranks, max_doc;  // max_doc 0: causal without documents
  int64_t W() const { return (H + 2 * Hkv) * D; }
  int64_t C() const { return H * D; }
};

// The global rows rank r holds, in its local order: chunks r and 2N-1-r.
std::vector<int64_t> rank_rows(const Shape& s, int64_t r) {
  const int64_t chunk = s.T / (2 * s.ranks);
  std::vector<int64_t> rows;
  for (int64_t c : {r, 2 * s.ranks - 1 - r})
    for (int64_t t = c * chunk; t < (c + 1) * chunk; ++t) rows.push_back(t);
  return rows;
}

}  // namespace

TEST_CASE("attention blocks: N ranks' blocks merged in ring order equal attention over the whole sequence") {
  auto be = make_cpu_backend();
  uint64_t seed = 500;
  for (const Shape& s : {Shape{2, 24, 4, 2, 8, 2, 0}, Shape{1, 36, 2, 1, 5, 3, 7}, Shape{2, 32, 3, 3, 4, 4, 3},
                         Shape{1, 40, 4, 1, 6, 2, 40}}) {
    const std::string what = "T=" + std::to_string(s.T) + " ranks=" + std::to_string(s.ranks) +
                             (s.max_doc ? " documents up to " + std::to_string(s.max_doc) : " causal");
    CAPTURE(what);
    const int64_t Tl = s.T / s.ranks, Wkv = 2 * s.Hkv * s.D;
    auto qkv = random_floats(s.B * s.T * s.W(), ++seed, -2, 2);
    auto dout = random_floats(s.B * s.T * s.C(), ++seed);
    RandomDocuments docs = random_documents(s.B, s.T, s.max_doc ? s.max_doc : s.T, ++seed);
    if (!s.max_doc) std::fill(docs.doc_start.begin(), docs.doc_start.end(), 0);
    // The whole sequence at once.
    std::vector<float> out(s.B * s.T * s.C()), lse(s.B * s.H * s.T), dqkv(qkv.size());
    Tensor doc = s.max_doc ? view(docs.doc_start, {s.B, s.T}) : Tensor{};
    be->attention_forward(view(out, {s.B, s.T, s.C()}), view(lse, {s.B, s.H, s.T}), view(qkv, {s.B, s.T, s.W()}),
                          int(s.H), int(s.Hkv), doc);
    be->attention_backward(view(dqkv, {s.B, s.T, s.W()}), view(dout, {s.B, s.T, s.C()}), view(qkv, {s.B, s.T, s.W()}),
                           view(out, {s.B, s.T, s.C()}), view(lse, {s.B, s.H, s.T}), int(s.H), int(s.Hkv), doc);
    // Each rank's local tensors: its rows of qkv, their k/v heads as its block, positions.
    struct Rank {
      std::vector<float> qkv, kv, dout, out, lse, dq, dkv;
      std::vector<int32_t> pos, doc;
    };
    std::vector<Rank> ranks(size_t(s.ranks));
    for (int64_t r = 0; r < s.ranks; ++r) {
      Rank& k = ranks[size_t(r)];
      const std::vector<int64_t> rows = rank_rows(s, r);
      for (int64_t b = 0; b < s.B; ++b)
        for (int64_t t : rows) {
          const float* src = qkv.data() + (b * s.T + t) * s.W();
          k.qkv.insert(k.qkv.end(), src, src + s.W());
          k.kv.insert(k.kv.end(), src + s.C(), src + s.W());
          const float* d = dout.data() + (b * s.T + t) * s.C();
          k.dout.insert(k.dout.end(), d, d + s.C());
          k.pos.push_back(int32_t(t));
          k.doc.push_back(docs.doc_start[size_t(b * s.T + t)]);
        }
      k.out.assign(size_t(s.B * Tl * s.C()), 0.0f);
      k.lse.assign(size_t(s.B * s.H * Tl), -std::numeric_limits<float>::infinity());
      k.dq.assign(k.out.size(), 0.0f);
      k.dkv.assign(k.kv.size(), 0.0f);
    }
    auto t3 = [&](std::vector<float>& v, int64_t w) { return view(v, {s.B, Tl, w}); };
    auto t2 = [&](std::vector<int32_t>& v) { return view(v, {s.B, Tl}); };
    for (int64_t r = 0; r < s.ranks; ++r)
      for (int64_t step = 0; step < s.ranks; ++step) {  // the ring: rank r - step's block at step
        Rank &me = ranks[size_t(r)], &from = ranks[size_t((r - step + s.ranks) % s.ranks)];
        be->attention_block_forward(view(me.out, {s.B * Tl, s.C()}), view(me.lse, {s.B, s.H, Tl}), t3(me.qkv, s.W()),
                                    t3(from.kv, Wkv), t2(me.pos), t2(from.pos),
                                    s.max_doc ? t2(me.doc) : Tensor{}, int(s.H), int(s.Hkv));
      }
    for (int64_t r = 0; r < s.ranks; ++r)
      for (int64_t step = 0; step < s.ranks; ++step) {
        Rank &me = ranks[size_t(r)], &from = ranks[size_t((r - step + s.ranks) % s.ranks)];
        be->attention_block_backward(view(me.dq, {s.B * Tl, s.C()}), view(from.dkv, {s.B * Tl, Wkv}),
                                     t3(me.dout, s.C()), t3(me.qkv, s.W()), t3(from.kv, Wkv),
                                     view(me.out, {s.B * Tl, s.C()}), view(me.lse, {s.B, s.H, Tl}), t2(me.pos),
                                     t2(from.pos), s.max_doc ? t2(me.doc) : Tensor{}, int(s.H), int(s.Hkv));
      }
    // Back in global order.
    std::vector<float> got_out(out.size()), got_lse(lse.size()), got_dqkv(dqkv.size());
    for (int64_t r = 0; r < s.ranks; ++r) {
      const Rank& k = ranks[size_t(r)];
      const std::vector<int64_t> rows = rank_rows(s, r);
      for (int64_t b = 0; b < s.B; ++b)
        for (size_t li = 0; li < rows.size(); ++li) {
          const int64_t t = rows[li], local = b * Tl + int64_t(li);
          for (int64_t c = 0; c < s.C(); ++c) {
            got_out[size_t((b * s.T + t) * s.C() + c)] = k.out[size_t(local * s.C() + c)];
            got_dqkv[size_t((b * s.T + t) * s.W() + c)] = k.dq[size_t(local * s.C() + c)];
          }
          for (int64_t c = 0; c < Wkv; ++c) got_dqkv[size_t((b * s.T + t) * s.W() + s.C() + c)] = k.dkv[size_t(local * Wkv + c)];
          for (int64_t h = 0; h < s.H; ++h)
            got_lse[size_t((b * s.H + h) * s.T + t)] = k.lse[size_t((b * s.H + h) * Tl + int64_t(li))];
        }
    }
    check_close(got_out, out, 1e-5, 1e-6, what + " out");
    check_close(got_lse, lse, 1e-5, 1e-6, what + " lse");
    check_close(got_dqkv, dqkv, 1e-4, 1e-5, what + " dqkv");
  }
}

TEST_CASE("attention blocks: the fast kernels match the reference on random positions, and a hidden block changes nothing") {
  auto be = make_cpu_backend();
  const int64_t B = 2, Tq = 9, Tk = 13, H = 4, Hkv = 2, D = 6, W = (H + 2 * Hkv) * D, C = H * D, Wkv = 2 * Hkv * D;
  auto qkv = random_floats(B * Tq * W, 71, -2, 2), kv = random_floats(B * Tk * Wkv, 72, -2, 2);
  auto dout = random_floats(B * Tq * C, 73);
  auto q_pos = random_ints(B * Tq, 0, 30, 74), k_pos = random_ints(B * Tk, 0, 30, 75);
  auto q_doc = q_pos;
  for (size_t i = 0; i < q_doc.size(); ++i) q_doc[i] = q_pos[i] / 2;
  for (bool documents : {false, true}) {
    CAPTURE(documents);
    // A running result from an earlier block (random), so the merge is exercised.
    auto out = random_floats(B * Tq * C, 76), lse = random_floats(B * H * Tq, 77, -1, 1);
    auto rout = out, rlse = lse;
    Tensor doc = documents ? view(q_doc, {B, Tq}) : Tensor{};
    be->attention_block_forward(view(out, {B * Tq, C}), view(lse, {B, H, Tq}), view(qkv, {B, Tq, W}), view(kv, {B, Tk, Wkv}),
                                view(q_pos, {B, Tq}), view(k_pos, {B, Tk}), doc, int(H), int(Hkv));
    ref::attention_block_forward<float>(rout.data(), rlse.data(), qkv.data(), kv.data(), q_pos.data(), k_pos.data(),
                                        documents ? q_doc.data() : nullptr, B, Tq, Tk, H, Hkv, D);
    check_close(out, rout, 1e-5, 1e-6, "out");
    check_close(lse, rlse, 1e-5, 1e-6, "lse");
    auto dq = random_floats(B * Tq * C, 78), dkv = random_floats(B * Tk * Wkv, 79);
    auto rdq = dq, rdkv = dkv;
    be->attention_block_backward(view(dq, {B * Tq, C}), view(dkv, {B * Tk, Wkv}), view(dout, {B, Tq, C}),
                                 view(qkv, {B, Tq, W}), view(kv, {B, Tk, Wkv}), view(out, {B * Tq, C}),
                                 view(lse, {B, H, Tq}), view(q_pos, {B, Tq}), view(k_pos, {B, Tk}), doc, int(H), int(Hkv));
    ref::attention_block_backward<float>(rdq.data(), rdkv.data(), dout.data(), qkv.data(), kv.data(), out.data(),
                                         lse.data(), q_pos.data(), k_pos.data(), documents ? q_doc.data() : nullptr, B,
                                         Tq, Tk, H, Hkv, D);
    check_close(dq, rdq, 1e-5, 1e-6, "dq");
    check_close(dkv, rdkv, 1e-5, 1e-6, "dkv");
  }
  // Every key after every query: the block is hidden, the running result and gradients stay.
  std::vector<int32_t> late(size_t(B * Tk), 100);
  auto out = random_floats(B * Tq * C, 80), lse = random_floats(B * H * Tq, 81);
  const auto out0 = out, lse0 = lse;
  be->attention_block_forward(view(out, {B * Tq, C}), view(lse, {B, H, Tq}), view(qkv, {B, Tq, W}), view(kv, {B, Tk, Wkv}),
                              view(q_pos, {B, Tq}), view(late, {B, Tk}), Tensor{}, int(H), int(Hkv));
  CHECK(bitwise_equal(out, out0));
  CHECK(bitwise_equal(lse, lse0));
}
