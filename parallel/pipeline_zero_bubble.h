// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024) as compute orders: each
// stage's backward is split into B (the input gradient, sent upstream at once) and W (the
// weight gradient, needed by no one), and W is put off into the time a stage would otherwise
// wait. Bounds: 1F1B's p - s micro-batches between F and B on stage s, and at most p between F
// and W on every stage (a micro-batch's activations and its B outputs live until its W): the
// pipeline's peak activation count stays 1F1B's, whose first stage holds p, while the later
// stages, which 1F1B leaves lighter, hold their deferred W's.
//
// The orders come from one list-scheduling pass over all stages together with unit times for
// F, B and W and instant messages: at each step a stage runs a B whose gradient has arrived,
// else an F whose input has arrived (within the bound), else its oldest pending W. An order
// that a feasible execution produced is free of cyclic waits, whatever the real times are;
// the bubble this pass leaves is the schedule model's (zero_bubble_fraction): at most 1F1B's
// (p - 1) / (m + p - 1) and at least ZB-H1's (p - 1) / (3m + p - 1), which it reaches for some
// shapes (p 2, m 4; p 4, m 4) and nears for others (p 4, m 8: 0.17 against 0.11 and 0.27),
// the bound on deferred W's being tighter than ZB-H1's.
#pragma once

#include <vector>

#include "parallel/pipeline_schedule.h"

namespace trainer {

// The compute actions (forward, backward, backward_weight) of stage `stage`, in order (the pass
// runs every stage; only this one's order is kept: the planner asks it for thousands of shapes).
std::vector<Action> zero_bubble_order(int n_stages, int n_micro, int stage);
// Idle share of the unit-time pass: 1 - 3m / (its length).
double zero_bubble_fraction(int n_stages, int n_micro);

}  // namespace trainer
