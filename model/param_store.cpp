// ParamStore implementation (see param_store.h for the ZeRO stages).
#include "model/param_store.h"

#include <algorithm>
#include <deque>

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

struct ParamStore::Impl {
  const StageLayout& layout;
  Backend& backend;
  Comm& dp;
  Comm* embed;
  Comm* tp_partial = nullptr;  // sum replicated gradients over this group (sequence parallelism)
  int zero;
  DType act;
  int64_t bucket_bytes;

  bool master_aliases_compute = false;  // act f32 and zero < 3
  bool master_full = false;             // master indexed like the flat buffer
  Buffer compute, compute_shard, master, grads_full, grads_shard, m, v;

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
    Buffer shard_out;
    Buffer temp;  // the unit's gradients being reduced; the next micro-batch gets a fresh one
  };
  std::deque<Pending> pending;
  std::vector<CommRequestPtr> bucket_requests;
  int bucket_lo = -1, bucket_hi = -1;
  int64_t bucket_cur = 0;
  bool reduce_now = true;

  Impl(const StageLayout& l, Backend& b, Comm& d, Comm* e, int z, double bucket_mb)
      : layout(l), backend(b), dp(d), embed(e), zero(z), act(b.act_dtype()),
        bucket_bytes(std::max<int64_t>(1, int64_t(bucket_mb * 1024 * 1024))) {}

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
    return zero == 0 ? Range{0, u.numel} : intersect(u.shard, {0, u.numel});
  }
  int64_t state_index(const LocalUnit& u, int64_t x) const {
    return zero == 0 ? u.offset + x : u.shard_offset + (x - u.shard.begin);
  }
  int64_t master_index(const LocalUnit& u, int64_t x) const {
    return master_full ? u.offset + x : u.shard_offset + (x - u.shard.begin);
  }
  Tensor master_at(const LocalUnit& u, Range r) {
    const Buffer& b = master_aliases_compute ? compute : master;
    int64_t i = master_index(u, r.begin);
    return b.tensor(DType::f32, {int64_t(b.bytes() / 4)}).flat(i, i + r.size());
  }
  Tensor state_at(const Buffer& b, const LocalUnit& u, Range r) {
    int64_t i = state_index(u, r.begin);
    return b.tensor(DType::f32, {int64_t(b.bytes() / 4)}).flat(i, i + r.size());
  }
  Tensor grads_at(const LocalUnit& u, Range r) {
    if (zero < 2) return grads_full.tensor(DType::f32, {layout.total()}).flat(u.offset + r.begin, u.offset + r.end);
    int64_t i = u.shard_offset + (r.begin - u.shard.begin);
    return grads_shard.tensor(DType::f32, {layout.shard_total()}).flat(i, i + r.size());
  }
  // Compute copy to refresh after the master changes (undefined when it is the master).
  Tensor copy_at(const LocalUnit& u, Range r) {
    if (zero < 3) {
      if (master_aliases_compute) return Tensor{};
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

  // Writes elements [part.begin, part.end) of a parameter's local slice (f32 host values) into
  // every copy this rank keeps.
  void set_values(const LocalParam& p, Range part, const float* values) {
    const LocalUnit& u = layout.units()[p.unit];
    const int64_t base = p.offset - u.offset;  // the parameter's start within its unit
    Range pr{base + part.begin, base + part.end};
    auto put = [&](Range piece, Tensor dst) {
      if (!piece.empty()) upload(dst, values + (piece.begin - pr.begin));
    };
    if (zero < 3) put(pr, compute.tensor(act, {layout.total()}).flat(u.offset + pr.begin, u.offset + pr.end));
    if (!master_aliases_compute) {
      Range piece = master_full ? pr : intersect(pr, u.shard);
      if (!piece.empty()) put(piece, master_at(u, piece));
    }
    if (zero == 3 && act != DType::f32) {
      Range piece = intersect(pr, u.shard);
      if (!piece.empty()) put(piece, copy_at(u, piece));
    }
  }
  void set_values(const LocalParam& p, const std::vector<float>& values) {
    set_values(p, {0, p.numel}, values.data());
  }

  void flush_bucket() {
    if (bucket_lo < 0) return;
    const auto& units = layout.units();
    int64_t begin = units[bucket_lo].offset, end = units[bucket_hi].offset + units[bucket_hi].padded;
    // At most two buckets in flight: each non-blocking all-reduce holds a temporary buffer of
    // its size inside MPI, so unbounded overlap would cost another copy of the gradients.
    while (bucket_requests.size() >= 2) {
      bucket_requests.front()->wait();
      bucket_requests.erase(bucket_requests.begin());
    }
    if (dp.size() > 1)
      bucket_requests.push_back(
          dp.all_reduce_async(grads_full.tensor(DType::f32, {layout.total()}).flat(begin, end), ReduceOp::sum));
    bucket_lo = bucket_hi = -1;
    bucket_cur = 0;
  }

  void complete_oldest() {
    Pending p = std::move(pending.front());
    pending.pop_front();
    p.request->wait();
    const LocalUnit& u = layout.units()[p.unit];
    Tensor acc = grads_shard.tensor(DType::f32, {layout.shard_total()})
                     .flat(u.shard_offset, u.shard_offset + u.shard.size());
    backend.add(acc, acc, p.shard_out.tensor(DType::f32, {u.shard.size()}));
    give(std::move(p.shard_out));
    give(std::move(p.temp));
  }
};

ParamStore::ParamStore(const StageLayout& layout, Backend& backend, Comm& dp, Comm* embed, int zero,
                       double bucket_mb)
    : impl_(std::make_unique<Impl>(layout, backend, dp, embed, zero, bucket_mb)), layout_(layout), zero_(zero) {
  TRAINER_CHECK(zero >= 0 && zero <= 3, "zero stage");
  TRAINER_CHECK(dp.size() == layout.options().dp, "data group size vs layout");
  Impl& s = *impl_;
  const size_t act_size = dtype_size(s.act);
  const int64_t total = layout.total(), shard = layout.shard_total();
  s.master_aliases_compute = s.act == DType::f32 && zero < 3;
  s.master_full = zero == 0 || s.master_aliases_compute;
  auto zeroed = [&](int64_t n, size_t elem) {
    Buffer b = backend.alloc(size_t(n) * elem);
    if (n) backend.memset_zero(b.data(), b.bytes());
    return b;
  };
  if (zero < 3) s.compute = zeroed(total, act_size);
  if (zero == 3 && s.act != DType::f32) s.compute_shard = zeroed(shard, act_size);
  if (!s.master_aliases_compute) s.master = zeroed(s.master_full ? total : shard, 4);
  if (zero < 2) s.grads_full = zeroed(total, 4);
  else s.grads_shard = zeroed(shard, 4);
  int64_t state = zero == 0 ? total : shard;
  s.m = zeroed(state, 4);
  s.v = zeroed(state, 4);
}

ParamStore::~ParamStore() = default;

void ParamStore::init_random(uint64_t seed) {
  // In chunks, so the host never holds more than a few MB beyond the model itself.
  constexpr int64_t kChunk = int64_t(1) << 20;
  const GptConfig& cfg = layout_.config();
  std::vector<float> values;
  for (const LocalParam& p : layout_.params()) {
    const ParamSpec& spec = layout_.spec(p);
    int64_t run_start = 0;  // local index where the current run starts
    for (const Range& r : p.runs) {
      for (int64_t at = 0; at < r.size(); at += kChunk) {
        const int64_t n = std::min(kChunk, r.size() - at);
        values.resize(size_t(n));
        float* out = values.data();
        const int64_t g = r.begin + at;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) out[i] = init_value(cfg, spec, seed, g + i);
        impl_->set_values(p, {run_start + at, run_start + at + n}, out);
      }
      run_start += r.size();
    }
  }
  impl_->backend.synchronize();
}

