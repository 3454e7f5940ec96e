// ParamStore's private state, shared by its implementation files (param_store.cpp: buffers,
// gathering, gradient reduction and the optimizer; param_store_state.cpp: loading and
// reading parameters and optimizer state). Not part of any interface.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <vector>

#include "model/param_store.h"

namespace trainer {

struct ParamStore::Impl {
  const StageLayout& layout;
  Backend& backend;
  Comm& dp;
  Comm* embed;
  Comm* tp_partial = nullptr;  // sum replicated gradients over this group (see set_tensor_partial_grads)
  TpPartialGrads tp_partial_which = TpPartialGrads::per_head;
  const ZeroPolicy zero;
  const DType act;
  const MasterWeights master_kind;  // derived once from (zero, act)
  const int64_t bucket_bytes;
  const DType reduce_dtype;  // what the data group's gradient reductions carry (f32 or bf16)

  // The master is indexed like the flat buffer (else like shard storage).
  bool master_full() const { return master_kind != MasterWeights::own_shard; }
  bool master_aliases_compute() const { return master_kind == MasterWeights::compute_copy; }
  Buffer compute, compute_shard, master, grads_full, grads_shard, m, v;
  // Bucketed reductions in bf16: the whole-gradient buffer's bf16 copy, each bucket cast into
  // its part, reduced there and cast back (empty otherwise).
  Buffer grads_wire;
  bool bf16_wire() const { return reduces_in_bf16(reduce_dtype, dp.size()); }

  // Pools of staging buffers by (bytes); reused across micro-batches and steps.
  std::map<size_t, std::vector<Buffer>> pool;
  int64_t pool_bytes = 0, pool_peak = 0;
  // ZeRO-3 gathered units: unit -> (buffer, refcount).
  std::map<int, std::pair<Buffer, int>> gathered;
  // ZeRO-2/3 per-unit gradient staging for the current micro-batch.
  std::map<int, Buffer> grad_temp;
  struct Pending {
    int unit;
    CommRequestPtr request;
    Buffer shard_out;  // reduce_dtype
    Buffer temp;  // the unit's gradients being reduced (f32, or their bf16 copy); the next
                  // micro-batch gets a fresh one
  };
  std::deque<Pending> pending;
  // A bucketed reduction in flight; under a bf16 wire, `wire` (bf16) is cast back into `grads`
  // (f32) when it completes.
  struct BucketRequest {
    CommRequestPtr request;
    Tensor wire, grads;
  };
  std::vector<BucketRequest> bucket_requests;
  // ParamGather::after_step's all-gather of each unit still in flight (null where none is).
  GatherWait gather_wait;
  std::vector<CommRequestPtr> gathers;
  int bucket_lo = -1, bucket_hi = -1;
  int64_t bucket_cur = 0;
  bool reduce_now = true;

  Impl(const StageLayout& l, Backend& b, Comm& d, Comm* e, ZeroPolicy z, double bucket_mb, DType reduce)
      : layout(l), backend(b), dp(d), embed(e), zero(z), act(b.act_dtype()), master_kind(z.master_weights(act)),
        bucket_bytes(std::max<int64_t>(1, int64_t(bucket_mb * 1024 * 1024))), reduce_dtype(reduce),
        gather_wait(d.in_flight_cost() == InFlightCost::none ? GatherWait::on_first_use : GatherWait::in_step),
        gathers(l.units().size()) {}

  // Waits for unit u's after-step all-gather, if one is in flight.
  void wait_gather(size_t u) {
    if (!gathers[u]) return;
    gathers[u]->wait();
    gathers[u].reset();
  }
  // Before anything reads or writes the compute copy as a whole (or starts new gathers).
  void wait_gathers() {
    for (size_t u = 0; u < gathers.size(); ++u) wait_gather(u);
  }

  Buffer take(size_t bytes) {
    auto& list = pool[bytes];
    if (!list.empty()) {
      Buffer b = std::move(list.back());
      list.pop_back();
      return b;
    }
    pool_bytes += int64_t(bytes);
    pool_peak = std::max(pool_peak, pool_bytes);
    return backend.alloc(bytes);
  }
  void give(Buffer b) {
    size_t bytes = b.bytes();
    pool[bytes].push_back(std::move(b));
  }

