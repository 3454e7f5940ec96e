// cuDNN on the CPU emulator: the backend (graph) API that kernels/cuda/cudnn_graph.cpp calls,
// so that the fused attention graphs of cudnn_attention.cpp run where no GPU is. An engine here
// is an interpreter of the operation graph, written from cudnn_graph.h and the backend API's
// documented semantics, not from cudnn_attention.cpp:
// - Tensors: 1 to 8 dimensions with strides, a unique id, a byte alignment, virtual or not, by
//   value or not; FLOAT, BFLOAT16, INT32 and BOOLEAN. Element (i0, i1, ...) of a device tensor
//   is at sum(i_d * stride_d) in its memory. A virtual tensor lives in the plan's run only, and
//   its strides matter only where a reshape views it (cudnn-frontend's own graphs give virtual
//   tensors strides that overlap, e.g. dO * O's, and cuDNN takes them).
// - Pointwise (ADD, SUB, MUL, DIV, EXP, LOG, IDENTITY, CMP_GE, BINARY_SELECT, GEN_INDEX): y from
//   x (and b, and t), each input broadcast over the dimensions where its extent is 1, in f32;
//   ADD/SUB/MUL/DIV scale x by ALPHA1 and b by ALPHA2; BINARY_SELECT is y = t ? x : b; GEN_INDEX
//   writes each element's index along AXIS, over x's shape.
// - Matmul: c = a b over the last two dimensions, f32 accumulation in k order; a leading
//   dimension of a or b broadcasts when its extent is 1, or, when it divides c's, serves c's
//   indices in consecutive groups (grouped-query attention's heads). Before 9.6 a non-virtual
//   f32 c is added to, as the engines add into the backward's dQ accumulator (cudnn-frontend
//   zeroes it first there; later versions zero it themselves).
// - Reduction (ADD, MAX) over the dimensions where y is smaller than x: y's extent 1, or one
//   that divides x's, summing consecutive groups; in x's index order.
// - Reshape: y is a view of x's memory through y's own dimensions and strides (a transpose
//   when the strides are swapped), converted to y's type; a view of a virtual x whose strides
//   overlap is refused at execution.
// - Every result is rounded once to its tensor's type (bf16: to nearest even).
// - The graph's finalize checks that each virtual tensor has one producer and every input a
//   source, and runs the operations in dependency order. The variant pack must name every
//   non-virtual tensor, with 16-byte aligned pointers (by-value: a host address read at the
//   call), and a workspace when the plan asks for one.
// - Execution is work on the handle's stream (cuda_emu_stream.h).
// cudnn_emu.h sets the version reported and the refusals (no engine) tests need.
#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/base/bf16.h"
#include "tests/kernels/cuda_emu/cuda_emu_stream.h"
#include "tests/kernels/cuda_emu/cudnn_emu.h"

struct cudnnContext {
  cudaStream_t stream = nullptr;
};

