// What a recipe asks of the backend (device, precision, attention kernels) and make_backend,
// which resolves it; split out of backend.h, which includes this file.
#pragma once

#include <memory>
#include <string>

#include "kernels/base/enum_names.h"

namespace trainer {

class Backend;

// Which backend a recipe asked for. auto picks CUDA when a GPU is present.
enum class DeviceChoice : uint8_t { cpu, cuda, auto_detect };
inline constexpr EnumName<DeviceChoice> kDeviceChoiceNames[] = {
    {DeviceChoice::cpu, "cpu"}, {DeviceChoice::cuda, "cuda"}, {DeviceChoice::auto_detect, "auto"}};
inline const char* device_choice_name(DeviceChoice c) { return enum_name(kDeviceChoiceNames, c); }

enum class Precision : uint8_t { fp32, bf16 };
inline constexpr EnumName<Precision> kPrecisionNames[] = {{Precision::fp32, "fp32"},
                                                          {Precision::bf16, "bf16"}};
inline const char* precision_name(Precision p) { return enum_name(kPrecisionNames, p); }

// CUDA attention kernels: our own flash-style kernels or cuDNN's fused attention.
enum class AttentionImpl : uint8_t { auto_detect, flash, cudnn };
inline constexpr EnumName<AttentionImpl> kAttentionImplNames[] = {
    {AttentionImpl::auto_detect, "auto"}, {AttentionImpl::flash, "flash"}, {AttentionImpl::cudnn, "cudnn"}};
inline const char* attention_impl_name(AttentionImpl a) { return enum_name(kAttentionImplNames, a); }

struct BackendOptions {
  DeviceChoice device = DeviceChoice::auto_detect;
  Precision precision = Precision::fp32;  // bf16 only on CUDA
  AttentionImpl attention = AttentionImpl::auto_detect;
  bool stochastic_rounding = true;  // bf16 copy of the weights after AdamW (CUDA)
  int local_rank = 0;               // picks the GPU: local_rank % device count
};

// True when this build has CUDA and a GPU answers (any error counts as "no GPU").
bool cuda_available();
bool cuda_compiled();
// The name of the first GPU, "" without one (or without CUDA in this build).
std::string first_gpu_name();
// Resolves device auto and builds the backend. A request that cannot be met (cuda without a
// GPU or in a build without CUDA, bf16 on the CPU) throws ConfigError naming what is valid.
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

}  // namespace trainer