  Range opt_range(const LocalUnit& u) const {
    return zero.shard_optimizer_state() ? intersect(u.shard, {0, u.numel}) : Range{0, u.numel};
  }
  int64_t state_index(const LocalUnit& u, int64_t x) const {
    return zero.shard_optimizer_state() ? u.shard_offset + (x - u.shard.begin) : u.offset + x;
  }
  int64_t master_index(const LocalUnit& u, int64_t x) const {
    return master_full() ? u.offset + x : u.shard_offset + (x - u.shard.begin);
  }
  Tensor master_at(const LocalUnit& u, Range r) {
    const Buffer& b = master_aliases_compute() ? compute : master;
    int64_t i = master_index(u, r.begin);
    return b.tensor(DType::f32, {int64_t(b.bytes() / 4)}).flat(i, i + r.size());
  }
  Tensor state_at(const Buffer& b, const LocalUnit& u, Range r) {
    int64_t i = state_index(u, r.begin);
    return b.tensor(DType::f32, {int64_t(b.bytes() / 4)}).flat(i, i + r.size());
  }
  Tensor grads_at(const LocalUnit& u, Range r) {
    if (!zero.shard_gradients()) return grads_full.tensor(DType::f32, {layout.total()}).flat(u.offset + r.begin, u.offset + r.end);
    int64_t i = u.shard_offset + (r.begin - u.shard.begin);
    return grads_shard.tensor(DType::f32, {layout.shard_total()}).flat(i, i + r.size());
  }
  // Compute copy to refresh after the master changes (undefined when it is the master).
  Tensor copy_at(const LocalUnit& u, Range r) {
    if (!zero.shard_parameters()) {
      if (master_aliases_compute()) return Tensor{};
      return compute.tensor(act, {layout.total()}).flat(u.offset + r.begin, u.offset + r.end);
    }
    if (act == DType::f32) return Tensor{};
    int64_t i = u.shard_offset + (r.begin - u.shard.begin);
    return compute_shard.tensor(act, {layout.shard_total()}).flat(i, i + r.size());
  }

  void upload(Tensor dst, const float* src) {
    if (dst.dtype == DType::f32) {
      backend.copy_from_host(dst.data, src, dst.bytes());
      return;
    }
    Buffer staging = backend.alloc(size_t(dst.numel()) * 4);
    Tensor s = staging.tensor(DType::f32, {dst.numel()});
    backend.copy_from_host(s.data, src, s.bytes());
    backend.cast(dst, s);
    backend.synchronize();
  }
  void download(Tensor src, float* dst) {
    if (src.dtype == DType::f32) {
      backend.copy_to_host(dst, src.data, src.bytes());
      return;
    }
    Buffer staging = backend.alloc(size_t(src.numel()) * 4);
    Tensor s = staging.tensor(DType::f32, {src.numel()});
    backend.cast(s, src);
    backend.copy_to_host(dst, s.data, s.bytes());
  }

  // Writes elements [part.begin, part.end) of a parameter's local slice into every copy this
  // rank keeps: put(offset, dst) fills dst from the source's elements offset, offset + 1, ...
  // (offsets count from part.begin).
  template <class Put>
  void set_parts(const LocalParam& p, Range part, Put put) {
    const LocalUnit& u = layout.units()[p.unit];
    const int64_t base = p.offset - u.offset;  // the parameter's start within its unit
    Range pr{base + part.begin, base + part.end};
    auto at = [&](Range piece, Tensor dst) {
      if (!piece.empty()) put(piece.begin - pr.begin, dst);
    };
    if (!zero.shard_parameters()) at(pr, compute.tensor(act, {layout.total()}).flat(u.offset + pr.begin, u.offset + pr.end));
    if (!master_aliases_compute()) {
      Range piece = master_full() ? pr : intersect(pr, u.shard);
      at(piece, piece.empty() ? Tensor{} : master_at(u, piece));
    }
    if (zero.shard_parameters() && act != DType::f32) {
      Range piece = intersect(pr, u.shard);
      at(piece, piece.empty() ? Tensor{} : copy_at(u, piece));
    }
  }
  // From f32 host values.
  void set_values(const LocalParam& p, Range part, const float* values) {
    wait_gathers();
    set_parts(p, part, [&](int64_t offset, Tensor dst) { upload(dst, values + offset); });
  }
  // From f32 values on the device (src has part.size() elements); asynchronous.
  void set_values_device(const LocalParam& p, Range part, Tensor src) {
    wait_gathers();
    set_parts(p, part, [&](int64_t offset, Tensor dst) {
      Tensor from = src.flat(offset, offset + dst.numel());
      if (dst.dtype == DType::f32) backend.copy(dst.data, from.data, dst.bytes());
      else backend.cast(dst, from);
    });
  }
  void set_values(const LocalParam& p, const std::vector<float>& values) {
    set_values(p, {0, p.numel}, values.data());
  }