namespace emu::cudnn {
namespace {

std::atomic<size_t> g_version{91900};
std::atomic<Refusal> g_refusal{Refusal::none};
thread_local std::string t_last_error;

std::atomic<int64_t> g_workspace_bytes{4096};  // what every plan asks for (set_workspace_bytes)

cudnnStatus_t error(cudnnStatus_t status, const std::string& why) {
  t_last_error = why;
  return status;
}

int64_t element_bytes(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return int64_t(sizeof(void*));
    case CUDNN_TYPE_BOOLEAN: return int64_t(sizeof(bool));
    case CUDNN_TYPE_INT64: return 8;
    case CUDNN_TYPE_FLOAT: return 4;
    case CUDNN_TYPE_DOUBLE: return 8;
    case CUDNN_TYPE_DATA_TYPE:
    case CUDNN_TYPE_HEUR_MODE:
    case CUDNN_TYPE_POINTWISE_MODE:
    case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE: return 4;  // enums
    default: return -1;
  }
}

// The attribute type each attribute this emulator knows must be set with.
cudnnBackendAttributeType_t expected_type(cudnnBackendAttributeName_t name) {
  switch (name) {
    case CUDNN_ATTR_TENSOR_DATA_TYPE:
    case CUDNN_ATTR_POINTWISE_MATH_PREC:
    case CUDNN_ATTR_MATMUL_COMP_TYPE:
    case CUDNN_ATTR_REDUCTION_COMP_TYPE: return CUDNN_TYPE_DATA_TYPE;
    case CUDNN_ATTR_TENSOR_DIMENSIONS:
    case CUDNN_ATTR_TENSOR_STRIDES:
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
    case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
    case CUDNN_ATTR_POINTWISE_AXIS:
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: return CUDNN_TYPE_INT64;
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE: return CUDNN_TYPE_BOOLEAN;
    case CUDNN_ATTR_POINTWISE_MODE: return CUDNN_TYPE_POINTWISE_MODE;
    case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1:
    case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2: return CUDNN_TYPE_FLOAT;
    case CUDNN_ATTR_REDUCTION_OPERATOR: return CUDNN_TYPE_REDUCTION_OPERATOR_TYPE;
    case CUDNN_ATTR_ENGINEHEUR_MODE: return CUDNN_TYPE_HEUR_MODE;
    case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
    case CUDNN_ATTR_EXECUTION_PLAN_HANDLE: return CUDNN_TYPE_HANDLE;
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE: return CUDNN_TYPE_VOID_PTR;
    case CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR:
    case CUDNN_ATTR_OPERATION_POINTWISE_XDESC:
    case CUDNN_ATTR_OPERATION_POINTWISE_BDESC:
    case CUDNN_ATTR_OPERATION_POINTWISE_TDESC:
    case CUDNN_ATTR_OPERATION_POINTWISE_YDESC:
    case CUDNN_ATTR_OPERATION_MATMUL_ADESC:
    case CUDNN_ATTR_OPERATION_MATMUL_BDESC:
    case CUDNN_ATTR_OPERATION_MATMUL_CDESC:
    case CUDNN_ATTR_OPERATION_MATMUL_DESC:
    case CUDNN_ATTR_OPERATION_REDUCTION_DESC:
    case CUDNN_ATTR_OPERATION_REDUCTION_XDESC:
    case CUDNN_ATTR_OPERATION_REDUCTION_YDESC:
    case CUDNN_ATTR_OPERATION_RESHAPE_XDESC:
    case CUDNN_ATTR_OPERATION_RESHAPE_YDESC:
    case CUDNN_ATTR_OPERATIONGRAPH_OPS:
    case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
    case CUDNN_ATTR_ENGINEHEUR_RESULTS:
    case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG: return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    default: return cudnnBackendAttributeType_t(-1);
  }
}

struct Desc;

// A finalized tensor descriptor's facts.
struct TensorInfo {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims, strides;
  int64_t uid = 0, alignment = 0;
  bool is_virtual = false, by_value = false;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  int64_t span() const {  // elements of memory the strides reach, plus one
    int64_t s = 1;
    for (size_t i = 0; i < dims.size(); ++i) s += (dims[i] - 1) * strides[i];
    return s;
  }
};

// One operation of a graph, resolved to its tensors' facts.
struct Op {
  cudnnBackendDescriptorType_t kind;
  int64_t x = 0, b = 0, t = 0, y = 0;  // tensor uids (0: none); matmul: x = a, b = b, y = c
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_IDENTITY;
  int64_t axis = -1;
  float alpha1 = 1, alpha2 = 1;
  cudnnReduceTensorOp_t reduce = CUDNN_REDUCE_TENSOR_ADD;
};

struct Graph {
  std::map<int64_t, TensorInfo> tensors;
  std::vector<Op> ops;  // in dependency order
};

struct Desc {
  cudnnBackendDescriptorType_t type;
  bool finalized = false;
  struct Attr {
    cudnnBackendAttributeType_t type;
    int64_t count;
    std::vector<unsigned char> bytes;
  };
  std::map<int, Attr> attrs;
  TensorInfo tensor;                 // a tensor's, once finalized
  std::shared_ptr<Graph> graph;      // an operation graph's, heuristics', engine config's, plan's
  cudnnHandle_t handle = nullptr;    // a plan's

