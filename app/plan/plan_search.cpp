// Layout enumeration and ranking (see plan_search.h).
#include "app/plan/plan_search.h"

#include <algorithm>
#include <tuple>

#include "app/plan/plan_closed_form.h"

namespace trainer {

std::vector<int> divisors(int n) {
  std::vector<int> small, large;
  for (int d = 1; int64_t(d) * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

std::vector<PlanLayout> enumerate_layouts(const SearchInput& in) {
  const GptConfig& c = in.config;
  std::vector<PlanLayout> out;
  for (int tp : divisors(in.world)) {
    if (c.n_head % tp != 0 || c.padded_vocab % tp != 0 || c.kv_heads() % tp != 0 || c.mlp_dim() % tp != 0) continue;
    for (int pp : divisors(in.world / tp)) {
      if (pp > c.n_layer) continue;
      const int dp = in.world / (tp * pp);
      if (in.global_batch % dp != 0) continue;
      const ParallelDims dims{dp, tp, pp};
      // With one data rank there is nothing to shard; per-unit gathers are not pipelined.
      std::vector<int> zeros;
      for (ZeroPolicy z : all_zero_policies()) {
        if (!dims.data_parallel() && z.shard_optimizer_state()) continue;
        if (dims.pipelined() && z.param_gather() == ParamGather::per_unit) continue;
        zeros.push_back(z.stage());
      }
      // (schedule, virtual stages): interleaved over 2 and 4 chunks where every virtual stage
      // gets a layer and the micro-batches come in whole groups of pp (the recipe's rules), and
      // zero_bubble without recomputation.
      for (int zero : zeros)
        for (int mb : divisors(in.global_batch / dp)) {
          const int m = in.global_batch / dp / mb;
          std::vector<std::pair<Schedule, int>> schedules = {{Schedule::one_f_one_b, 1}};
          if (dims.pipelined()) schedules = {{Schedule::gpipe, 1}, {Schedule::one_f_one_b, 1}};
          for (int v : {2, 4})
            if (dims.pipelined() && c.n_layer >= v * pp && m % pp == 0) schedules.push_back({Schedule::interleaved, v});
          if (dims.pipelined()) schedules.push_back({Schedule::zero_bubble, 1});
          for (const auto& [s, v] : schedules)
            for (Recompute r : in.recompute) {
              if (s == Schedule::zero_bubble && r != Recompute::none) continue;  // W reads the saved activations
              PlanLayout l;
              static_cast<ParallelDims&>(l) = dims;
              l.virtual_stages = v;
              l.zero = zero;
              l.micro_batch = mb;
              l.global_batch = in.global_batch;
              l.seq_len = in.seq_len;
              l.schedule = s;
              l.recompute = r;
              l.bucket_reduce = bucket_reduce_on(in.device.device());
              l.grad_reduce_dtype = in.grad_reduce_dtype;
              out.push_back(l);
            }
        }
    }
  }
  return out;
}

PlanCandidate evaluate_layout(const SearchInput& in, const PlanLayout& l) {
  PlanCandidate cand;
  cand.layout = l;
  for (int s : plan_sampled_stages(l)) {
    const int64_t bytes = plan_rank_memory_closed_form(in.config, l, s, in.act_bytes, in.host).peak();
    if (bytes > cand.largest_rank_bytes) {
      cand.largest_rank_bytes = bytes;
      cand.largest_stage = s;
    }
  }
  cand.needed_bytes = cand.largest_rank_bytes + in.device.runtime_bytes +
                      plan_attention_workspace(in.config, l, in.device, in.attention);
  cand.fits = cand.needed_bytes <= in.memory_limit;
  cand.time = estimate_step(in.config, l, in.device, in.peak_flops, in.act_bytes);
  return cand;
}

std::vector<PlanCandidate> search_layouts(const SearchInput& in) {
  std::vector<PlanCandidate> out;
  for (const PlanLayout& l : enumerate_layouts(in)) out.push_back(evaluate_layout(in, l));
  auto key = [](const PlanCandidate& c) {
    const PlanLayout& l = c.layout;
    return std::make_tuple(!c.fits, c.time.step_s, c.needed_bytes, l.tensor, l.pipeline, l.zero, l.micro_batch,
                           int(l.schedule), l.virtual_stages, int(l.recompute));
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const PlanCandidate& a, const PlanCandidate& b) { return key(a) < key(b); });
  return out;
}

}  // namespace trainer
