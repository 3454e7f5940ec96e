// ParamStore: loading parameters, reading them back, and reading and writing the fp32 master
// and AdamW state by parameter (checkpoints, llm.c files, equivalence tests).
#include "model/param_store.h"

#include "kernels/base/check.h"
#include "model/param_store_impl.h"

namespace trainer {

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
  s.wait_gathers();  // an f32 ZeRO-1 master is the compute copy the gathers write
  const LocalUnit& u = layout_.units()[p.unit];
  std::vector<float> out(p.numel);
  if (s.master_full()) {
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

std::vector<float> ParamStore::read_state(const LocalParam& p, OptimizerState kind) {
  Impl& s = *impl_;
  s.wait_gathers();
  const LocalUnit& u = layout_.units()[p.unit];
  Range own = layout_.owned_slice(p);
  Range piece{p.offset - u.offset + own.begin, p.offset - u.offset + own.end};
  std::vector<float> out(piece.size());
  if (piece.empty()) return out;
  Tensor src = kind == OptimizerState::master ? s.master_at(u, piece)
                                         : s.state_at(kind == OptimizerState::m ? s.m : s.v, u, piece);
  s.download(src, out.data());
  return out;
}

Range ParamStore::needed_range(const LocalParam& p, OptimizerState kind) const {
  const Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[p.unit];
  Range pr{p.offset - u.offset, p.offset - u.offset + p.numel};
  Range piece = (kind == OptimizerState::master && s.master_full()) ? pr : intersect(pr, s.opt_range(u));
  return {piece.begin - pr.begin, piece.end - pr.begin};
}

void ParamStore::write_state(const LocalParam& p, OptimizerState kind, const std::vector<float>& values) {
  Impl& s = *impl_;
  const LocalUnit& u = layout_.units()[p.unit];
  Range need = needed_range(p, kind);
  TRAINER_CHECK(int64_t(values.size()) == need.size(), "write_state size for " + layout_.spec(p).name);
  if (need.empty()) return;
  s.wait_gathers();
  Range piece{p.offset - u.offset + need.begin, p.offset - u.offset + need.end};
  Tensor dst = kind == OptimizerState::master ? s.master_at(u, piece)
                                         : s.state_at(kind == OptimizerState::m ? s.m : s.v, u, piece);
  s.upload(dst, values.data());
}

void ParamStore::sync_compute_from_master() {
  Impl& s = *impl_;
  s.wait_gathers();
  if (!s.master_aliases_compute()) {
    for (const LocalUnit& u : layout_.units()) {
      Range r = s.master_full() ? Range{0, u.padded} : u.shard;
      Tensor dst = s.copy_at(u, r);
      if (dst.defined()) s.backend.cast(dst, s.master_at(u, r));
    }
  }
  if (s.zero.param_gather() == ParamGather::after_step && s.dp.size() > 1) {
    for (const LocalUnit& u : layout_.units()) {
      Tensor whole = s.compute.tensor(s.act, {layout_.total()}).flat(u.offset, u.offset + u.padded);
      s.dp.all_gather(whole, whole.flat(u.shard.begin, u.shard.end));
    }
  }
  s.backend.synchronize();
}

}  // namespace trainer
