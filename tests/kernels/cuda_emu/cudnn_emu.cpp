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
// cudnn_emu.h sets the version reported, the refusals (no engine) and the workspace tests need.
// Here: the settings and the C API; the descriptors' rules are in cudnn_emu_graph.cpp, the
// interpreter in cudnn_emu_run.cpp (cudnn_emu_internal.h between them).
#include <cudnn.h>

#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/kernels/cuda_emu/cuda_emu_stream.h"
#include "tests/kernels/cuda_emu/cudnn_emu.h"
#include "tests/kernels/cuda_emu/cudnn_emu_internal.h"

struct cudnnContext {
  cudaStream_t stream = nullptr;
};

namespace emu::cudnn {
namespace {

std::atomic<size_t> g_version{91900};
std::atomic<Refusal> g_refusal{Refusal::none};
std::atomic<int64_t> g_workspace_bytes{4096};  // what every plan asks for (set_workspace_bytes)
thread_local std::string t_last_error;

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

}  // namespace

size_t version() { return g_version.load(); }
Refusal refusal() { return g_refusal.load(); }
int64_t workspace_bytes() { return g_workspace_bytes.load(); }
cudnnStatus_t error(cudnnStatus_t status, const std::string& why) {
  t_last_error = why;
  return status;
}

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
  run.version = ec::version();
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
