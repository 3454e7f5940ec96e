// ParamStore implementation (see param_store.h; the ZeRO behaviours are parallel/zero_policy.h's).
#include "model/param_store.h"

#include <algorithm>
#include <optional>

#include "kernels/base/check.h"
#include "model/param_store_impl.h"
#include "model/rng.h"

namespace trainer {

namespace {

Tensor reshape(Tensor t, const std::vector<int64_t>& shape) {
  TRAINER_CHECK(shape.size() <= 4, "rank");
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  TRAINER_CHECK(n == t.numel(), "reshape " + t.shape_str());
  t.ndim = int(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  return t;
}

}  // namespace

ParamStore::ParamStore(const StageLayout& layout, Backend& backend, Comm& dp, Comm* embed, ZeroPolicy zero,
                       double bucket_mb, DType reduce_dtype)
    : impl_(std::make_unique<Impl>(layout, backend, dp, embed, zero, bucket_mb, reduce_dtype)), layout_(layout) {
  TRAINER_CHECK(dp.size() == layout.dims().data, "data group size vs layout");
  TRAINER_CHECK(reduce_dtype == DType::f32 || reduce_dtype == DType::bf16,
                std::string("gradient reductions carry f32 or bf16, not ") + dtype_name(reduce_dtype));
  Impl& s = *impl_;
  const size_t act_size = dtype_size(s.act);
  const int64_t total = layout.total(), shard = layout.shard_total();
  auto zeroed = [&](int64_t n, size_t elem) {
    Buffer b = backend.alloc(size_t(n) * elem);
    if (n) backend.memset_zero(b.data(), b.bytes());
    return b;
  };
  if (!zero.shard_parameters()) s.compute = zeroed(total, act_size);
  // Sharded parameters in f32 are the master shard itself (acquire gathers from it).
  if (zero.shard_parameters() && s.act != DType::f32) s.compute_shard = zeroed(shard, act_size);
  if (!s.master_aliases_compute()) s.master = zeroed(s.master_full() ? total : shard, 4);
  if (zero.shard_gradients()) s.grads_shard = zeroed(shard, 4);
  else s.grads_full = zeroed(total, 4);
  if (s.bf16_wire() && zero.bucketed()) s.grads_wire = backend.alloc(size_t(total) * 2);
  int64_t state = zero.shard_optimizer_state() ? shard : total;
  s.m = zeroed(state, 4);
  s.v = zeroed(state, 4);
}

ParamStore::~ParamStore() = default;

ZeroPolicy ParamStore::zero() const { return impl_->zero; }

void ParamStore::init_random(uint64_t seed) {
  constexpr int64_t kChunk = kInitChunkElements;
  Impl& s = *impl_;
  const GptConfig& cfg = layout_.config();
  int64_t largest = 0;
  for (const LocalParam& p : layout_.params()) largest = std::max(largest, p.numel);
  if (largest == 0) return;
  Buffer staging = s.backend.alloc(size_t(std::min(kChunk, largest)) * 4);
  for (const LocalParam& p : layout_.params()) {
    const ParamSpec& spec = layout_.spec(p);
    const std::optional<NormalFill> normal = init_normal_fill(cfg, spec, seed);
    int64_t run_start = 0;  // local index where the current run starts
    for (const Range& r : p.runs) {
      for (int64_t at = 0; at < r.size(); at += kChunk) {
        const int64_t n = std::min(kChunk, r.size() - at);
        Tensor values = staging.tensor(DType::f32, {n});
        if (normal) {
          NormalFill f = *normal;
          f.first = r.begin + at;
          s.backend.init_normal(values, f);
        } else {
          s.backend.fill(values, init_constant(spec));
        }
        s.set_values_device(p, {run_start + at, run_start + at + n}, values);
      }
      run_start += r.size();
    }
  }
  s.backend.synchronize();
}

Tensor ParamStore::acquire(int unit) {
  Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[unit];
  if (s.zero.param_gather() != ParamGather::per_unit) {
    s.wait_gather(size_t(unit));
    return s.compute.tensor(s.act, {layout_.total()}).flat(u.offset, u.offset + u.padded);
  }
  auto it = s.gathered.find(unit);
  if (it == s.gathered.end()) {
    Buffer b = s.take(size_t(u.padded) * dtype_size(s.act));
    Tensor whole = b.tensor(s.act, {u.padded});
    const Buffer& src = s.act == DType::f32 ? s.master : s.compute_shard;
    Tensor mine = src.tensor(s.act, {layout_.shard_total()}).flat(u.shard_offset, u.shard_offset + u.shard.size());
    s.dp.all_gather(whole, mine);
    it = s.gathered.emplace(unit, std::make_pair(std::move(b), 0)).first;
  }
  it->second.second += 1;
  return it->second.first.tensor(s.act, {u.padded});
}

void ParamStore::release(int unit) {
  Impl& s = *impl_;
  if (s.zero.param_gather() != ParamGather::per_unit) return;
  auto it = s.gathered.find(unit);
  TRAINER_CHECK(it != s.gathered.end() && it->second.second > 0, "release of a unit not acquired");
  if (--it->second.second == 0) {
    s.give(std::move(it->second.first));
    s.gathered.erase(it);
  }
}

Tensor ParamStore::view(Tensor unit_base, int unit, const std::string& name) const {
  const LocalParam& p = layout_.find(unit, name);
  const LocalUnit& u = layout_.units()[unit];
  return reshape(unit_base.flat(p.offset - u.offset, p.offset - u.offset + p.numel), p.shape);
}

void ParamStore::zero_grads() {
  Impl& s = *impl_;
  const Buffer& g = s.zero.shard_gradients() ? s.grads_shard : s.grads_full;
  if (g.bytes()) s.backend.memset_zero(g.data(), g.bytes());
}

void ParamStore::begin_micro(bool last_micro) { impl_->reduce_now = impl_->zero.reduce_every_micro_batch() || last_micro; }

Tensor ParamStore::grads(int unit) {
  Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[unit];
  if (s.zero.bucketed())
    return s.grads_full.tensor(DType::f32, {layout_.total()}).flat(u.offset, u.offset + u.padded);
  auto it = s.grad_temp.find(unit);
  if (it == s.grad_temp.end()) {
    Buffer b = s.take(size_t(u.padded) * 4);
    s.backend.memset_zero(b.data(), b.bytes());
    it = s.grad_temp.emplace(unit, std::move(b)).first;
  }
  return it->second.tensor(DType::f32, {u.padded});
}

void ParamStore::grads_done(int unit) {
  Impl& s = *impl_;
  if (!s.reduce_now) return;
  const LocalUnit& u = layout_.units()[unit];
  if (s.zero.bucketed()) {
    if (s.bucket_lo >= 0 && unit != s.bucket_lo - 1 && unit != s.bucket_hi + 1) s.flush_bucket();
    s.bucket_lo = s.bucket_lo < 0 ? unit : std::min(s.bucket_lo, unit);
    s.bucket_hi = std::max(s.bucket_hi, unit);
    s.bucket_cur += u.padded * 4;
    if (s.bucket_cur >= s.bucket_bytes) s.flush_bucket();
    return;
  }
  auto it = s.grad_temp.find(unit);
  // No contribution since this unit's last reduction (the head under gpipe accumulates all
  // micro-batches before the first backward): nothing to do.
  if (it == s.grad_temp.end()) return;
  Buffer in = std::move(it->second);
  s.grad_temp.erase(it);
  if (s.bf16_wire()) {
    // The unit's bf16 copy is what travels; its f32 gradients go back to the pool at once.
    Buffer wire = s.take(size_t(u.padded) * 2);
    s.backend.cast(wire.tensor(DType::bf16, {u.padded}), in.tensor(DType::f32, {u.padded}));
    s.give(std::move(in));
    in = std::move(wire);
  }
  const DType t = s.bf16_wire() ? DType::bf16 : DType::f32;
  Buffer out = s.take(size_t(u.shard.size()) * dtype_size(t));
  CommRequestPtr req = s.dp.reduce_scatter_async(out.tensor(t, {u.shard.size()}), in.tensor(t, {u.padded}));
  s.pending.push_back({unit, std::move(req), std::move(out), std::move(in)});
  // Two units in flight on every transport: each holds its whole-unit gradient temporary from
  // the pool, so the bound is what keeps ZeRO-2's gradient memory at a shard plus two units.
  while (s.pending.size() > 2) s.complete_oldest();
}

void ParamStore::flush_grads() {
  Impl& s = *impl_;
  if (s.zero.bucketed()) s.flush_bucket();
}

void ParamStore::finish_grads() {
  Impl& s = *impl_;
  if (s.zero.bucketed()) {
    s.flush_bucket();
    for (auto& r : s.bucket_requests) s.complete_bucket(r);
    s.bucket_requests.clear();
  } else {
    while (!s.pending.empty()) s.complete_oldest();
    TRAINER_CHECK(s.grad_temp.empty(), "unit gradients staged but never reduced");
  }
  if (s.embed) {
    int unit = layout_.has_embedding() ? layout_.unit_wte() : layout_.unit_head_wte();
    const LocalUnit& u = layout_.units()[unit];
    // Where only the shard holds the data group's sum, only the shard is summed with the
    // other stage's copy (the optimizer reads nothing else).
    Tensor g = s.zero.reduced_on_shard_only()
                   ? s.grads_at(u, u.shard)
                   : s.grads_full.tensor(DType::f32, {layout_.total()}).flat(u.offset, u.offset + u.padded);
    s.embed->all_reduce(g, ReduceOp::sum);
  }
  if (s.tp_partial && s.tp_partial->size() > 1) {
    for (const LocalUnit& u : layout_.units()) {
      for (int pi : u.params) {
        const LocalParam& p = layout_.params()[pi];
        const ParamSpec& spec = layout_.spec(p);
        if (spec.split != TpSplit::none) continue;
        if (s.tp_partial_which == TpPartialGrads::per_head && spec.tp_grad != TpGrad::per_head) continue;
        Range pr{p.offset - u.offset, p.offset - u.offset + p.numel};
        Range piece = s.zero.reduced_on_shard_only() ? intersect(pr, u.shard) : pr;
        if (!piece.empty()) s.tp_partial->all_reduce(s.grads_at(u, piece), ReduceOp::sum);
      }
    }
  }
}

void ParamStore::set_tensor_partial_grads(Comm* tp, TpPartialGrads which) {
  impl_->tp_partial = tp;
  impl_->tp_partial_which = which;
}

double ParamStore::grad_sq_norm() {
  Impl& s = *impl_;
  // The counted pieces, merged where they touch, so a unit costs one reduction (a few with
  // tensor-replicated parameters excluded) rather than one per parameter.
  struct Piece {
    const LocalUnit* unit;
    Range range;  // relative to the unit
  };
  std::vector<Piece> pieces;
  for (const LocalUnit& u : layout_.units()) {
    for (int pi : u.params) {
      const LocalParam& p = layout_.params()[pi];
      if (!p.counts_in_norm) continue;
      Range piece = intersect({p.offset - u.offset, p.offset - u.offset + p.numel}, u.shard);
      if (piece.empty()) continue;
      if (!pieces.empty() && pieces.back().unit == &u && pieces.back().range.end == piece.begin)
        pieces.back().range.end = piece.end;
      else
        pieces.push_back({&u, piece});
    }
  }
  // One op, one host read: on a GPU a few launches instead of two and a synchronisation per
  // piece; on the CPU the same sums in the same order.
  std::vector<Tensor> xs;
  xs.reserve(pieces.size());
  for (const Piece& p : pieces) xs.push_back(s.grads_at(*p.unit, p.range));
  return s.backend.sum_squares_many(std::move(xs));
}

void ParamStore::optimizer_step(const AdamWStep& step) {
  Impl& s = *impl_;
  s.wait_gathers();
  // Every tensor's update in one op (one launch per few dozen tensors on a GPU).
  std::vector<AdamWOp> pieces;
  for (const LocalUnit& u : layout_.units()) {
    Range ur = s.opt_range(u);
    for (int pi : u.params) {
      const LocalParam& p = layout_.params()[pi];
      const ParamSpec& spec = layout_.spec(p);
      Range pr{p.offset - u.offset, p.offset - u.offset + p.numel};
      Range piece = intersect(pr, ur);
      if (piece.empty()) continue;
      AdamWStep a = step;
      if (spec.decay == WeightDecay::off) a.weight_decay = 0.0f;
      // Stochastic rounding keyed by (step seed, tensor, element of the local slice): the same
      // for every data-parallel shard split.
      a.seed = step.seed ^ name_hash(spec.name);
      a.offset = uint64_t(piece.begin - pr.begin);
      pieces.push_back(AdamWOp{s.master_at(u, piece), s.grads_at(u, piece), s.state_at(s.m, u, piece),
                               s.state_at(s.v, u, piece), s.copy_at(u, piece), a});
    }
  }
  s.backend.adamw_many(std::move(pieces));
  // In unit order, the order the next forward acquires them in.
  if (s.zero.param_gather() == ParamGather::after_step && s.dp.size() > 1) {
    for (size_t x = 0; x < layout_.units().size(); ++x) {
      const LocalUnit& u = layout_.units()[x];
      Tensor whole = s.compute.tensor(s.act, {layout_.total()}).flat(u.offset, u.offset + u.padded);
      s.gathers[x] = s.dp.all_gather_async(whole, whole.flat(u.shard.begin, u.shard.end));
    }
    if (s.gather_wait == GatherWait::in_step) s.wait_gathers();
  }
}

void ParamStore::set_gather_wait(GatherWait wait) {
  impl_->wait_gathers();
  impl_->gather_wait = wait;
}

MemoryFigures ParamStore::memory() const {
  const Impl& s = *impl_;
  MemoryFigures f;
  f.params = int64_t(s.compute.bytes() + s.compute_shard.bytes());
  // ZeRO-3's gathered units live in the staging pool (comm); before the first step has filled
  // it, estimate them as two of the largest unit.
  if (s.zero.param_gather() == ParamGather::per_unit && s.pool_peak == 0) f.params += 2 * layout_.max_unit_padded() * int64_t(dtype_size(s.act));
  f.master = int64_t(s.master.bytes());
  f.grads = int64_t(s.grads_full.bytes() + s.grads_shard.bytes());
  f.optimizer = int64_t(s.m.bytes() + s.v.bytes());
  f.comm = s.pool_peak + int64_t(s.grads_wire.bytes());
  return f;
}

}  // namespace trainer
