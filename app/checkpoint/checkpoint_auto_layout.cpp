// The layout an auto recipe keeps from its checkpoint (see checkpoint_auto_layout.h).
#include "app/checkpoint/checkpoint_auto_layout.h"

#include <vector>

#include "app/checkpoint/checkpoint_inspect.h"
#include "app/checkpoint/checkpoint_lineage.h"
#include "app/checkpoint/checkpoint_manifest.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

bool keeps(int recipe_value, int saved) { return recipe_value == kAutoDegree || recipe_value == saved; }

}  // namespace

std::optional<KeptLayout> auto_layout_from_checkpoint(const Recipe& recipe, int world) {
  const CheckpointConfig& c = recipe.checkpoint;
  if (!recipe.auto_layout() || c.resume == "never") return std::nullopt;
  std::vector<std::string> candidates;
  try {
    if (c.resume != "auto") candidates.push_back(resolve_checkpoint_dir(c.resume));
    else if (!c.dir.empty()) candidates = resume_candidates(c.dir);
    if (candidates.empty()) return std::nullopt;
    // Problems with the checkpoint are the resume's to report; here it only offers a layout.
    const CkptManifest m = read_manifest(candidates.front());
    const ParallelConfig& p = recipe.parallel;
    if (m.dims.world() != world || !keeps(p.data, m.dims.data) || !keeps(p.tensor, m.dims.tensor) ||
        !keeps(p.pipeline, m.dims.pipeline) || !keeps(p.zero, m.zero))
      return std::nullopt;
    KeptLayout kept{recipe, candidates.front()};
    kept.resolved.parallel.data = m.dims.data;
    kept.resolved.parallel.tensor = m.dims.tensor;
    kept.resolved.parallel.pipeline = m.dims.pipeline;
    kept.resolved.parallel.zero = m.zero;
    return kept;
  } catch (const InputError&) {
    return std::nullopt;
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

}  // namespace trainer
