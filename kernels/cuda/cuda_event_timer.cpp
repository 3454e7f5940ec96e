// CUDA events as an EventTimer (see cuda_event_timer.h).
#include "kernels/cuda/cuda_event_timer.h"

#include <vector>

#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/cuda/cuda_check.h"

namespace trainer::cuda {

namespace {

class CudaEventTimer final : public EventTimer {
 public:
  explicit CudaEventTimer(cudaStream_t stream) : stream_(stream) {}
  ~CudaEventTimer() override {
    for (cudaEvent_t e : events_) TRAINER_CUDA_REPORT(cudaEventDestroy(e));
  }
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  int record() override {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      TRAINER_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    TRAINER_CUDA_CHECK(cudaEventRecord(events_[used_], stream_));
    return int(used_++);
  }
  double seconds(int from, int to) override {
    TRAINER_CHECK(from >= 0 && to >= 0 && size_t(from) < used_ && size_t(to) < used_, "CudaEventTimer: unknown mark");
    TRAINER_CUDA_CHECK(cudaEventSynchronize(events_[size_t(to)]));
    float ms = 0;
    TRAINER_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[size_t(from)], events_[size_t(to)]));
    return double(ms) * 1e-3;
  }
  void reset() override { used_ = 0; }

 private:
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

}  // namespace

std::unique_ptr<EventTimer> make_cuda_event_timer(cudaStream_t stream) {
  return std::make_unique<CudaEventTimer>(stream);
}

}  // namespace trainer::cuda
