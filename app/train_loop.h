// The training loop behind `trainer train`: evaluation at step 0, every eval.every steps and
// at the end; a progress line every log.every steps; metrics records; optional samples; a
// summary at the end.
#pragma once

#include "app/recipe.h"

namespace trainer {

int run_training(const Recipe& recipe);

}  // namespace trainer
