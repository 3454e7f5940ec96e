// CkptParts: the stateful parts of one rank that a checkpoint saves and restores, named one by
// one so that checkpoint code needs no Trainer (and can be tested without one): the parameter
// store and the layout that says what it holds, the training data's position, the host world
// the save and the resume agree over, and the run's description (model, layout, seed, recipe:
// manifest_from). The step and the lineage travel as values: a save is given them, a load
// returns the step it restored. Random numbers need no state of their own: they are keyed by
// (seed, step, purpose, index).
#pragma once

#include "app/checkpoint/checkpoint_manifest.h"
#include "app/recipe/recipe.h"
#include "data/loader.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/comm.h"

namespace trainer {

struct CkptParts {
  Comm& world;                    // every rank, on the host (collectives and agreements)
  const StageLayout& layout;      // which parameters and slices this rank holds
  ParamStore& store;              // parameters, master weights, AdamW moments
  DataLoader* loader;             // the training data's position (null: no training data)
  const CheckpointConfig& config; // checkpoint.dir, keep, resume
  const CkptManifest& run;        // the run's model, layout, seed and recipe (no files, no pieces)
};

}  // namespace trainer
