// The emulated cuDNN's descriptors: what each finalize requires, and the operation graph's
// resolution into tensors and dependency-ordered operations (cudnn_emu_internal.h).
#include <string>

#include "tests/kernels/cuda_emu/cudnn_emu_internal.h"

namespace emu::cudnn {
namespace {

// The tensor an operation's attribute names, finalized.
const TensorInfo* tensor_at(const Desc& op, cudnnBackendAttributeName_t n) {
  if (!op.has(n)) return nullptr;
  const Desc* t = op.desc(n);
  return t && t->type == CUDNN_BACKEND_TENSOR_DESCRIPTOR && t->finalized ? &t->tensor : nullptr;
}

// Resolves one operation descriptor against the graph's tensors; false when a shape is wrong.
bool resolve(const Desc& d, Graph& g, Op& op, std::string& why) {
  op.kind = d.type;
  const auto add = [&](cudnnBackendAttributeName_t n, int64_t& uid) {
    const TensorInfo* t = tensor_at(d, n);
    if (!t) return d.has(n) ? (why = "an operation names an unfinalized tensor", false) : true;
    const auto it = g.tensors.find(t->uid);
    if (it != g.tensors.end() && (it->second.dims != t->dims || it->second.strides != t->strides ||
                                  it->second.dtype != t->dtype || it->second.is_virtual != t->is_virtual)) {
      why = "two different tensors share unique id " + std::to_string(t->uid);
      return false;
    }
    g.tensors[t->uid] = *t;
    uid = t->uid;
    return true;
  };
  switch (d.type) {
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
      const Desc* pw = d.desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
      op.mode = pw->one<cudnnPointwiseMode_t>(CUDNN_ATTR_POINTWISE_MODE);
      if (pw->has(CUDNN_ATTR_POINTWISE_AXIS)) op.axis = pw->one<int64_t>(CUDNN_ATTR_POINTWISE_AXIS);
      if (d.has(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1)) op.alpha1 = d.one<float>(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1);
      if (d.has(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2)) op.alpha2 = d.one<float>(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2);
      return add(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, op.x) && add(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, op.b) &&
             add(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, op.t) && add(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, op.y);
    }
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return add(CUDNN_ATTR_OPERATION_MATMUL_ADESC, op.x) && add(CUDNN_ATTR_OPERATION_MATMUL_BDESC, op.b) &&
             add(CUDNN_ATTR_OPERATION_MATMUL_CDESC, op.y);
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      op.reduce = d.desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC)->one<cudnnReduceTensorOp_t>(CUDNN_ATTR_REDUCTION_OPERATOR);
      return add(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, op.x) && add(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, op.y);
    default:
      return add(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, op.x) && add(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, op.y);
  }
}

}  // namespace