void ParamStore::load(const FetchFn& fetch) {
  for (const LocalParam& p : layout_.params()) {
    std::vector<float> values(p.numel);
    int64_t pos = 0;
    for (const Range& r : p.runs) {
      fetch(layout_.spec(p), r, values.data() + pos);
      pos += r.size();
    }
    impl_->set_values(p, values);
  }
  impl_->backend.synchronize();
}

std::vector<float> ParamStore::local_values(const LocalParam& p) {
  Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[p.unit];
  std::vector<float> out(p.numel);
  if (s.master_full) {
    s.download(s.master_at(u, {p.offset - u.offset, p.offset - u.offset + p.numel}), out.data());
    return out;
  }
  // Sharded master: gather the unit over the data group.
  Buffer whole = s.backend.alloc(size_t(u.padded) * 4);
  Tensor w = whole.tensor(DType::f32, {u.padded});
  Tensor mine = s.master.tensor(DType::f32, {layout_.shard_total()})
                    .flat(u.shard_offset, u.shard_offset + u.shard.size());
  s.dp.all_gather(w, mine);
  s.download(w.flat(p.offset - u.offset, p.offset - u.offset + p.numel), out.data());
  return out;
}

Tensor ParamStore::acquire(int unit) {
  Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[unit];
  if (zero_ < 3) return s.compute.tensor(s.act, {layout_.total()}).flat(u.offset, u.offset + u.padded);
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
  if (zero_ < 3) return;
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
  const Buffer& g = zero_ < 2 ? s.grads_full : s.grads_shard;
  if (g.bytes()) s.backend.memset_zero(g.data(), g.bytes());
}

