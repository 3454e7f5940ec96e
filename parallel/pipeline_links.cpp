// Routing of pipeline messages onto the chain's and the wrap-around's communicators (see
// pipeline_links.h).
#include "parallel/pipeline_links.h"

#include <string>

#include "kernels/base/check.h"

namespace trainer {

PipelineRoute pipeline_route(const PipelineComms& comms, ActionKind kind, int stage, int n_stages) {
  TRAINER_CHECK(!is_compute(kind), std::string("pipeline route of ") + enum_name(kActionKindNames, kind));
  TRAINER_CHECK(stage >= 0 && stage < n_stages, "pipeline route of stage " + std::to_string(stage) + " of " +
                                                    std::to_string(n_stages));
  const bool act = kind == ActionKind::recv_act || kind == ActionKind::send_act;
  // Messages travel towards the next stage (activations sent, gradients received) or the
  // previous one; the step from the last stage to stage 0 (or back) is the wrap-around.
  const bool towards_next = kind == ActionKind::send_act || kind == ActionKind::recv_grad;
  const bool wraps = towards_next ? stage == n_stages - 1 : stage == 0;
  PipelineRoute r;
  if (wraps) {
    r.comm = act ? comms.wrap_act : comms.wrap_grad;
    r.peer = stage == 0 ? 1 : 0;  // the last stage is the wrap-around group's rank 1
  } else {
    r.comm = act ? comms.act : comms.grad;
    r.peer = towards_next ? next_stage(stage, n_stages) : prev_stage(stage, n_stages);
  }
  TRAINER_CHECK(r.comm != nullptr, std::string(enum_name(kActionKindNames, kind)) + " of stage " +
                                       std::to_string(stage) + " of " + std::to_string(n_stages) + " has no " +
                                       (wraps ? "wrap-around " : "") + "pipeline communicator");
  return r;
}

}  // namespace trainer
