// Shared pieces of the memory plan (see plan_memory.h).
#include "app/plan/plan_memory.h"

namespace trainer {

int plan_slots(const PlanLayout& l, int pp_rank) {
  return l.pipeline == 1 ? 1 : max_in_flight(l.schedule, pp_rank, l.pipeline, l.grad_accum());
}

}  // namespace trainer