void ParamStore::begin_micro(bool last_micro) { impl_->reduce_now = zero_ >= 2 || last_micro; }

Tensor ParamStore::grads(int unit) {
  Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[unit];
  if (zero_ < 2) return s.grads_full.tensor(DType::f32, {layout_.total()}).flat(u.offset, u.offset + u.padded);
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
  if (zero_ < 2) {
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
  Buffer out = s.take(size_t(u.shard.size()) * 4);
  CommRequestPtr req = s.dp.reduce_scatter_async(out.tensor(DType::f32, {u.shard.size()}),
                                                 it->second.tensor(DType::f32, {u.padded}));
  s.pending.push_back({unit, std::move(req), std::move(out), std::move(it->second)});
  s.grad_temp.erase(it);
  while (s.pending.size() > 2) s.complete_oldest();
}

void ParamStore::finish_grads() {
  Impl& s = *impl_;
  if (zero_ < 2) {
    s.flush_bucket();
    for (auto& r : s.bucket_requests) r->wait();
    s.bucket_requests.clear();
  } else {
    while (!s.pending.empty()) s.complete_oldest();
    TRAINER_CHECK(s.grad_temp.empty(), "unit gradients staged but never reduced");
  }
  if (s.embed) {
    int unit = layout_.has_embedding() ? layout_.unit_wte() : layout_.unit_head_wte();
    const LocalUnit& u = layout_.units()[unit];
    Tensor g = zero_ < 2 ? s.grads_full.tensor(DType::f32, {layout_.total()}).flat(u.offset, u.offset + u.padded)
                         : s.grads_shard.tensor(DType::f32, {layout_.shard_total()})
                               .flat(u.shard_offset, u.shard_offset + u.shard.size());
    s.embed->all_reduce(g, ReduceOp::sum);
  }
  if (s.tp_partial && s.tp_partial->size() > 1) {
    for (const LocalUnit& u : layout_.units()) {
      for (int pi : u.params) {
        const LocalParam& p = layout_.params()[pi];
        if (layout_.spec(p).split != TpSplit::none) continue;
        Range pr{p.offset - u.offset, p.offset - u.offset + p.numel};
        Range piece = zero_ < 2 ? pr : intersect(pr, u.shard);
        if (!piece.empty()) s.tp_partial->all_reduce(s.grads_at(u, piece), ReduceOp::sum);
      }
    }
  }
}

void ParamStore::set_tensor_partial_grads(Comm* tp) { impl_->tp_partial = tp; }

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
  double total = 0;
  for (const Piece& p : pieces) total += s.backend.sum_squares(s.grads_at(*p.unit, p.range));
  return total;
}

