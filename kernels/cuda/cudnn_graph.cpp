// The cuDNN backend-API builder of cudnn_graph.h. Compiled to nothing without cuDNN.
#ifdef TRAINER_HAVE_CUDNN

#include "kernels/cuda/cudnn_graph.h"

#include <sstream>
#include <stdexcept>
#include <string>

#include "kernels/base/check.h"

namespace trainer::cuda {

namespace {

// "CUDNN_STATUS_... (cuDNN's last error text)": read at once, since later calls overwrite it.
std::string status_text(cudnnStatus_t status) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string text = cudnnGetErrorString(status);
  if (detail[0]) text += std::string(" (") + detail + ")";
  return text;
}

}  // namespace

void fail_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  std::ostringstream s;
  s << "cuDNN error at " << file << ":" << line << ": " << call << " returned " << status_text(status);
  throw std::runtime_error(s.str());
}

std::string cudnn_version_string() {
  const size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since 9.0
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

CudnnDescriptor::CudnnDescriptor(cudnnBackendDescriptorType_t type) {
  TRAINER_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &desc_));
}

CudnnDescriptor::~CudnnDescriptor() {
  if (desc_) cudnnBackendDestroyDescriptor(desc_);  // cannot fail on a descriptor we created
}

namespace {

void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
         int64_t count, const void* value) {
  TRAINER_CUDNN_CHECK(cudnnBackendSetAttribute(d, name, type, count, value));
}
// cuDNN 9 groups its statuses by thousands; 3xxx are the CUDNN_STATUS_NOT_SUPPORTED_* family
// (graph pattern, shape, layout, architecture...): "no engine for this", not a failure.
bool not_supported(cudnnStatus_t status) { return int(status) / 1000 == int(CUDNN_STATUS_NOT_SUPPORTED) / 1000; }

void set_desc(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t value) {
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
}

}  // namespace

cudnnBackendDescriptor_t CudnnGraph::at(Uid uid) const {
  TRAINER_CHECK(uid >= 1 && uid <= Uid(tensors_.size()), "cuDNN graph: no tensor " + std::to_string(uid));
  return tensors_[size_t(uid - 1)]->get();
}

