// parallel: auto on resume: the layout a run with auto degrees keeps from the checkpoint it
// resumes, so a resume on the same world size continues on the layout it chose (and timed)
// before instead of choosing anew. Another world size, a checkpoint whose layout breaks one of
// the recipe's fixed degrees, or no checkpoint means no kept layout (the caller chooses).
#pragma once

#include <optional>
#include <string>

#include "app/recipe/recipe.h"

namespace trainer {

struct KeptLayout {
  Recipe resolved;       // the recipe with the checkpoint's degrees
  std::string checkpoint;  // where they came from
};

// The checkpoint a resume would try first (checkpoint.resume auto: the one `latest` names, else
// the newest; a path: that one), read for its layout; nullopt when none applies.
std::optional<KeptLayout> auto_layout_from_checkpoint(const Recipe& recipe, int world);

}  // namespace trainer