void ParamStore::optimizer_step(const OptimizerHyper& h) {
  Impl& s = *impl_;
  for (const LocalUnit& u : layout_.units()) {
    Range ur = s.opt_range(u);
    for (int pi : u.params) {
      const LocalParam& p = layout_.params()[pi];
      const ParamSpec& spec = layout_.spec(p);
      Range pr{p.offset - u.offset, p.offset - u.offset + p.numel};
      Range piece = intersect(pr, ur);
      if (piece.empty()) continue;
      AdamWStep a;
      a.lr = h.lr;
      a.beta1 = h.beta1;
      a.beta2 = h.beta2;
      a.eps = h.eps;
      a.weight_decay = spec.decay == WeightDecay::on ? h.weight_decay : 0.0f;
      a.grad_scale = h.grad_scale;
      a.step = h.step;
      a.seed = h.seed ^ name_hash(spec.name);
      a.offset = uint64_t(piece.begin - pr.begin);
      s.backend.adamw(s.master_at(u, piece), s.grads_at(u, piece), s.state_at(s.m, u, piece),
                      s.state_at(s.v, u, piece), s.copy_at(u, piece), a);
    }
  }
  if ((zero_ == 1 || zero_ == 2) && s.dp.size() > 1) {
    std::vector<CommRequestPtr> reqs;
    for (const LocalUnit& u : layout_.units()) {
      Tensor whole = s.compute.tensor(s.act, {layout_.total()}).flat(u.offset, u.offset + u.padded);
      reqs.push_back(s.dp.all_gather_async(whole, whole.flat(u.shard.begin, u.shard.end)));
    }
    for (auto& r : reqs) r->wait();
  }
}

std::vector<float> ParamStore::read_state(const LocalParam& p, StateKind kind) {
  Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[p.unit];
  Range own = layout_.owned_slice(p);
  Range piece{p.offset - u.offset + own.begin, p.offset - u.offset + own.end};
  std::vector<float> out(piece.size());
  if (piece.empty()) return out;
  Tensor src = kind == StateKind::master ? s.master_at(u, piece)
                                         : s.state_at(kind == StateKind::m ? s.m : s.v, u, piece);
  s.download(src, out.data());
  return out;
}

Range ParamStore::needed_range(const LocalParam& p, StateKind kind) const {
  const Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[p.unit];
  Range pr{p.offset - u.offset, p.offset - u.offset + p.numel};
  Range piece = (kind == StateKind::master && s.master_full) ? pr : intersect(pr, s.opt_range(u));
  return {piece.begin - pr.begin, piece.end - pr.begin};
}

void ParamStore::write_state(const LocalParam& p, StateKind kind, const std::vector<float>& values) {
  Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[p.unit];
  Range need = needed_range(p, kind);
  TRAINER_CHECK(int64_t(values.size()) == need.size(), "write_state size for " + layout_.spec(p).name);
  if (need.empty()) return;
  Range piece{p.offset - u.offset + need.begin, p.offset - u.offset + need.end};
  Tensor dst = kind == StateKind::master ? s.master_at(u, piece)
                                         : s.state_at(kind == StateKind::m ? s.m : s.v, u, piece);
  s.upload(dst, values.data());
}

void ParamStore::sync_compute_from_master() {
  Impl& s = *impl_;
  if (!s.master_aliases_compute) {
    for (const LocalUnit& u : layout_.units()) {
      Range r = s.master_full ? Range{0, u.padded} : u.shard;
      Tensor dst = s.copy_at(u, r);
      if (dst.defined()) s.backend.cast(dst, s.master_at(u, r));
    }
  }
  if ((zero_ == 1 || zero_ == 2) && s.dp.size() > 1) {
    for (const LocalUnit& u : layout_.units()) {
      Tensor whole = s.compute.tensor(s.act, {layout_.total()}).flat(u.offset, u.offset + u.padded);
      s.dp.all_gather(whole, whole.flat(u.shard.begin, u.shard.end));
    }
  }
  s.backend.synchronize();
}

MemoryFigures ParamStore::memory() const {
  const Impl& s = *impl_;
  MemoryFigures f;
  f.params = int64_t(s.compute.bytes() + s.compute_shard.bytes());
  // ZeRO-3's gathered units live in the staging pool (comm); before the first step has filled
  // it, estimate them as two of the largest unit.
  if (zero_ == 3 && s.pool_peak == 0) f.params += 2 * layout_.max_unit_padded() * int64_t(dtype_size(s.act));
  f.master = int64_t(s.master.bytes());
  f.grads = int64_t(s.grads_full.bytes() + s.grads_shard.bytes());
  f.optimizer = int64_t(s.m.bytes() + s.v.bytes());
  f.comm = s.pool_peak;
  return f;
}

}  // namespace trainer