  void flush_bucket() {
    if (bucket_lo < 0) return;
    const auto& units = layout.units();
    // Over MPI at most two requests in flight: each non-blocking all-reduce holds a temporary
    // buffer of its size inside MPI, so unbounded overlap would cost another copy of the
    // gradients (a request is a bucket, or one unit of a reduce-scattered bucket). NCCL holds
    // none, and waiting would stall the compute stream.
    while (dp.in_flight_cost() == InFlightCost::buffer_copy && bucket_requests.size() >= 2) {
      complete_bucket(bucket_requests.front());
      bucket_requests.erase(bucket_requests.begin());
    }
    Tensor whole = grads_full.tensor(DType::f32, {layout.total()});
    // What a reduction of whole's [begin, end) works in: that range itself, or its bf16 copy.
    auto wire_for = [&](int64_t begin, int64_t end) {
      if (!bf16_wire()) return whole.flat(begin, end);
      Tensor w = grads_wire.tensor(DType::bf16, {layout.total()}).flat(begin, end);
      backend.cast(w, whole.flat(begin, end));
      return w;
    };
    if (dp.size() > 1 && zero.grad_reduction() == GradReduction::bucketed_all_reduce) {
      const int64_t begin = units[size_t(bucket_lo)].offset;
      const int64_t end = units[size_t(bucket_hi)].offset + units[size_t(bucket_hi)].padded;
      Tensor w = wire_for(begin, end);
      bucket_requests.push_back({dp.all_reduce_async(w, ReduceOp::sum), bf16_wire() ? w : Tensor{},
                                 bf16_wire() ? whole.flat(begin, end) : Tensor{}});
    }
    // One in-place reduce-scatter per unit (a unit's shards are its equal blocks, so a bucket of
    // several units is not one collective's blocks); only the shard comes back from a bf16 wire.
    if (dp.size() > 1 && zero.grad_reduction() == GradReduction::bucketed_reduce_scatter)
      for (int x = bucket_lo; x <= bucket_hi; ++x) {
        const LocalUnit& ux = units[size_t(x)];
        Tensor w = wire_for(ux.offset, ux.offset + ux.padded);
        Tensor mine = w.flat(ux.shard.begin, ux.shard.end);
        bucket_requests.push_back({dp.reduce_scatter_async(mine, w), bf16_wire() ? mine : Tensor{},
                                   bf16_wire() ? whole.flat(ux.offset + ux.shard.begin, ux.offset + ux.shard.end)
                                               : Tensor{}});
      }
    bucket_lo = bucket_hi = -1;
    bucket_cur = 0;
  }

  void complete_bucket(BucketRequest& b) {
    b.request->wait();
    if (b.wire.defined()) backend.cast(b.grads, b.wire);
  }

  void complete_oldest() {
    Pending p = std::move(pending.front());
    pending.pop_front();
    p.request->wait();
    const LocalUnit& u = layout.units()[p.unit];
    Tensor acc = grads_shard.tensor(DType::f32, {layout.shard_total()})
                     .flat(u.shard_offset, u.shard_offset + u.shard.size());
    if (!bf16_wire()) {
      backend.add(acc, acc, p.shard_out.tensor(DType::f32, {u.shard.size()}));
    } else {
      // Added in f32 (the CPU adds f32 only): the shard cast into a pool buffer first.
      Buffer sum = take(size_t(u.shard.size()) * 4);
      Tensor f = sum.tensor(DType::f32, {u.shard.size()});
      backend.cast(f, p.shard_out.tensor(DType::bf16, {u.shard.size()}));
      backend.add(acc, acc, f);
      give(std::move(sum));
    }
    give(std::move(p.shard_out));
    give(std::move(p.temp));
  }
};

}  // namespace trainer
