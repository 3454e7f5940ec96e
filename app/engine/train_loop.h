// The training loop behind `trainer train`: evaluation at step 0, every eval.every steps and
// at the end; a progress line every log.every steps; metrics records; optional samples; a
// summary at the end.
#pragma once

#include "app/recipe/recipe.h"

namespace trainer {

// stop_at > 0: stop after that step (checkpointing), as if preempted there.
int run_training(const Recipe& recipe, int64_t stop_at = 0);

}  // namespace trainer
