// CpuBackend: memory (aligned host allocations with byte accounting), FTZ/DAZ set-up, and
// dispatch of every Backend op to its fast kernel, cpu::run(op) (cpu_ops.h). The front doors
// (backend_ops.cpp) have checked each op's contract; the only limit left to the kernels is
// sgemm's 32-bit sizes.
// Graph capture records the checked ops, copies and memsets as closures (RecordedOps).
#include "kernels/cpu/cpu_backend.h"

#include <pmmintrin.h>
#include <xmmintrin.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/base/check.h"
#include "kernels/cpu/cpu_host_info.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer {

namespace {

constexpr size_t kAlign = 64;  // a cache line, and one AVX-512 vector

// CPU ops are synchronous, so a mark is a clock reading.
class CpuEventTimer final : public EventTimer {
 public:
  int record() override {
    marks_.push_back(std::chrono::steady_clock::now());
    return int(marks_.size()) - 1;
  }
  double seconds(int from, int to) override {
    TRAINER_CHECK(from >= 0 && to >= 0 && size_t(from) < marks_.size() && size_t(to) < marks_.size(),
                  "CpuEventTimer: unknown mark");
    return std::chrono::duration<double>(marks_[size_t(to)] - marks_[size_t(from)]).count();
  }
  void reset() override { marks_.clear(); }

 private:
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() { cpu_enable_flush_denormals(); }

  Device device() const override { return Device::cpu; }
  std::string name() const override { return "cpu"; }
  std::string device_name() const override { return cpu_model_name(); }
  DeviceMemory device_memory() const override { return host_memory(); }
  std::unique_ptr<EventTimer> make_event_timer() override { return std::make_unique<CpuEventTimer>(); }
  DType act_dtype() const override { return DType::f32; }

  // ---- memory ----
  void* raw_alloc(size_t bytes) override {
    refuse_while_capturing("alloc");
    if (bytes == 0) return nullptr;
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kAlign, bytes) != 0)
      throw std::runtime_error("CPU backend: cannot allocate " + std::to_string(bytes) +
                               " bytes (" + std::to_string(allocated_bytes()) +
                               " already allocated)");
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[ptr] = bytes;
    allocated_ += bytes;
    if (allocated_ > peak_) peak_ = allocated_;
    return ptr;
  }

  void raw_free(void* ptr) override {
    if (!ptr) return;
    spoil_capture("free");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = sizes_.find(ptr);
      TRAINER_CHECK(it != sizes_.end(), "CPU backend: raw_free of a pointer it did not allocate");
      allocated_ -= it->second;
      sizes_.erase(it);
    }
    std::free(ptr);
  }

  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    refuse_while_capturing("copy_from_host");
    cpu::copy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    refuse_while_capturing("copy_to_host");
    cpu::copy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (recording_now()) return recording_.push_back([dst, src, bytes] { cpu::copy(dst, src, bytes); });
    cpu::copy(dst, src, bytes);
  }
  void memset_zero(void* dst, size_t bytes) override {
    if (recording_now()) return recording_.push_back([dst, bytes] { if (bytes) std::memset(dst, 0, bytes); });
    if (bytes) std::memset(dst, 0, bytes);
  }
  void synchronize() override { refuse_while_capturing("synchronize"); }

  size_t allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocated_;
  }
  size_t peak_allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

  // ---- ops (contracts checked by the front doors in backend_ops.cpp) ----
 protected:
  // Capture records: the front doors append each checked op, copy and memset_zero append
  // theirs; the graph computes them again in that order.
  void start_capture() override {
    recording_.clear();
    op_recording_ = &recording_;
  }
  std::unique_ptr<OpGraph> finish_capture() override {
    op_recording_ = nullptr;
    return std::make_unique<RecordedOps>(std::exchange(recording_, {}));
  }
  void cancel_capture() noexcept override {
    op_recording_ = nullptr;
    recording_.clear();
  }
  bool recording_now() const { return op_recording_ != nullptr; }

  // Every op of the op list (op_list.h) runs its kernel (cpu_ops.h).
#define TRAINER_CPU_COMPUTE(Op, Result, ...) \
  Result compute(const Op& op) override { return cpu::run(op); }
  TRAINER_OPS(TRAINER_CPU_COMPUTE)
#undef TRAINER_CPU_COMPUTE

 private:
  std::vector<std::function<void()>> recording_;  // while capturing
  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;
  size_t allocated_ = 0;
  size_t peak_ = 0;
};

}  // namespace

void cpu_enable_flush_denormals() {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#pragma omp parallel
  {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace trainer
