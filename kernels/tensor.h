// Tensor: a non-owning view of memory on a device (pointer, dtype, device, shape).
// Invariants: rank <= 4; row-major, contiguous; an undefined tensor has data == nullptr and is
// how optional arguments (a missing bias, say) are passed to Backend ops.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "kernels/base/enum_names.h"

namespace trainer {

enum class DType : uint8_t { f32, bf16, i32, u16 };
inline constexpr EnumName<DType> kDTypeNames[] = {
    {DType::f32, "f32"}, {DType::bf16, "bf16"}, {DType::i32, "i32"}, {DType::u16, "u16"}};

enum class Device : uint8_t { cpu, cuda };
inline constexpr EnumName<Device> kDeviceNames[] = {{Device::cpu, "cpu"}, {Device::cuda, "cuda"}};

size_t dtype_size(DType dtype);
inline const char* dtype_name(DType dtype) { return enum_name(kDTypeNames, dtype); }
inline const char* device_name(Device device) { return enum_name(kDeviceNames, device); }

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  Device device = Device::cpu;
  int ndim = 0;
  std::array<int64_t, 4> shape{};

  bool defined() const { return data != nullptr; }
  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  // size(-1) is the last dimension.
  int64_t size(int dim) const;
  std::string shape_str() const;

  // Same memory, new shape with the same element count.
  Tensor view(std::initializer_list<int64_t> new_shape) const;
  // Rows [begin, end) of the leading dimension.
  Tensor rows(int64_t begin, int64_t end) const;
  // A flat 1-D view of elements [begin, end).
  Tensor flat(int64_t begin, int64_t end) const;

  template <class T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

Tensor make_tensor(void* data, DType dtype, Device device, std::initializer_list<int64_t> shape);

}  // namespace trainer
