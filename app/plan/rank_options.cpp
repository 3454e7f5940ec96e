// rank_options (see rank_options.h).
#include "app/plan/rank_options.h"

namespace trainer {

StageOptions stage_options(const PlanLayout& l, int pp_rank, Recompute recompute) {
  StageOptions o;
  o.micro_batch = l.micro_batch;
  o.seq_len = l.seq_len;
  o.n_slots = plan_slots(l, pp_rank);
  o.recompute = recompute;
  o.sequence_parallel = l.sequence_parallel ? SeqParallel::on : SeqParallel::off;
  o.dloss = float(1.0 / (double(l.global_batch) * double(l.seq_len)));
  o.documents = l.documents;
  // The split keeps the saved activations for the weight pass, which recomputation would
  // overwrite (the recipe refuses zero_bubble with it; a plan reports the other modes without).
  if (l.pipelined() && splits_backward(l.schedule) && recompute == Recompute::none)
    o.split = BackwardSplit::input_then_weight;
  return o;
}

RankOptions rank_options(const PlanLayout& l, const GridCoords& at) {
  RankOptions o;
  o.layout.dims = l;
  o.layout.dims.virtual_stages = l.chunks_per_rank();
  o.layout.at = at;
  o.layout.stage_layers = l.stage_layers;
  o.zero = l.zero_policy();
  o.bucket_mb = l.bucket_mb;
  o.grad_reduce_dtype = l.grad_reduce_dtype;
  o.stage = stage_options(l, at.pp, l.recompute);
  return o;
}

}  // namespace trainer
