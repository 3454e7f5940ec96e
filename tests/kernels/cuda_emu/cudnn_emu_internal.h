// The emulated cuDNN's inside, shared by its three files: the descriptors and their finalize
// rules (cudnn_emu_graph.cpp), the interpreter of a finalized graph (cudnn_emu_run.cpp) and the
// C API with the emulator's settings (cudnn_emu.cpp, whose header says what is emulated).
#pragma once

#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/kernels/cuda_emu/cudnn_emu.h"

namespace emu::cudnn {

// The settings (cudnn_emu.h) as they stand.
size_t version();
Refusal refusal();
int64_t workspace_bytes();
// Keeps `why` for cudnnGetLastErrorString and returns `status`.
cudnnStatus_t error(cudnnStatus_t status, const std::string& why);

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

struct Run {
  std::shared_ptr<Graph> graph;
  std::map<int64_t, char*> pointers;  // device tensors
  std::map<int64_t, float> values;    // by-value scalars, read at the call
  size_t version = 0;                 // cudnnGetVersion at the call
};

// cudnn_emu_graph.cpp: the finalize rules of tensors, operations and the operation graph (which
// also orders the operations by their dependencies).
cudnnStatus_t finalize_tensor(Desc& d);
cudnnStatus_t finalize_operation(Desc& d);
cudnnStatus_t finalize_graph(Desc& d);

// cudnn_emu_run.cpp: whether an operation's operands fit its output (false with `why`), and one
// run of a finalized graph on host memory.
bool check_shapes(const Graph& g, const Op& op, std::string& why);
void execute(const Run& run);

}  // namespace emu::cudnn
