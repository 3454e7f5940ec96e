// cuBLASLt on the CPU emulator: the part of its API that kernels/cuda/cuda_matmul.cpp calls,
// computed on host memory as cublasLt.h documents it, so that file's layouts, transposes,
// epilogues, alignment rules and fallbacks run where no GPU is. Written from the header's
// documentation, not from cuda_matmul.cpp:
// - Matrices are column-major: element (r, c) of a rows x cols layout is at r + c * ld, with
//   ld >= rows. D (m x n) = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n; A's layout
//   is the matrix as stored (k x m under TRANSA = T). C is not read when beta is 0.
// - COMPUTE_32F with f32 scale: f32 or bf16 A and B of one type, f32 accumulation in k order,
//   D of A's type or f32, C of D's type; results rounded to nearest even once.
// - Epilogues: BIAS adds bias[r] (length m) before the rest; GELU_AUX(_BIAS) writes the
//   pre-activation to the aux matrix (D's type, AUX_LD >= m, a multiple of 8) and GELU (tanh
//   form) to D; DGELU multiplies the product by gelu' of aux; DGELU_BGRAD also writes the row
//   sums of that result (length m) as the bias gradient; BGRADB writes the sums of op(B) over
//   k (length n). The bias (or its gradient) is of BIAS_DATA_TYPE, default D's type, and must
//   be D's type: another is refused by cublasLtMatmul (INVALID_VALUE), not by the heuristic
//   (set_bias_types can allow f32 beside bf16 D). Other epilogues are not modelled.
// - Attribute sizes must match the header's types (INVALID_VALUE otherwise).
// - An algorithm assumes the MIN_ALIGNMENT preferences for A, B, C and D (default 256 bytes)
//   and, with an epilogue, 16-byte aligned bias and aux pointers; cublasLtMatmul with a
//   pointer less aligned than that is the hardware's "misaligned address": a runtime_error.
//   The epilogue pointers' rule is not documented (the heuristic is said to read their
//   alignment): it is the worst case that cuda_matmul.cpp defends against, kept strict here.
// - The product is work on the stream (cuda_emu_stream.h), recorded while captured.
// Refusals beyond these come from set_refusal (cublaslt_emu.h).
#include <cublasLt.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/base/bf16.h"
#include "tests/kernels/cuda_emu/cublaslt_emu.h"
#include "tests/kernels/cuda_emu/cuda_emu_stream.h"

struct cublasLtContext {};

namespace emu::cublaslt {
namespace {

thread_local Refusal t_refusal = Refusal::none;
thread_local BiasTypes t_bias_types = BiasTypes::as_documented;

struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
};
struct Desc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t bias_type = -1;
  const void* aux = nullptr;
  int64_t aux_ld = 0;
};
struct Preference {
  uint64_t max_workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256};  // A, B, C, D
};
struct Algo {
  uint64_t magic = 0x656d756c74616c67ull;
  uint32_t align[4] = {};
  uint32_t epilogue = 0;
};

// The opaque descriptors hold these structs in their data arrays.
template <class T, class Opaque>
T& field(Opaque* opaque) {
  static_assert(sizeof(T) <= sizeof(opaque->data) && std::is_trivially_copyable_v<T>);
  return *reinterpret_cast<T*>(opaque->data);
}

uint32_t alignment_of(const void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  uint32_t a = 256;
  while (a > 1 && p % a != 0) a >>= 1;
  return a;
}

bool has_bias(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU_BGRAD ||
         e == CUBLASLT_EPILOGUE_BGRADB;
}
bool is_bias_gradient(uint32_t e) { return e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADB; }
bool has_aux(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU ||
         e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}
bool modelled(uint32_t e) { return e == CUBLASLT_EPILOGUE_DEFAULT || has_bias(e) || has_aux(e); }

cudaDataType_t bias_type(const Desc& d, const Layout& D) {
  return d.bias_type == -1 ? D.type : cudaDataType_t(d.bias_type);
}