cudnnStatus_t finalize_tensor(Desc& d) {
  for (auto n : {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_ATTR_TENSOR_STRIDES,
                 CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT})
    if (!d.has(n)) return error(CUDNN_STATUS_BAD_PARAM, "a tensor lacks attribute " + std::to_string(int(n)));
  TensorInfo& t = d.tensor;
  t.dtype = d.one<cudnnDataType_t>(CUDNN_ATTR_TENSOR_DATA_TYPE);
  t.dims = d.get<int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS);
  t.strides = d.get<int64_t>(CUDNN_ATTR_TENSOR_STRIDES);
  t.uid = d.one<int64_t>(CUDNN_ATTR_TENSOR_UNIQUE_ID);
  t.alignment = d.one<int64_t>(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT);
  t.is_virtual = d.has(CUDNN_ATTR_TENSOR_IS_VIRTUAL) && d.one<bool>(CUDNN_ATTR_TENSOR_IS_VIRTUAL);
  t.by_value = d.has(CUDNN_ATTR_TENSOR_IS_BY_VALUE) && d.one<bool>(CUDNN_ATTR_TENSOR_IS_BY_VALUE);
  if (t.dims.size() != t.strides.size() || t.dims.empty() || t.dims.size() > 8)
    return error(CUDNN_STATUS_BAD_PARAM, "tensor " + std::to_string(t.uid) + ": dimensions and strides differ in count");
  for (size_t i = 0; i < t.dims.size(); ++i)
    if (t.dims[i] < 1 || t.strides[i] < 1)
      return error(CUDNN_STATUS_BAD_PARAM, "tensor " + std::to_string(t.uid) + ": a dimension or stride below 1");
  if (t.dtype != CUDNN_DATA_FLOAT && t.dtype != CUDNN_DATA_BFLOAT16 && t.dtype != CUDNN_DATA_INT32 &&
      t.dtype != CUDNN_DATA_BOOLEAN)
    return error(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "tensor " + std::to_string(t.uid) + ": data type not emulated");
  if (t.alignment < 1) return error(CUDNN_STATUS_BAD_PARAM, "tensor " + std::to_string(t.uid) + ": no alignment");
  if (t.by_value && (t.is_virtual || t.elements() != 1 || t.dtype != CUDNN_DATA_FLOAT))
    return error(CUDNN_STATUS_NOT_SUPPORTED, "tensor " + std::to_string(t.uid) + ": by value, but not one f32 scalar");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_operation(Desc& d) {
  using N = cudnnBackendAttributeName_t;
  const auto require = [&](std::initializer_list<N> names) {
    for (N n : names)
      if (!d.has(n)) return false;
    return true;
  };
  const auto finalized_desc = [&](N n, cudnnBackendDescriptorType_t type) {
    const Desc* p = d.desc(n);
    return p && p->type == type && p->finalized;
  };
  bool ok = true;
  switch (d.type) {
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      ok = require({CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                    CUDNN_ATTR_OPERATION_POINTWISE_YDESC}) &&
           finalized_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
      break;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      ok = require({CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
                    CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_ATTR_OPERATION_MATMUL_DESC}) &&
           finalized_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
      break;
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      ok = require({CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
                    CUDNN_ATTR_OPERATION_REDUCTION_YDESC}) &&
           finalized_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
      break;
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
      ok = require({CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_ATTR_OPERATION_RESHAPE_YDESC});
      break;
    default: return error(CUDNN_STATUS_NOT_SUPPORTED, "operation type " + std::to_string(int(d.type)) + " not emulated");
  }
  if (!ok) return error(CUDNN_STATUS_BAD_PARAM, "an operation lacks a required, finalized attribute");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_graph(Desc& d) {
  if (!d.has(CUDNN_ATTR_OPERATIONGRAPH_OPS)) return error(CUDNN_STATUS_BAD_PARAM, "an operation graph without operations");
  if (version() < 90800 && !d.has(CUDNN_ATTR_OPERATIONGRAPH_HANDLE))
    return error(CUDNN_STATUS_BAD_PARAM, "an operation graph without a handle (required before cuDNN 9.8)");
  if (refusal() == Refusal::graph_finalize)
    return error(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "the emulator refuses every graph (cudnn_emu.h)");
  auto graph = std::make_shared<Graph>();
  std::vector<Op> pending;
  std::string why;
  for (void* p : d.get<void*>(CUDNN_ATTR_OPERATIONGRAPH_OPS)) {
    const Desc* op_desc = static_cast<const Desc*>(p);
    if (!op_desc || !op_desc->finalized) return error(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "an operation is not finalized");
    Op op;
    if (!resolve(*op_desc, *graph, op, why)) return error(CUDNN_STATUS_BAD_PARAM, why);
    pending.push_back(op);
  }
  // Each virtual tensor has exactly one producer; non-virtual outputs too.
  std::map<int64_t, int> producers;
  for (const Op& op : pending) ++producers[op.y];
  for (const auto& [uid, n] : producers)
    if (n > 1) return error(CUDNN_STATUS_BAD_PARAM, "tensor " + std::to_string(uid) + " has several producers");
  for (const auto& [uid, t] : graph->tensors) {
    if (t.is_virtual && !producers.count(uid))
      return error(CUDNN_STATUS_BAD_PARAM, "virtual tensor " + std::to_string(uid) + " has no producer");
  }
  // Dependency order: an operation runs once all its virtual inputs exist.
  std::map<int64_t, bool> ready;
  for (const auto& [uid, t] : graph->tensors) ready[uid] = !t.is_virtual && !producers.count(uid);
  while (!pending.empty()) {
    bool progressed = false;
    for (auto it = pending.begin(); it != pending.end();) {
      const bool inputs = (it->x == 0 || ready[it->x]) && (it->b == 0 || ready[it->b]) && (it->t == 0 || ready[it->t]);
      if (!inputs) {
        ++it;
        continue;
      }
      if (!check_shapes(*graph, *it, why)) return error(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, why);
      ready[it->y] = true;
      graph->ops.push_back(*it);
      it = pending.erase(it);
      progressed = true;
    }
    if (!progressed) return error(CUDNN_STATUS_BAD_PARAM, "the operation graph has a cycle or an input nobody writes");
  }
  d.graph = graph;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace emu::cudnn
