// MetaBackend (see meta_backend.h).
#include "kernels/meta_backend.h"

#include <algorithm>
#include <cstring>

#include "kernels/base/check.h"

namespace trainer {

namespace {

// Marks without a clock: a dry run takes no time.
class MetaTimer final : public EventTimer {
 public:
  int record() override { return marks_++; }
  double seconds(int, int) override { return 0; }
  void reset() override { marks_ = 0; }

 private:
  int marks_ = 0;
};

}  // namespace

std::unique_ptr<EventTimer> MetaBackend::make_event_timer() { return std::make_unique<MetaTimer>(); }

void* MetaBackend::raw_alloc(size_t bytes) {
  const uintptr_t at = next_;
  next_ += std::max<size_t>(256, (bytes + 255) / 256 * 256);
  live_[at] = bytes;
  allocated_ += bytes;
  peak_ = std::max(peak_, allocated_);
  return reinterpret_cast<void*>(at);
}

void MetaBackend::raw_free(void* ptr) {
  auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
  TRAINER_CHECK(it != live_.end(), "MetaBackend: free of an address it did not hand out");
  allocated_ -= it->second;
  live_.erase(it);
}

void MetaBackend::copy_to_host(void* dst, const void*, size_t bytes) { std::memset(dst, 0, bytes); }

}  // namespace trainer
