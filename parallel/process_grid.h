// ProcessGrid: world = data x tensor x pipeline (ParallelDims, which also owns the rank order),
// with one communicator per group.
// Groups: tp (same data and pipeline coordinates), dp (same tensor and pipeline), pp (same
// data and tensor; its ranks are the stages in order), and embed (the first and the last
// stage of one pp group, which both hold the tied token embedding; null when pipeline == 1
// or on middle stages). The pipeline group has two communicators over the same ranks, one for
// activations (forward direction) and one for gradients (backward direction): NCCL runs each
// communicator's operations in order on one stream, and with a single one a receive posted for
// one direction could block a send of the other (a cross-stage cycle under 1f1b). A ring
// layout (virtual stages) adds the wrap-around link's two (pipeline_links.h): groups of the
// first and the last stage of one pp group, stage 0 their rank 0, made only for a ring.
#pragma once

#include <string>

#include <memory>

#include "parallel/comm.h"
#include "parallel/parallel_dims.h"
#include "parallel/pipeline_links.h"

namespace trainer {

class ProcessGrid {
 public:
  // Collective over world. world.size() must equal dims.world() (checked by the caller with a
  // user-facing message; here it is an internal check). links: ring (virtual stages) also
  // makes the wrap-around communicators; every rank passes the same.
  ProcessGrid(Comm& world, const ParallelDims& dims, PipelineLinks links = PipelineLinks::chain);

  const ParallelDims& dims() const { return dims_; }
  const GridCoords& coords() const { return coords_; }
  int rank() const { return world_.rank(); }
  bool first_stage() const { return dims_.first_stage(coords_.pp); }
  bool last_stage() const { return dims_.last_stage(coords_.pp); }

  Comm& world() { return world_; }
  Comm& tp() { return *tp_; }
  Comm& dp() { return *dp_; }
  Comm& pp() { return *pp_; }
  Comm& pp_grad() { return *pp_grad_; }
  // The wrap-around link's (null without a ring and on middle stages).
  Comm* pp_wrap_act() { return pp_wrap_act_.get(); }
  Comm* pp_wrap_grad() { return pp_wrap_grad_.get(); }
  // All of this stage's pipeline communicators, for the executor (all null with one stage).
  PipelineComms pipeline_comms();
  Comm* embed() { return embed_.get(); }

 private:
  Comm& world_;
  ParallelDims dims_;
  GridCoords coords_;
  std::unique_ptr<Comm> tp_, dp_, pp_, pp_grad_, pp_wrap_act_, pp_wrap_grad_, embed_;
};

}  // namespace trainer
