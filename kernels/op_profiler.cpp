// OpProfiler (see op_profiler.h).
#include "kernels/op_profiler.h"

#include <algorithm>

namespace trainer {

OpProfiler::OpProfiler(Backend& backend) : backend_(backend), timer_(backend.make_event_timer()) {
  backend_.set_op_profiler(this);
}

OpProfiler::~OpProfiler() { backend_.set_op_profiler(nullptr); }

OpProfiler::Open OpProfiler::begin(const char* name, std::string shape, OpCost cost) {
  auto [it, added] = keys_.try_emplace({name, shape}, int(totals_.size()));
  if (added) totals_.push_back({name, std::move(shape), 0, 0, 0, 0});
  return {it->second, timer_->record(), cost};
}

void OpProfiler::end(const Open& open) { pending_.push_back({open.key, open.begin, timer_->record(), open.cost}); }

void OpProfiler::collect() {
  for (const Pending& p : pending_) {
    OpProfileRow& r = totals_[size_t(p.key)];
    r.calls += 1;
    r.seconds += timer_->seconds(p.begin, p.end);
    r.bytes += p.cost.bytes;
    r.flops += p.cost.flops;
  }
  pending_.clear();
  timer_->reset();
}

void OpProfiler::clear() {
  collect();
  for (OpProfileRow& r : totals_) {
    r.calls = 0;
    r.seconds = 0;
    r.bytes = 0;
    r.flops = 0;
  }
}

std::vector<OpProfileRow> OpProfiler::rows() const {
  std::vector<OpProfileRow> out;
  for (const OpProfileRow& r : totals_)
    if (r.calls > 0) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const OpProfileRow& x, const OpProfileRow& y) { return x.seconds > y.seconds; });
  return out;
}

}  // namespace trainer
