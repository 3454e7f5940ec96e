// The emulated cuDNN's engine: an interpreter of a finalized operation graph on host memory,
// by the rules cudnn_emu.cpp's header states (cudnn_emu_internal.h).
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/base/bf16.h"
#include "tests/kernels/cuda_emu/cudnn_emu_internal.h"

namespace emu::cudnn {
namespace {

// An input of extent `in` serving an output of extent `out` along one dimension: equal, 1
// (broadcast) or, where allowed, a divisor (consecutive groups).
bool serves(int64_t in, int64_t out, bool groups) { return in == out || in == 1 || (groups && out % in == 0); }
// The index along an extent `small` that serves index i of an extent `big` (small divides
// big): i itself when equal, 0 for a broadcast, i's group of big / small otherwise.
int64_t served(int64_t i, int64_t small, int64_t big) { return i / (big / small); }

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
  // v rounded once to the tensor's type: in `own` as the f32 of that value, on the device as it.
  void store(int64_t offset, float v) {
    if (!device) {
      switch (info->dtype) {
        case CUDNN_DATA_BFLOAT16: v = trainer::f32_from_bf16(trainer::bf16_from_f32(v)); break;
        case CUDNN_DATA_INT32: v = float(int32_t(v)); break;
        case CUDNN_DATA_BOOLEAN: v = v != 0.0f ? 1.0f : 0.0f; break;
        default: break;
      }
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
  for (size_t i = 0; i < idx.size(); ++i) off += served(idx[i], t.dims[i], out_dims[i]) * m.at[i];
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

void run_op(const Op& op, std::map<int64_t, Memory>& mem, size_t version) {
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
      const bool accumulate = y.device && Y.dtype == CUDNN_DATA_FLOAT && version < 90600;
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
        for (size_t i = 0; i < idx.size(); ++i) a += served(idx[i], Y.dims[i], X.dims[i]) * dense[i];
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

}  // namespace

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
  for (const Op& op : run.graph->ops) run_op(op, mem, run.version);
}

}  // namespace emu::cudnn