  bool has(cudnnBackendAttributeName_t n) const { return attrs.count(int(n)) != 0; }
  template <class T>
  std::vector<T> get(cudnnBackendAttributeName_t n) const {
    const Attr& a = attrs.at(int(n));
    std::vector<T> out(size_t(a.count));
    std::memcpy(out.data(), a.bytes.data(), a.bytes.size());
    return out;
  }
  template <class T>
  T one(cudnnBackendAttributeName_t n) const {
    const Attr& a = attrs.at(int(n));
    T out{};
    std::memcpy(&out, a.bytes.data(), std::min(sizeof(T), a.bytes.size()));
    return out;
  }
  Desc* desc(cudnnBackendAttributeName_t n) const { return static_cast<Desc*>(one<void*>(n)); }
};

// ---- finalize ----

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

// The tensor an operation's attribute names, finalized.
const TensorInfo* tensor_at(const Desc& op, cudnnBackendAttributeName_t n) {
  if (!op.has(n)) return nullptr;
  const Desc* t = op.desc(n);
  return t && t->type == CUDNN_BACKEND_TENSOR_DESCRIPTOR && t->finalized ? &t->tensor : nullptr;
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

// An input of extent `in` serving an output of extent `out` along one dimension: equal, 1
// (broadcast) or, where allowed, a divisor (consecutive groups).
bool serves(int64_t in, int64_t out, bool groups) { return in == out || in == 1 || (groups && out % in == 0); }

bool check_shapes(const Graph& g, const Op& op, std::string& why) {
  const auto T = [&](int64_t uid) -> const TensorInfo& { return g.tensors.at(uid); };
  const TensorInfo& y = T(op.y);
  const size_t rank = y.dims.size();
  const auto same_rank = [&](int64_t uid) { return uid == 0 || T(uid).dims.size() == rank; };
  if (!same_rank(op.x) || !same_rank(op.b) || !same_rank(op.t)) return why = "operands of different ranks", false;
  switch (op.kind) {
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      for (int64_t in : {op.x, op.b, op.t}) {
        if (in == 0 || (op.mode == CUDNN_POINTWISE_GEN_INDEX && in == op.x)) continue;
        for (size_t i = 0; i < rank; ++i)
          if (!serves(T(in).dims[i], y.dims[i], false)) return why = "a pointwise input does not broadcast to y", false;
      }
      if (op.mode == CUDNN_POINTWISE_GEN_INDEX && (op.axis < 0 || op.axis >= int64_t(rank) || T(op.x).dims != y.dims))
        return why = "GEN_INDEX: axis out of range or y not x's shape", false;
      if (op.mode == CUDNN_POINTWISE_BINARY_SELECT && (op.b == 0 || op.t == 0))
        return why = "BINARY_SELECT needs b and t", false;
      if ((op.mode == CUDNN_POINTWISE_ADD || op.mode == CUDNN_POINTWISE_SUB || op.mode == CUDNN_POINTWISE_MUL ||
           op.mode == CUDNN_POINTWISE_DIV || op.mode == CUDNN_POINTWISE_CMP_GE) &&
          op.b == 0)
        return why = "a binary pointwise mode without b", false;
      return true;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: {
      const TensorInfo &a = T(op.x), &b = T(op.b);
      if (rank < 2) return why = "matmul of rank below 2", false;
      const size_t m = rank - 2, n = rank - 1;
      if (a.dims[m] != y.dims[m] || b.dims[n] != y.dims[n] || a.dims[n] != b.dims[m])
        return why = "matmul: (M, K) x (K, N) -> (M, N) does not hold", false;
      for (size_t i = 0; i < m; ++i)
        if (!serves(a.dims[i], y.dims[i], true) || !serves(b.dims[i], y.dims[i], true))
          return why = "matmul: a batch dimension does not broadcast", false;
      return true;
    }
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      for (size_t i = 0; i < rank; ++i)
        if (!serves(y.dims[i], T(op.x).dims[i], true)) return why = "reduction: y's extent does not divide x's", false;
      return true;
    default:
      return true;  // a reshape's view is bounded when it runs
  }
}

cudnnStatus_t finalize_graph(Desc& d) {
  if (!d.has(CUDNN_ATTR_OPERATIONGRAPH_OPS)) return error(CUDNN_STATUS_BAD_PARAM, "an operation graph without operations");
  if (g_version.load() < 90800 && !d.has(CUDNN_ATTR_OPERATIONGRAPH_HANDLE))
    return error(CUDNN_STATUS_BAD_PARAM, "an operation graph without a handle (required before cuDNN 9.8)");
  if (g_refusal.load() == Refusal::graph_finalize)
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

// ---- execution ----

// A tensor's memory during one run: a device pointer (addressed through the tensor's strides),
// or (virtual, by value) the run's own f32 buffer, addressed row-major by logical index.
struct Memory {
  const TensorInfo* info = nullptr;
  char* device = nullptr;
  std::vector<float> own;
  std::vector<int64_t> at;  // addressing strides: the tensor's own on the device, row-major in `own`

  float load(int64_t offset) const {
    if (!device) return own.at(size_t(offset));
    const char* p = device + offset * dtype_bytes();
    switch (info->dtype) {
      case CUDNN_DATA_FLOAT: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case CUDNN_DATA_BFLOAT16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return trainer::f32_from_bf16(h);
      }
      case CUDNN_DATA_INT32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return float(v);
      }
      default: return *p ? 1.0f : 0.0f;
    }
  }
  void store(int64_t offset, float v) {
    switch (info->dtype) {
      case CUDNN_DATA_BFLOAT16: v = trainer::f32_from_bf16(trainer::bf16_from_f32(v)); break;
      case CUDNN_DATA_INT32: v = float(int32_t(v)); break;
      case CUDNN_DATA_BOOLEAN: v = v != 0.0f ? 1.0f : 0.0f; break;
      default: break;
    }
    if (!device) {
      own.at(size_t(offset)) = v;
      return;
    }
    char* p = device + offset * dtype_bytes();
    switch (info->dtype) {
      case CUDNN_DATA_FLOAT: std::memcpy(p, &v, 4); break;
      case CUDNN_DATA_BFLOAT16: {
        const uint16_t h = trainer::bf16_from_f32(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case CUDNN_DATA_INT32: {
        const int32_t i = int32_t(v);
        std::memcpy(p, &i, 4);
        break;
      }
      default: *p = v != 0.0f; break;
    }
  }
  int64_t dtype_bytes() const {
    return info->dtype == CUDNN_DATA_BFLOAT16 ? 2 : info->dtype == CUDNN_DATA_BOOLEAN ? 1 : 4;
  }
};

// Every index of `dims`, last dimension fastest.
template <class F>
void for_each_index(const std::vector<int64_t>& dims, F f) {
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  for (int64_t n = 0; n < total; ++n) {
    f(idx);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

// Where in m's memory output index `idx` reads, m's extent serving the output's as serves()
// allows.
int64_t offset_of(const Memory& m, const std::vector<int64_t>& idx, const std::vector<int64_t>& out_dims) {
  const TensorInfo& t = *m.info;
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    const int64_t e = t.dims[i] == out_dims[i] ? idx[i] : t.dims[i] == 1 ? 0 : idx[i] / (out_dims[i] / t.dims[i]);
    off += e * m.at[i];
  }
  return off;
}
int64_t dot(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * strides[i];
  return off;
}
std::vector<int64_t> row_major(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

float pointwise_value(const Op& op, float x, float b, float t, const std::vector<int64_t>& idx) {
  switch (op.mode) {
    case CUDNN_POINTWISE_ADD: return op.alpha1 * x + op.alpha2 * b;
    case CUDNN_POINTWISE_SUB: return op.alpha1 * x - op.alpha2 * b;
    case CUDNN_POINTWISE_MUL: return (op.alpha1 * x) * (op.alpha2 * b);
    case CUDNN_POINTWISE_DIV: return (op.alpha1 * x) / (op.alpha2 * b);
    case CUDNN_POINTWISE_EXP: return std::exp(op.alpha1 * x);
    case CUDNN_POINTWISE_LOG: return std::log(op.alpha1 * x);
    case CUDNN_POINTWISE_IDENTITY: return op.alpha1 * x;
    case CUDNN_POINTWISE_CMP_GE: return x >= b ? 1.0f : 0.0f;
    case CUDNN_POINTWISE_BINARY_SELECT: return t != 0.0f ? x : b;
    case CUDNN_POINTWISE_GEN_INDEX: return float(idx[size_t(op.axis)]);
    default: throw std::runtime_error("cudnn emulator: pointwise mode " + std::to_string(int(op.mode)) + " not emulated");
  }
}

void run_op(const Op& op, std::map<int64_t, Memory>& mem) {
  Memory& y = mem.at(op.y);
  const TensorInfo& Y = *y.info;
  const auto in = [&](int64_t uid) -> const Memory* { return uid ? &mem.at(uid) : nullptr; };
  const Memory *x = in(op.x), *b = in(op.b), *t = in(op.t);
  switch (op.kind) {
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      for_each_index(Y.dims, [&](const std::vector<int64_t>& idx) {
        const bool gen = op.mode == CUDNN_POINTWISE_GEN_INDEX;
        const float xv = gen ? 0.0f : x->load(offset_of(*x, idx, Y.dims));
        const float bv = b ? b->load(offset_of(*b, idx, Y.dims)) : 0.0f;
        const float tv = t ? t->load(offset_of(*t, idx, Y.dims)) : 0.0f;
        y.store(dot(idx, y.at), pointwise_value(op, xv, bv, tv, idx));
      });
      return;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: {
      const size_t r = Y.dims.size(), m = r - 2, n = r - 1;
      const int64_t K = x->info->dims[n];
      std::vector<int64_t> a_dims = Y.dims, b_dims = Y.dims;  // the shapes a and b serve: (.., M, K), (.., K, N)
      a_dims[n] = K;
      b_dims[m] = K;
      const int64_t a_step = x->at[n], b_step = b->at[m];
      // Before 9.6 an engine adds its product into a non-virtual f32 output (the backward's dQ
      // accumulator, which the caller zeroes first); from 9.6 on it zeroes that itself.
      const bool accumulate = y.device && Y.dtype == CUDNN_DATA_FLOAT && g_version.load() < 90600;
      for_each_index(Y.dims, [&](const std::vector<int64_t>& idx) {
        std::vector<int64_t> ai = idx, bi = idx;
        ai[n] = 0;
        bi[m] = 0;
        const int64_t a0 = offset_of(*x, ai, a_dims), b0 = offset_of(*b, bi, b_dims);
        const int64_t at = dot(idx, y.at);
        float acc = accumulate ? y.load(at) : 0.0f;
        for (int64_t k = 0; k < K; ++k) acc += x->load(a0 + k * a_step) * b->load(b0 + k * b_step);
        y.store(at, acc);
      });
      return;
    }
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: {
      const bool is_max = op.reduce == CUDNN_REDUCE_TENSOR_MAX;
      if (!is_max && op.reduce != CUDNN_REDUCE_TENSOR_ADD)
        throw std::runtime_error("cudnn emulator: reduction " + std::to_string(int(op.reduce)) + " not emulated");
      std::vector<float> acc(size_t(Y.elements()), is_max ? -INFINITY : 0.0f);
      const std::vector<int64_t> dense = row_major(Y.dims);  // acc's
      const TensorInfo& X = *x->info;
      for_each_index(X.dims, [&](const std::vector<int64_t>& idx) {
        int64_t a = 0;
        for (size_t i = 0; i < idx.size(); ++i) a += (Y.dims[i] == 1 ? 0 : idx[i] / (X.dims[i] / Y.dims[i])) * dense[i];
        const float v = x->load(dot(idx, x->at));
        acc[size_t(a)] = is_max ? std::max(acc[size_t(a)], v) : acc[size_t(a)] + v;
      });
      for_each_index(Y.dims, [&](const std::vector<int64_t>& idx) { y.store(dot(idx, y.at), acc[size_t(dot(idx, dense))]); });
      return;
    }
    default: {  // reshape: y's element idx is the one of x at the place y's strides give it
      const TensorInfo& X = *x->info;
      std::vector<float> view;  // x's values by place (its declared strides)
      if (!x->device) {
        view.assign(size_t(X.span()), std::nanf(""));
        std::vector<bool> taken(view.size(), false);
        for_each_index(X.dims, [&](const std::vector<int64_t>& idx) {
          const int64_t place = dot(idx, X.strides);
          if (taken[size_t(place)])
            throw std::runtime_error("cudnn emulator: a reshape views a virtual tensor whose strides overlap");
          taken[size_t(place)] = true;
          view[size_t(place)] = x->load(dot(idx, x->at));
        });
      }
      const int64_t limit = X.span();
      for_each_index(Y.dims, [&](const std::vector<int64_t>& idx) {
        const int64_t place = dot(idx, Y.strides);
        if (place >= limit) throw std::runtime_error("cudnn emulator: a reshape's view reaches past its input");
        y.store(dot(idx, y.at), x->device ? x->load(place) : view[size_t(place)]);
      });
      return;
    }
  }
}

struct Run {
  std::shared_ptr<Graph> graph;
  std::map<int64_t, char*> pointers;  // device tensors
  std::map<int64_t, float> values;    // by-value scalars, read at the call
};

void execute(const Run& run) {
  std::map<int64_t, Memory> mem;
  for (const auto& [uid, info] : run.graph->tensors) {
    Memory m;
    m.info = &info;
    if (info.by_value) {
      m.own.assign(1, run.values.at(uid));
      m.at = row_major(info.dims);
    } else if (info.is_virtual) {
      m.own.assign(size_t(info.elements()), std::nanf(""));  // unwritten elements read as NaN
      m.at = row_major(info.dims);
    } else {
      m.device = run.pointers.at(uid);
      m.at = info.strides;
    }
    mem.emplace(uid, std::move(m));
  }
  for (const Op& op : run.graph->ops) run_op(op, mem);
}

}  // namespace

void set_version(size_t version) { g_version = version; }
void set_refusal(Refusal refusal) { g_refusal = refusal; }
void set_workspace_bytes(int64_t bytes) { g_workspace_bytes = bytes; }

}  // namespace emu::cudnn

namespace ec = emu::cudnn;

extern "C" {

size_t cudnnGetVersion(void) { return ec::g_version.load(); }

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS (another)";
  }
}

void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (!message || max_size == 0) return;
  std::strncpy(message, ec::t_last_error.c_str(), max_size - 1);
  message[max_size - 1] = '\0';
  ec::t_last_error.clear();
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *handle = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* descriptor) {
  if (!descriptor) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  auto* d = new ec::Desc;
  d->type = type;
  *descriptor = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  delete static_cast<ec::Desc*>(descriptor);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count, const void* values) {
  auto* d = static_cast<ec::Desc*>(descriptor);
  if (!d || !values) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (d->finalized) return ec::error(CUDNN_STATUS_BAD_PARAM, "attribute set on a finalized descriptor");
  if (ec::expected_type(name) != type || count < 1)
    return ec::error(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                     "attribute " + std::to_string(int(name)) + " set with type " + std::to_string(int(type)));
  ec::Desc::Attr a{type, count, {}};
  const auto* p = static_cast<const unsigned char*>(values);
  a.bytes.assign(p, p + count * ec::element_bytes(type));
  d->attrs[int(name)] = std::move(a);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  auto* d = static_cast<ec::Desc*>(descriptor);
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (d->finalized) return ec::error(CUDNN_STATUS_BAD_PARAM, "finalized twice");
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: s = ec::finalize_tensor(*d); break;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      if (!d->has(CUDNN_ATTR_POINTWISE_MODE) || !d->has(CUDNN_ATTR_POINTWISE_MATH_PREC))
        s = ec::error(CUDNN_STATUS_BAD_PARAM, "a pointwise descriptor without mode or precision");
      else if (d->one<cudnnPointwiseMode_t>(CUDNN_ATTR_POINTWISE_MODE) == CUDNN_POINTWISE_GEN_INDEX &&
               !d->has(CUDNN_ATTR_POINTWISE_AXIS))
        s = ec::error(CUDNN_STATUS_BAD_PARAM, "GEN_INDEX without an axis");
      break;
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
      if (!d->has(CUDNN_ATTR_MATMUL_COMP_TYPE)) s = ec::error(CUDNN_STATUS_BAD_PARAM, "a matmul without a compute type");
      break;
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
      if (!d->has(CUDNN_ATTR_REDUCTION_OPERATOR) || !d->has(CUDNN_ATTR_REDUCTION_COMP_TYPE))
        s = ec::error(CUDNN_STATUS_BAD_PARAM, "a reduction without operator or compute type");
      break;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: s = ec::finalize_operation(*d); break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: s = ec::finalize_graph(*d); break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: {
      if (!d->has(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH) || !d->has(CUDNN_ATTR_ENGINEHEUR_MODE)) {
        s = ec::error(CUDNN_STATUS_BAD_PARAM, "heuristics without a graph or a mode");
        break;
      }
      const ec::Desc* g = d->desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      if (!g || !g->finalized || !g->graph) s = ec::error(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "heuristics of an unfinalized graph");
      else d->graph = g->graph;
      break;
    }
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      if (!d->graph) s = ec::error(CUDNN_STATUS_BAD_PARAM, "an engine config not from the heuristics");
      break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
      if (!d->has(CUDNN_ATTR_EXECUTION_PLAN_HANDLE) || !d->has(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)) {
        s = ec::error(CUDNN_STATUS_BAD_PARAM, "a plan without a handle or an engine config");
        break;
      }
      const ec::Desc* cfg = d->desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
      if (!cfg || !cfg->graph) {
        s = ec::error(CUDNN_STATUS_BAD_PARAM, "a plan's engine config has no graph");
      } else if (ec::g_refusal.load() == ec::Refusal::plans_all_refused) {
        s = ec::error(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "the emulator refuses every plan (cudnn_emu.h)");
      } else {
        d->graph = cfg->graph;
        d->handle = d->one<cudnnHandle_t>(CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
      }
      break;
    }
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      if (!d->has(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS) || !d->has(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS) ||
          !d->has(CUDNN_ATTR_VARIANT_PACK_WORKSPACE))
        s = ec::error(CUDNN_STATUS_BAD_PARAM, "a variant pack without ids, pointers or workspace");
      else if (d->attrs.at(int(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)).count !=
               d->attrs.at(int(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)).count)
        s = ec::error(CUDNN_STATUS_BAD_PARAM, "a variant pack's ids and pointers differ in count");
      break;
    default: s = ec::error(CUDNN_STATUS_NOT_SUPPORTED, "descriptor type " + std::to_string(int(d->type)) + " not emulated");
  }
  if (s == CUDNN_STATUS_SUCCESS) d->finalized = true;
  return s;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested, int64_t* count,
                                       void* values) {
  auto* d = static_cast<ec::Desc*>(descriptor);
  if (!d) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!d->finalized) return ec::error(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "attribute read before finalize");
  if (ec::expected_type(name) != type) return ec::error(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "attribute read as another type");
  if (d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
    const int64_t engines = ec::g_refusal.load() == ec::Refusal::heuristics_empty ? 0 : 2;
    if (count) *count = requested == 0 ? engines : std::min(requested, engines);
    for (int64_t i = 0; i < std::min(requested, engines); ++i) {
      auto* cfg = static_cast<ec::Desc**>(values)[i];
      if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
        return ec::error(CUDNN_STATUS_BAD_PARAM, "heuristics results need engine config descriptors");
      cfg->graph = d->graph;
      cfg->finalized = true;
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) {
    if (requested < 1 || !values) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    *static_cast<int64_t*>(values) = ec::g_workspace_bytes.load();
    if (count) *count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  return ec::error(CUDNN_STATUS_NOT_SUPPORTED, "attribute " + std::to_string(int(name)) + " cannot be read here");
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan_desc,
                                  cudnnBackendDescriptor_t pack_desc) {
  auto* plan = static_cast<ec::Desc*>(plan_desc);
  auto* pack = static_cast<ec::Desc*>(pack_desc);
  if (!handle || !plan || !pack) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!plan->finalized || !pack->finalized || plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return ec::error(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "execute needs a finalized plan and variant pack");
  if (plan->handle != handle) return ec::error(CUDNN_STATUS_BAD_PARAM, "a plan executed on another handle");
  const auto uids = pack->get<int64_t>(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const auto pointers = pack->get<void*>(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  void* workspace = pack->one<void*>(CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
  const int64_t workspace_bytes = ec::g_workspace_bytes.load();
  if (workspace_bytes > 0 && !workspace) return ec::error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "the plan needs a workspace");
  ec::Run run;
  run.graph = plan->graph;
  for (size_t i = 0; i < uids.size(); ++i) {
    const auto it = run.graph->tensors.find(uids[i]);
    if (it == run.graph->tensors.end() || it->second.is_virtual)
      return ec::error(CUDNN_STATUS_BAD_PARAM, "the variant pack names " + std::to_string(uids[i]) +
                                                   ", not a non-virtual tensor of the graph");
    if (!pointers[i]) return ec::error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "a null pointer in the variant pack");
    if (it->second.by_value) {
      std::memcpy(&run.values[uids[i]], pointers[i], sizeof(float));
    } else {
      if (reinterpret_cast<uintptr_t>(pointers[i]) % uintptr_t(it->second.alignment) != 0)
        return ec::error(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                         "tensor " + std::to_string(uids[i]) + " is less aligned than its descriptor says");
      run.pointers[uids[i]] = static_cast<char*>(pointers[i]);
    }
  }
  for (const auto& [uid, t] : run.graph->tensors)
    if (!t.is_virtual && !run.pointers.count(uid) && !run.values.count(uid))
      return ec::error(CUDNN_STATUS_BAD_PARAM, "the variant pack lacks tensor " + std::to_string(uid));
  // The plan's workspace is the engine's until it finishes: scribble on it, as an engine may.
  auto* ws = static_cast<unsigned char*>(workspace);
  const cudaError_t e = emu::submit(handle->stream, [run, ws, workspace_bytes] {
    if (workspace_bytes > 0) std::memset(ws, 0xA5, size_t(workspace_bytes));
    ec::execute(run);
  });
  return e == cudaSuccess ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}

}  // extern "C"