CudnnGraph::Uid CudnnGraph::tensor(const Dims4& dims, const Dims4& strides, cudnnDataType_t dtype,
                                   CudnnTensorKind kind) {
  auto t = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const Uid uid = Uid(tensors_.size()) + 1;
  const int64_t alignment = 16;
  const bool is_virtual = kind == CudnnTensorKind::virtual_;
  const bool by_value = kind == CudnnTensorKind::by_value;
  set(t->get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype);
  set(t->get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  set(t->get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  set(t->get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t->get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  set(t->get(), CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  if (by_value) set(t->get(), CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  TRAINER_CUDNN_CHECK(cudnnBackendFinalize(t->get()));
  tensors_.push_back(std::move(t));
  return uid;
}

cudnnBackendDescriptor_t CudnnGraph::add_operation(std::unique_ptr<CudnnDescriptor> op) {
  TRAINER_CUDNN_CHECK(cudnnBackendFinalize(op->get()));
  operations_.push_back(op->get());
  keep_.push_back(std::move(op));
  return operations_.back();
}

void CudnnGraph::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t precision, Uid x, Uid y, Uid b, Uid t,
                           int64_t axis) {
  auto desc = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  set(desc->get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(desc->get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
  if (mode == CUDNN_POINTWISE_GEN_INDEX) set(desc->get(), CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  TRAINER_CUDNN_CHECK(cudnnBackendFinalize(desc->get()));

  auto op = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc->get());
  set_desc(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, at(x));
  if (b != kNone) set_desc(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, at(b));
  if (t != kNone) set_desc(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_TDESC, at(t));
  set_desc(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, at(y));
  const float one = 1.0f;
  set(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
  set(op->get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
  keep_.push_back(std::move(desc));
  add_operation(std::move(op));
}

void CudnnGraph::matmul(Uid a, Uid b, Uid c) {
  auto desc = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  set(desc->get(), CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
  TRAINER_CUDNN_CHECK(cudnnBackendFinalize(desc->get()));

  auto op = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set_desc(op->get(), CUDNN_ATTR_OPERATION_MATMUL_ADESC, at(a));
  set_desc(op->get(), CUDNN_ATTR_OPERATION_MATMUL_BDESC, at(b));
  set_desc(op->get(), CUDNN_ATTR_OPERATION_MATMUL_CDESC, at(c));
  set_desc(op->get(), CUDNN_ATTR_OPERATION_MATMUL_DESC, desc->get());
  keep_.push_back(std::move(desc));
  add_operation(std::move(op));
}

void CudnnGraph::reduction(cudnnReduceTensorOp_t reduce_op, Uid x, Uid y) {
  auto desc = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  set(desc->get(), CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
  set(desc->get(), CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce_op);
  TRAINER_CUDNN_CHECK(cudnnBackendFinalize(desc->get()));

  auto op = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  set_desc(op->get(), CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc->get());
  set_desc(op->get(), CUDNN_ATTR_OPERATION_REDUCTION_XDESC, at(x));
  set_desc(op->get(), CUDNN_ATTR_OPERATION_REDUCTION_YDESC, at(y));
  keep_.push_back(std::move(desc));
  add_operation(std::move(op));
}

void CudnnGraph::reshape(Uid x, Uid y) {
  auto op = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  set_desc(op->get(), CUDNN_ATTR_OPERATION_RESHAPE_XDESC, at(x));
  set_desc(op->get(), CUDNN_ATTR_OPERATION_RESHAPE_YDESC, at(y));
  add_operation(std::move(op));
}

bool CudnnGraph::build(cudnnHandle_t handle) {
  TRAINER_CHECK(!graph_, "cuDNN graph built twice");
  graph_ = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph_->get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(operations_.size()),
      operations_.data());
  // Deprecated in 9.19 but still accepted, and required below 9.8 (cudnn-frontend sets it there).
  set(graph_->get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  const auto refuse = [this](const char* where, cudnnStatus_t status) {
    refusal_ = std::string(where) + ": " + status_text(status);
    return false;
  };
  const cudnnStatus_t graph_status = cudnnBackendFinalize(graph_->get());
  if (not_supported(graph_status)) return refuse("the operation graph's finalize", graph_status);
  TRAINER_CUDNN_CHECK(graph_status);

  CudnnDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set_desc(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph_->get());
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  // An unsupported pattern often shows only here, not at the graph's finalize.
  const cudnnStatus_t heuristics_status = cudnnBackendFinalize(heuristics.get());
  if (not_supported(heuristics_status)) return refuse("the heuristics' finalize", heuristics_status);
  TRAINER_CUDNN_CHECK(heuristics_status);
  int64_t count = 0;
  const cudnnStatus_t count_status = cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
  if (not_supported(count_status)) return refuse("the heuristics' results", count_status);
  TRAINER_CUDNN_CHECK(count_status);
  if (count <= 0) {
    refusal_ = "the heuristics offered no engine";
    return false;
  }
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs_.push_back(std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs_.back()->get());
  }
  int64_t returned = 0;
  TRAINER_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()));
  // Heuristics rank engines by expected speed; some need features this GPU or shape lacks and
  // refuse to finalize, so take the first that does.
  std::string first_refusal;
  for (int64_t i = 0; i < returned; ++i) {
    auto plan = std::make_unique<CudnnDescriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set_desc(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, raw[size_t(i)]);
    const cudnnStatus_t plan_status = cudnnBackendFinalize(plan->get());
    if (plan_status != CUDNN_STATUS_SUCCESS) {
      if (first_refusal.empty()) first_refusal = status_text(plan_status);
      continue;
    }
    TRAINER_CUDNN_CHECK(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                 CUDNN_TYPE_INT64, 1, nullptr, &workspace_bytes_));
    plan_ = std::move(plan);
    return true;
  }
  refusal_ = "none of the " + std::to_string(returned) + " engines the heuristics offered finalized; the first: " +
             first_refusal;
  return false;
}

void CudnnGraph::execute(cudnnHandle_t handle, const std::vector<Uid>& uids, const std::vector<void*>& pointers,
                         void* workspace) const {
  TRAINER_CHECK(plan_ != nullptr, "cuDNN graph executed before a plan was built");
  TRAINER_CHECK(uids.size() == pointers.size(), "cuDNN variant pack: uids and pointers differ in count");
  CudnnDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()), uids.data());
  set(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(pointers.size()),
      pointers.data());
  set(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  TRAINER_CUDNN_CHECK(cudnnBackendFinalize(pack.get()));
  TRAINER_CUDNN_CHECK(cudnnBackendExecute(handle, plan_->get(), pack.get()));
}

}  // namespace trainer::cuda

#endif  // TRAINER_HAVE_CUDNN
