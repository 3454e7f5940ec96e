// StepJudge (see bad_steps.h).
#include "app/engine/bad_steps.h"

#include <fmt/format.h>

#include <cmath>

namespace trainer {

namespace {

StepAction action_of(NonfiniteAction a) {
  switch (a) {
    case NonfiniteAction::skip: return StepAction::skip;
    case NonfiniteAction::rollback: return StepAction::rollback;
    case NonfiniteAction::stop: break;
  }
  return StepAction::stop;
}

StepAction action_of(SpikeAction a) {
  switch (a) {
    case SpikeAction::skip: return StepAction::skip;
    case SpikeAction::rollback: return StepAction::rollback;
    case SpikeAction::warn: break;
  }
  return StepAction::warn;
}

// Summed oldest first on every call: the same order, hence the same bits, on every rank.
double mean_of(const std::deque<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum / double(values.size());
}

}  // namespace

StepJudge::StepJudge(NonfiniteAction on_nonfinite, const SpikeConfig& spike)
    : on_nonfinite_(on_nonfinite), spike_(spike) {}

StepVerdict StepJudge::judge(double loss, double grad_norm) const {
  StepVerdict v;
  if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
    v.kind = BadStepKind::nonfinite;
    v.action = action_of(on_nonfinite_);
    v.reason = !std::isfinite(loss) ? fmt::format("loss {} is not finite", loss)
                                    : fmt::format("gradient norm {} is not finite", grad_norm);
    return v;
  }
  if (spike_.factor <= 0 || losses_.size() < size_t(spike_.window)) return v;
  v.mean_loss = mean_of(losses_);
  v.mean_grad_norm = mean_of(norms_);
  const double f = spike_.factor;
  if (loss > f * v.mean_loss)
    v.reason = fmt::format("loss {:.4g} > {:g} x mean {:.4g} over {} steps", loss, f, v.mean_loss, spike_.window);
  else if (grad_norm > f * v.mean_grad_norm)
    v.reason = fmt::format("gradient norm {:.4g} > {:g} x mean {:.4g} over {} steps", grad_norm, f,
                           v.mean_grad_norm, spike_.window);
  else
    return v;
  v.kind = BadStepKind::spike;
  v.action = action_of(spike_.action);
  return v;
}

void StepJudge::accept(double loss, double grad_norm) {
  if (spike_.factor <= 0) return;
  losses_.push_back(loss);
  norms_.push_back(grad_norm);
  if (losses_.size() > size_t(spike_.window)) {
    losses_.pop_front();
    norms_.pop_front();
  }
}

void StepJudge::reset() {
  losses_.clear();
  norms_.clear();
}

}  // namespace trainer
