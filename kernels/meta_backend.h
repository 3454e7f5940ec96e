// MetaBackend: a Backend that allocates no memory and computes nothing, for dry runs (`trainer
// plan`, like torchtitan's meta device). raw_alloc hands out distinct, never-dereferenced
// addresses and counts the bytes exactly as a real backend would, so the model's own code
// (StageLayout, ParamStore, GptStage, the pipeline executor) can run a step and say what it
// would hold. Every op still passes its front door, so a shape error in a dry run is the same
// error as in a real one.
//
// Invariants: nothing ever reads or writes the addresses it returns; copies to the host write
// zeros (a host buffer is real memory), sum_squares is 0, every other op and copy does nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernels/backend.h"

namespace trainer {

class MetaBackend final : public Backend {
 public:
  // device and act: what the planned run would use (cpu/f32, cuda/bf16 ...).
  MetaBackend(Device device, DType act) : device_(device), act_(act) {}

  Device device() const override { return device_; }
  std::string name() const override {
    return std::string("meta (") + trainer::device_name(device_) + ", " + dtype_name(act_) + ")";
  }
  std::string device_name() const override { return "meta"; }
  DeviceMemory device_memory() const override { return DeviceMemory{}; }
  std::unique_ptr<EventTimer> make_event_timer() override;
  DType act_dtype() const override { return act_; }

  void* raw_alloc(size_t bytes) override;
  void raw_free(void* ptr) override;
  void copy_from_host(void*, const void*, size_t) override {}
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void copy(void*, const void*, size_t) override {}
  void memset_zero(void*, size_t) override {}
  void synchronize() override {}
  size_t allocated_bytes() const override { return allocated_; }
  size_t peak_allocated_bytes() const override { return peak_; }

 protected:
  // Every op of the op list (op_list.h) does nothing; a host value (sum_squares) is 0.
#define TRAINER_META_COMPUTE(Op, Result, ...) \
  Result compute(const Op&) override { return Result(); }
  TRAINER_OPS(TRAINER_META_COMPUTE)
#undef TRAINER_META_COMPUTE

 private:
  Device device_;
  DType act_;
  // Next address handed out: far above any real mapping, 256-byte aligned like cudaMalloc.
  uintptr_t next_ = uintptr_t(1) << 46;
  std::map<uintptr_t, size_t> live_;  // address -> bytes
  size_t allocated_ = 0, peak_ = 0;
};

}  // namespace trainer