// The checks the heuristic and the product share: shapes, types, the epilogue's inputs.
cublasStatus_t check_problem(const Desc& d, const Layout& A, const Layout& B, const Layout& C, const Layout& D) {
  if (d.compute != CUBLAS_COMPUTE_32F || d.scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool ta = d.transa == CUBLAS_OP_T, tb = d.transb == CUBLAS_OP_T;
  const uint64_t m = D.rows, n = D.cols, k = ta ? A.rows : A.cols;
  if ((ta ? A.cols : A.rows) != m || (tb ? B.cols : B.rows) != k || (tb ? B.rows : B.cols) != n)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (C.rows != m || C.cols != n || C.type != D.type) return CUBLAS_STATUS_INVALID_VALUE;
  for (const Layout* l : {&A, &B, &C, &D})
    if (l->ld < int64_t(std::max<uint64_t>(1, l->rows))) return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || k == 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (A.type != B.type || (A.type != CUDA_R_32F && A.type != CUDA_R_16BF)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (D.type != A.type && D.type != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!modelled(d.epilogue)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (has_bias(d.epilogue) && !d.bias) return CUBLAS_STATUS_INVALID_VALUE;
  const cudaDataType_t bt = bias_type(d, D);
  if (has_bias(d.epilogue) && bt != CUDA_R_32F && bt != CUDA_R_16BF) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (has_aux(d.epilogue) && (!d.aux || d.aux_ld < int64_t(m) || d.aux_ld % 8 != 0))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

float load(const void* base, cudaDataType_t type, int64_t i) {
  if (type == CUDA_R_16BF) return trainer::f32_from_bf16(static_cast<const uint16_t*>(base)[i]);
  return static_cast<const float*>(base)[i];
}
void store(void* base, cudaDataType_t type, int64_t i, float x) {
  if (type == CUDA_R_16BF)
    static_cast<uint16_t*>(base)[i] = trainer::bf16_from_f32(x);
  else
    static_cast<float*>(base)[i] = x;
}

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
float gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + 0.044715f * x * x * x))); }
float gelu_grad(float x) {
  const float t = std::tanh(kGeluScale * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

// One product with everything it reads fixed at the call, as a captured launch has it.
struct Product {
  Desc d;
  Layout A, B, C, D;
  float alpha, beta;
  const void *a, *b, *c;
  void* out;

  void operator()() const {
    const bool ta = d.transa == CUBLAS_OP_T, tb = d.transb == CUBLAS_OP_T;
    const int64_t m = int64_t(D.rows), n = int64_t(D.cols), k = int64_t(ta ? A.rows : A.cols);
    // op(A) by rows and op(B) by columns, widened to f32, so each element is one contiguous
    // dot product in k order.
    std::vector<float> rows_a(size_t(m * k)), cols_b(size_t(k * n));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t p = 0; p < k; ++p) rows_a[size_t(r * k + p)] = load(a, A.type, ta ? p + r * A.ld : r + p * A.ld);
    for (int64_t col = 0; col < n; ++col)
      for (int64_t p = 0; p < k; ++p) cols_b[size_t(col * k + p)] = load(b, B.type, tb ? col + p * B.ld : p + col * B.ld);
    const uint32_t e = d.epilogue;
    const cudaDataType_t bt = bias_type(d, D);
    // Everything is computed before D is written: D may be C.
    std::vector<float> x(size_t(m * n));
    for (int64_t col = 0; col < n; ++col)
      for (int64_t r = 0; r < m; ++r) {
        const float* ra = &rows_a[size_t(r * k)];
        const float* cb = &cols_b[size_t(col * k)];
        float acc = 0.0f;
        for (int64_t p = 0; p < k; ++p) acc += ra[p] * cb[p];
        float v = alpha * acc;
        if (beta != 0.0f) v += beta * load(c, C.type, r + col * C.ld);
        if (e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) v += load(d.bias, bt, r);
        x[size_t(r + col * m)] = v;
      }
    std::vector<float> bias_grad;
    if (e == CUBLASLT_EPILOGUE_BGRADB)
      for (int64_t col = 0; col < n; ++col) {
        float s = 0.0f;
        for (int64_t p = 0; p < k; ++p) s += cols_b[size_t(col * k + p)];
        bias_grad.push_back(s);
      }
    for (int64_t col = 0; col < n; ++col)
      for (int64_t r = 0; r < m; ++r) {
        float& v = x[size_t(r + col * m)];
        const int64_t at = r + col * d.aux_ld;
        if (e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
          store(const_cast<void*>(d.aux), D.type, at, v);
          v = gelu(v);
        }
        if (e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD) v *= gelu_grad(load(d.aux, D.type, at));
      }
    if (e == CUBLASLT_EPILOGUE_DGELU_BGRAD)
      for (int64_t r = 0; r < m; ++r) {
        float s = 0.0f;
        for (int64_t col = 0; col < n; ++col) s += x[size_t(r + col * m)];
        bias_grad.push_back(s);
      }
    for (size_t i = 0; i < bias_grad.size(); ++i) store(const_cast<void*>(d.bias), bt, int64_t(i), bias_grad[i]);
    for (int64_t col = 0; col < n; ++col)
      for (int64_t r = 0; r < m; ++r) store(out, D.type, r + col * D.ld, x[size_t(r + col * m)]);
  }
};

void require_aligned(const void* ptr, uint32_t assumed, const char* what) {
  if (alignment_of(ptr) < assumed)
    throw std::runtime_error(std::string("cuBLASLt emulator: misaligned address: ") + what + " is " +
                             std::to_string(alignment_of(ptr)) + "-byte aligned; the algorithm assumes " +
                             std::to_string(assumed));
}

template <class T>
cublasStatus_t set(T& field_value, const void* buf, size_t size) {
  if (!buf || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&field_value, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

void set_refusal(Refusal refusal) { t_refusal = refusal; }
void set_bias_types(BiasTypes types) { t_bias_types = types; }

}  // namespace emu::cublaslt

namespace lt = emu::cublaslt;

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}
const char* cublasLtGetStatusString(cublasStatus_t status) { return cublasLtGetStatusName(status); }

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  *layout = new cublasLtMatrixLayoutOpaque_t{};
  lt::field<lt::Layout>(*layout) = lt::Layout{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  *desc = new cublasLtMatmulDescOpaque_t{};
  lt::Desc d;
  d.compute = compute;
  d.scale = scale;
  lt::field<lt::Desc>(*desc) = d;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
  lt::Desc& d = lt::field<lt::Desc>(desc);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return lt::set(d.transa, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB: return lt::set(d.transb, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return lt::set(d.epilogue, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return lt::set(d.bias, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return lt::set(d.bias_type, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return lt::set(d.aux, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return lt::set(d.aux_ld, buf, size);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;  // not modelled
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  *pref = new cublasLtMatmulPreferenceOpaque_t{};
  lt::field<lt::Preference>(*pref) = lt::Preference{};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t size) {
  lt::Preference& p = lt::field<lt::Preference>(pref);
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return lt::set(p.max_workspace, buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return lt::set(p.align[0], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return lt::set(p.align[1], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return lt::set(p.align[2], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return lt::set(p.align[3], buf, size);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;  // not modelled
  }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  *returned = 0;
  if (!handle || requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  const lt::Desc& op = lt::field<lt::Desc>(desc);
  const cublasStatus_t status = lt::check_problem(op, lt::field<lt::Layout>(a), lt::field<lt::Layout>(b),
                                                  lt::field<lt::Layout>(c), lt::field<lt::Layout>(d));
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const lt::Refusal refusal = lt::t_refusal;
  if (refusal == lt::Refusal::everything ||
      (refusal == lt::Refusal::epilogues_in_heuristic && op.epilogue != CUBLASLT_EPILOGUE_DEFAULT))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  lt::Algo algo;
  std::memcpy(algo.align, lt::field<lt::Preference>(pref).align, sizeof algo.align);
  algo.epilogue = op.epilogue;
  lt::field<lt::Algo>(&results[0].algo) = algo;
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t a_desc, const void* B, cublasLtMatrixLayout_t b_desc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t c_desc, void* D,
                              cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void*, size_t,
                              cudaStream_t stream) {
  if (!handle || !algo || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  lt::Algo chosen;
  std::memcpy(&chosen, algo->data, sizeof chosen);
  if (chosen.magic != lt::Algo{}.magic) return CUBLAS_STATUS_INVALID_VALUE;
  lt::Product p{lt::field<lt::Desc>(desc),
                lt::field<lt::Layout>(a_desc),
                lt::field<lt::Layout>(b_desc),
                lt::field<lt::Layout>(c_desc),
                lt::field<lt::Layout>(d_desc),
                *static_cast<const float*>(alpha),
                *static_cast<const float*>(beta),
                A,
                B,
                C,
                D};
  const cublasStatus_t status = lt::check_problem(p.d, p.A, p.B, p.C, p.D);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (chosen.epilogue != p.d.epilogue) return CUBLAS_STATUS_INVALID_VALUE;
  const uint32_t e = p.d.epilogue;
  const cudaDataType_t bias_t = lt::bias_type(p.d, p.D);
  if (lt::has_bias(e) && bias_t != p.D.type &&
      !(lt::t_bias_types == lt::BiasTypes::f32_beside_bf16 && bias_t == CUDA_R_32F && p.D.type == CUDA_R_16BF))
    return CUBLAS_STATUS_INVALID_VALUE;
  const lt::Refusal refusal = lt::t_refusal;
  if (refusal == lt::Refusal::epilogues_in_matmul && e != CUBLASLT_EPILOGUE_DEFAULT) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (refusal == lt::Refusal::separate_c_in_matmul && p.beta != 0.0f && C != D) return CUBLAS_STATUS_NOT_SUPPORTED;
  lt::require_aligned(A, chosen.align[0], "A");
  lt::require_aligned(B, chosen.align[1], "B");
  if (p.beta != 0.0f) lt::require_aligned(C, chosen.align[2], "C");
  lt::require_aligned(D, chosen.align[3], "D");
  if (lt::has_bias(e)) lt::require_aligned(p.d.bias, 16, "the epilogue's bias");
  if (lt::has_aux(e)) lt::require_aligned(p.d.aux, 16, "the epilogue's aux matrix");
  if (emu::submit(stream, p) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
