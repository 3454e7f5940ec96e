// parallel.auto_bench: timing one candidate layout on the real job. A Trainer for the resolved
// recipe on generated tokens (no data, checkpoints, evaluation, trace or metrics) takes one
// warm-up step and kAutoBenchSteps timed ones; the result is the slowest rank's mean step time,
// all-reduced, so every rank gets the same number and makes the same choice. Collective over
// `world`; the Trainer is gone when it returns.
#pragma once

#include "app/recipe/recipe.h"
#include "parallel/comm.h"

namespace trainer {

constexpr int kAutoBenchSteps = 3;

double time_layout_on_job(const Recipe& recipe, Comm& world, int local_rank);

}  // namespace trainer
