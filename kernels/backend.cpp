// Buffer (RAII device memory) and make_backend: resolving device: auto and precision.
#include "kernels/backend.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/cpu/cpu_backend.h"
#ifdef TRAINER_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace trainer {

Buffer::Buffer(Backend* backend, size_t bytes) : backend_(backend), bytes_(bytes) {
  data_ = bytes ? backend->raw_alloc(bytes) : nullptr;
}

Buffer::~Buffer() {
  if (data_) backend_->raw_free(data_);
}

Buffer::Buffer(Buffer&& other) noexcept
    : backend_(std::exchange(other.backend_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (data_) backend_->raw_free(data_);
    backend_ = std::exchange(other.backend_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Tensor Buffer::tensor(DType dtype, std::initializer_list<int64_t> shape) const {
  Tensor t = make_tensor(data_, dtype, backend_ ? backend_->device() : Device::cpu, shape);
  TRAINER_CHECK(t.bytes() <= bytes_, "tensor " + t.shape_str() + " larger than its buffer");
  return t;
}

void Backend::begin_capture() {
  TRAINER_CHECK(!capturing_, "begin_capture: already capturing");
  TRAINER_CHECK(!profiler_, "begin_capture: an op profiler is attached (a graph replays its ops untimed)");
  start_capture();
  capturing_ = true;
  spoiled_by_ = nullptr;
}

std::unique_ptr<OpGraph> Backend::end_capture() {
  TRAINER_CHECK(capturing_, "end_capture without begin_capture");
  if (const char* what = spoiled_by_) {
    abort_capture();
    refuse_while_capturing_text(what);
  }
  capturing_ = false;
  return finish_capture();
}

void Backend::spoil_capture(const char* what) noexcept {
  if (capturing_ && !spoiled_by_) spoiled_by_ = what;
}

void Backend::abort_capture() noexcept {
  if (!capturing_) return;
  capturing_ = false;
  cancel_capture();
}

void Backend::start_capture() {
  throw std::logic_error("begin_capture: the " + name() + " backend cannot capture graphs");
}

std::unique_ptr<OpGraph> Backend::finish_capture() {
  throw std::logic_error("end_capture: the " + name() + " backend cannot capture graphs");
}

void Backend::refuse_while_capturing_text(const char* what) const {
  throw std::logic_error(std::string(what) + " while capturing a graph on " + name() +
                         ": a graph holds device work only (no host copies, waits, allocations, frees or host "
                         "results)");
}

void Backend::refuse_while_capturing(const char* what) const {
  if (capturing_) refuse_while_capturing_text(what);
}

bool cuda_compiled() {
#ifdef TRAINER_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_available() {
#ifdef TRAINER_HAVE_CUDA
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

std::string first_gpu_name() {
#ifdef TRAINER_HAVE_CUDA
  if (cuda_device_count() > 0) return cuda_device_name(0);
#endif
  return "";
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
  DeviceChoice choice = options.device;
  bool use_cuda = choice == DeviceChoice::cuda || (choice == DeviceChoice::auto_detect && cuda_available());
  if (choice == DeviceChoice::cuda && !cuda_compiled())
    throw ConfigError(
        "train.device: cuda was requested but this trainer was built without CUDA "
        "(configure with -DTRAINER_CUDA=ON on a machine with the CUDA toolkit); valid here: cpu, auto");
  if (choice == DeviceChoice::cuda && !cuda_available())
    throw ConfigError("train.device: cuda was requested but no CUDA GPU is available on this machine; "
                      "valid here: cpu, auto");
  if (use_cuda) {
#ifdef TRAINER_HAVE_CUDA
    return make_cuda_backend(options);
#endif
  }
  if (options.precision == Precision::bf16)
    throw ConfigError("train.precision: bf16 is not available on the CPU backend; valid on cpu: fp32 "
                      "(or precision: auto)");
  return make_cpu_backend();
}

}  // namespace trainer
