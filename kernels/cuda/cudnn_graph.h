// A small builder over cuDNN's backend (graph) API, for the fused attention graphs of
// cudnn_attention.cpp: 4-D tensors, pointwise / matmul / reduction / reshape operations, and an
// execution plan from the heuristics. We use the C backend API directly (cudnn_graph.h, part of
// cuDNN itself) rather than the header-only cudnn-frontend, which is not a dependency here.
// Invariants: every tensor has a unique id and 16-byte alignment; virtual tensors live only
// inside the fused kernel; by-value tensors are f32 scalars whose host address goes in the
// variant pack. Every descriptor a plan was built from stays alive as long as the plan.
// Only built with cuDNN (TRAINER_HAVE_CUDNN).
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainer::cuda {

[[noreturn]] void fail_cudnn(cudnnStatus_t status, const char* call, const char* file, int line);

// One backend descriptor, destroyed with its owner.
class CudnnDescriptor {
 public:
  explicit CudnnDescriptor(cudnnBackendDescriptorType_t type);
  ~CudnnDescriptor();
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  cudnnBackendDescriptor_t get() const { return desc_; }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

using Dims4 = std::array<int64_t, 4>;

enum class CudnnTensorKind : uint8_t {
  device,    // memory the caller passes at execution
  virtual_,  // lives inside the fused kernel only
  by_value,  // an f32 scalar passed by host address at execution
};

class CudnnGraph {
 public:
  using Uid = int64_t;
  static constexpr Uid kNone = -1;

  // Returns the tensor's unique id (also its key in the variant pack).
  Uid tensor(const Dims4& dims, const Dims4& strides, cudnnDataType_t dtype, CudnnTensorKind kind);
  Uid scalar() { return tensor({1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT, CudnnTensorKind::by_value); }
  // y = mode(x[, b[, t]]) in `precision`; axis only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t precision, Uid x, Uid y, Uid b = kNone, Uid t = kNone,
                 int64_t axis = -1);
  // c = a @ b over the last two dimensions, broadcasting the leading ones; f32 accumulation.
  void matmul(Uid a, Uid b, Uid c);
  // y = reduce(x) over the dimensions where y has extent 1; f32.
  void reduction(cudnnReduceTensorOp_t op, Uid x, Uid y);
  // y views x with other dimensions or strides (a transpose when the strides are swapped).
  void reshape(Uid x, Uid y);

  // Finalizes the graph and builds the first execution plan the heuristics (mode A) offer that
  // finalizes. Returns false when no engine supports the graph (refusal() then says where and
  // why, in cuDNN's words); other failures throw.
  bool build(cudnnHandle_t handle);
  const std::string& refusal() const { return refusal_; }
  int64_t workspace_bytes() const { return workspace_bytes_; }
  // Runs the plan on the handle's stream. uids and pointers are parallel arrays.
  void execute(cudnnHandle_t handle, const std::vector<Uid>& uids, const std::vector<void*>& pointers,
               void* workspace) const;

 private:
  cudnnBackendDescriptor_t at(Uid uid) const;
  cudnnBackendDescriptor_t add_operation(std::unique_ptr<CudnnDescriptor> op);

  std::vector<std::unique_ptr<CudnnDescriptor>> tensors_;  // tensors_[uid - 1]
  std::vector<std::unique_ptr<CudnnDescriptor>> keep_;     // op descriptors (pointwise, matmul, ...)
  std::vector<cudnnBackendDescriptor_t> operations_;
  std::unique_ptr<CudnnDescriptor> graph_;
  std::vector<std::unique_ptr<CudnnDescriptor>> configs_;
  std::unique_ptr<CudnnDescriptor> plan_;
  int64_t workspace_bytes_ = 0;
  std::string refusal_;
};

// "9.19.0" from cudnnGetVersion() (the library loaded at run time, not the headers).
std::string cudnn_version_string();

}  // namespace trainer::cuda

#define TRAINER_CUDNN_CHECK(call)                                                \
  do {                                                                           \
    const cudnnStatus_t trainer_status_ = (call);                                \
    if (trainer_status_ != CUDNN_STATUS_SUCCESS)                                 \
      ::trainer::cuda::fail_cudnn(trainer_status_, #call, __FILE__, __LINE__);   \
  } while (0)
