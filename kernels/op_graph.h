// OpGraph: one backend's device work between Backend::begin_capture and end_capture, kept to
// run again. replay() runs exactly the recorded ops, copies and memsets, in their order and
// with their arguments (the same pointers): a replay is the eager run again, bit for bit, as
// long as the buffers it names still hold what the code that was captured expects. Host code
// that ran while capturing (checks, bookkeeping, anything not device work) does not run again.
// valid() turns false when the backend moved memory the graph may name (the CUDA workspace
// grew); the owner then captures again. CUDA: a cudaGraphExec_t launched on the compute
// stream. CPU: the list of checked ops, each computed again (RecordedOps below).
#pragma once

#include <functional>
#include <utility>
#include <vector>

namespace trainer {

class OpGraph {
 public:
  virtual ~OpGraph() = default;
  virtual void replay() = 0;
  virtual bool valid() const = 0;
  // Ops, copies and memsets recorded (the CPU) or kernel nodes and copies (CUDA).
  virtual size_t nodes() const = 0;
};

// The CPU's graph: a backend that computes synchronously records closures instead.
class RecordedOps final : public OpGraph {
 public:
  explicit RecordedOps(std::vector<std::function<void()>> ops) : ops_(std::move(ops)) {}
  void replay() override {
    for (const auto& op : ops_) op();
  }
  bool valid() const override { return true; }
  size_t nodes() const override { return ops_.size(); }

 private:
  std::vector<std::function<void()>> ops_;
};

}  // namespace trainer
