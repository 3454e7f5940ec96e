// Matrix products through cuBLASLt (see cuda_matmul.h for the layout trick and precision).
// Epilogue choice: bias -> CUBLASLT_EPILOGUE_BIAS; bias + GELU with bf16 output and N % 8 == 0
// -> CUBLASLT_EPILOGUE_GELU_AUX_BIAS (D = gelu_out, aux = the pre-activation `out`); the
// backward form (gelu_inp, dbias) with bf16 output and N % 8 == 0 -> CUBLASLT_EPILOGUE_DGELU_BGRAD
// (D = out, aux = gelu_inp read, the bias gradient in f32 to scratch, then added to dbias), or
// DGELU alone; a weight gradient's dbias_a with bf16 inputs -> CUBLASLT_EPILOGUE_BGRADB (a's
// column sums in f32 to scratch, then added); all only with 16-byte aligned bias and aux
// pointers. GELU in fp32 always runs as our own kernels, so fp32 results do not depend on
// cuBLASLt's GELU approximation. When cuBLASLt has no algorithm for an epilogue (an unusual
// type or alignment mix), the plain product runs and our kernels add the bias, GELU, its
// gradient or the bias gradients: same result. A residual is cuBLASLt's C (D = A B + C,
// beta = 1, C a separate matrix of D's layout); where no algorithm takes it, our add kernel adds
// it after the product and bias. K = 0 (an empty sum, which cuBLASLt does not take) is a memset
// and the same kernels.
#include "kernels/cuda/cuda_matmul.h"

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "kernels/base/check.h"
#include "kernels/cuda/cuda_check.h"

namespace trainer::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // cuBLASLt's recommendation for Hopper

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    default: TRAINER_CHECK(false, std::string("matmul: unsupported dtype ") + dtype_name(dtype));
  }
  return CUDA_R_32F;
}

// Largest power of two (<= 256) dividing the address: what cuBLASLt may assume.
uint32_t alignment(const void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  uint32_t a = 256;
  while (a > 1 && p % a != 0) a >>= 1;
  return a;
}

struct Layout {
  cublasLtMatrixLayout_t desc = nullptr;
  Layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
    TRAINER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&desc, type, static_cast<uint64_t>(rows),
                                                    static_cast<uint64_t>(cols), ld));
  }
  ~Layout() { TRAINER_CUBLAS_REPORT(cublasLtMatrixLayoutDestroy(desc)); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
};

struct OpDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  OpDesc() { TRAINER_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)); }
  ~OpDesc() { TRAINER_CUBLAS_REPORT(cublasLtMatmulDescDestroy(desc)); }
  OpDesc(const OpDesc&) = delete;
  OpDesc& operator=(const OpDesc&) = delete;
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attr, const V& value) {
    TRAINER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value));
  }
};

struct Preference {
  cublasLtMatmulPreference_t desc = nullptr;
  Preference() { TRAINER_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&desc)); }
  ~Preference() { TRAINER_CUBLAS_REPORT(cublasLtMatmulPreferenceDestroy(desc)); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  template <class V>
  void set(cublasLtMatmulPreferenceAttributes_t attr, const V& value) {
    TRAINER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(desc, attr, &value, sizeof value));
  }
};

const char* epilogue_name(cublasLtEpilogue_t kind) {
  switch (kind) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_GELU_AUX: return "GELU_AUX";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return "GELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DGELU: return "DGELU";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: return "DGELU_BGRAD";
    case CUBLASLT_EPILOGUE_BGRADB: return "BGRADB";
    default: return "other";
  }
}

}  // namespace

Matmul::Matmul(DeviceMemory& memory) : memory_(memory) {
  TRAINER_CUBLAS_CHECK(cublasLtCreate(&handle_));
  workspace_ = memory_.alloc(kWorkspaceBytes);
  workspace_bytes_ = kWorkspaceBytes;
}

Matmul::~Matmul() {
  try {
    memory_.free(workspace_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  TRAINER_CUBLAS_REPORT(cublasLtDestroy(handle_));
}

void Matmul::run(const Context& ctx, const MatmulOp& op) {
  const Tensor &out = op.out, &bias = op.bias, &gelu_out = op.gelu_out, &residual = op.residual;
  const MatmulDims d = matmul_dims(op);
  if (d.M * d.N == 0) {
    // No product, but a's column sums are still a bias gradient.
    if (op.dbias_a.defined()) cuda::run(ctx, BiasBackwardOp{op.dbias_a, op.a});
    return;
  }
  if (d.K == 0) {
    // An empty sum (cuBLASLt takes no k = 0): out = bias or 0 (+ residual), or out += bias.
    if (op.mode == Accumulate::overwrite) TRAINER_CUDA_CHECK(cudaMemsetAsync(out.data, 0, out.bytes(), ctx.stream));
    if (bias.defined()) bias_add_rows(ctx, out, bias);
    if (residual.defined()) cuda::run(ctx, AddOp{out, out, residual});
    if (gelu_out.defined()) cuda::run(ctx, GeluForwardOp{gelu_out, out});
    if (op.gelu_inp.defined()) cuda::run(ctx, GeluBackwardOp{out, op.gelu_inp, out});
    if (op.dbias.defined()) cuda::run(ctx, BiasBackwardOp{op.dbias, out});
    if (op.dbias_a.defined()) cuda::run(ctx, BiasBackwardOp{op.dbias_a, op.a});
    return;
  }
  if (op.gelu_inp.defined() || op.dbias.defined()) return run_backward_form(ctx, op, d);
  if (op.dbias_a.defined()) return run_weight_grad_form(ctx, op, d);

  // The heuristic's alignment preferences cover A, B, C and D only, not the epilogue's bias
  // and aux pointers: it may pick a kernel that assumes 16-byte aligned ones, which then faults
  // ("misaligned address", fatal for the context). So the epilogues take aligned ones only;
  // a view at an odd offset gets the plain product and our kernels.
  const bool bias_aligned = bias.defined() && aligned16(bias.data);
  const bool fuse_gelu = gelu_out.defined() && out.dtype == DType::bf16 && d.N % 8 == 0 &&
                         aligned16(out.data) && (!bias.defined() || bias_aligned);
  Epilogue fused;
  if (fuse_gelu)
    fused = {bias.defined() ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX, bias.data,
             bias.dtype, out.data};
  else if (bias_aligned)
    fused = {CUBLASLT_EPILOGUE_BIAS, bias.data, bias.dtype, nullptr};

  // The fused form first; each refusal drops a fusion (the epilogue, then the residual as C),
  // and our kernels then add what was dropped.
  struct Attempt {
    Epilogue epilogue;
    bool residual;
  };
  std::vector<Attempt> attempts{{fused, residual.defined()}};
  if (fused.kind != CUBLASLT_EPILOGUE_DEFAULT) attempts.push_back({Epilogue{}, residual.defined()});
  if (residual.defined()) attempts.push_back({Epilogue{}, false});
  const Attempt* ran = nullptr;
  for (const Attempt& t : attempts)
    if (!ran && try_run(ctx, op, d, t.epilogue, t.residual)) ran = &t;
  TRAINER_CHECK(ran != nullptr, no_algorithm(op, d));
  const bool was_fused = ran->epilogue.kind != CUBLASLT_EPILOGUE_DEFAULT;
  if (bias.defined() && !was_fused) bias_add_rows(ctx, out, bias);
  if (residual.defined() && !ran->residual) cuda::run(ctx, AddOp{out, out, residual});
  if (gelu_out.defined() && !(was_fused && fuse_gelu)) cuda::run(ctx, GeluForwardOp{gelu_out, out});
}

void Matmul::run_backward_form(const Context& ctx, const MatmulOp& op, const MatmulDims& d) {
  const Tensor &out = op.out, &gelu_inp = op.gelu_inp, &dbias = op.dbias;
  // As the forward's GELU: bf16 only, so f32 results never depend on cuBLASLt's GELU; the aux
  // (our saved pre-activation) needs ld % 8 == 0 and a 16-byte aligned pointer. The bias
  // gradient is written (not added) in f32 to scratch, then added to dbias; cuBLASLt's own
  // default would be out's dtype, bf16, which would round every column sum.
  const bool fuse_dgelu = gelu_inp.defined() && out.dtype == DType::bf16 && d.N % 8 == 0 && aligned16(gelu_inp.data);
  float* dbias_part =
      fuse_dgelu && dbias.defined() ? static_cast<float*>(ctx.workspace->get(sizeof(float) * size_t(d.N))) : nullptr;
  std::vector<Epilogue> attempts;
  if (dbias_part) attempts.push_back({CUBLASLT_EPILOGUE_DGELU_BGRAD, dbias_part, DType::f32, gelu_inp.data});
  if (fuse_dgelu) attempts.push_back({CUBLASLT_EPILOGUE_DGELU, nullptr, DType::f32, gelu_inp.data});
  const cublasLtEpilogue_t ran = run_first(ctx, op, d, attempts);
  if (gelu_inp.defined() && ran == CUBLASLT_EPILOGUE_DEFAULT) cuda::run(ctx, GeluBackwardOp{out, gelu_inp, out});
  if (dbias.defined()) {
    if (ran == CUBLASLT_EPILOGUE_DGELU_BGRAD)
      add_column_partials(ctx, {static_cast<float*>(dbias.data), dbias_part}, 1, d.N);
    else
      cuda::run(ctx, BiasBackwardOp{dbias, out});
  }
}

void Matmul::run_weight_grad_form(const Context& ctx, const MatmulOp& op, const MatmulDims& d) {
  // bf16 as the other gradient epilogues. BGRADB reduces cuBLASLt's B (our a, laid out k x n)
  // over k, one sum per column of D (n = M): a's column sums. Written in f32 to scratch (never
  // a bf16 sum), then added to dbias_a, which accumulates over micro-batches.
  const bool fuse = op.a.dtype == DType::bf16;
  float* part = fuse ? static_cast<float*>(ctx.workspace->get(sizeof(float) * size_t(d.M))) : nullptr;
  std::vector<Epilogue> attempts;
  if (part) attempts.push_back({CUBLASLT_EPILOGUE_BGRADB, part, DType::f32, nullptr});
  if (run_first(ctx, op, d, attempts) == CUBLASLT_EPILOGUE_BGRADB)
    add_column_partials(ctx, {static_cast<float*>(op.dbias_a.data), part}, 1, d.M);
  else
    cuda::run(ctx, BiasBackwardOp{op.dbias_a, op.a});
}

cublasLtEpilogue_t Matmul::run_first(const Context& ctx, const MatmulOp& op, const MatmulDims& d,
                                     std::vector<Epilogue> attempts) {
  attempts.push_back(Epilogue{});
  for (const Epilogue& e : attempts)
    if (try_run(ctx, op, d, e, false)) return e.kind;
  TRAINER_CHECK(false, no_algorithm(op, d));
  return CUBLASLT_EPILOGUE_DEFAULT;
}

std::string Matmul::no_algorithm(const MatmulOp& op, const MatmulDims& d) {
  return "matmul: cuBLASLt has no algorithm for M=" + std::to_string(d.M) + " N=" + std::to_string(d.N) +
         " K=" + std::to_string(d.K) + " " + dtype_name(op.a.dtype) + " -> " + dtype_name(op.out.dtype);
}

bool Matmul::try_run(const Context& ctx, const MatmulOp& p, const MatmulDims& d, const Epilogue& e,
                     bool with_residual) {
  const bool accumulate = p.mode == Accumulate::add;
  const bool gelu_aux_out = e.kind == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e.kind == CUBLASLT_EPILOGUE_GELU_AUX;
  const bool with_bias = e.bias != nullptr;
  const bool with_aux = e.aux != nullptr;
  const cudaDataType_t ab_type = cuda_type(p.a.dtype);
  const cudaDataType_t d_type = cuda_type(p.out.dtype);
  // Column-major A = b's memory, B = a's memory, D = out (or gelu_out with aux = out).
  const bool tb_t = p.tb == Transpose::transpose;
  const bool ta_t = p.ta == Transpose::transpose;
  Layout A(ab_type, tb_t ? d.K : d.N, tb_t ? d.N : d.K, tb_t ? d.K : d.N);
  Layout B(ab_type, ta_t ? d.M : d.K, ta_t ? d.K : d.M, ta_t ? d.M : d.K);
  Layout D(d_type, d.N, d.M, d.N);
  void* d_ptr = gelu_aux_out ? p.gelu_out.data : p.out.data;
  // C: D itself (read only when accumulating), or the residual, laid out as D.
  const void* c_ptr = with_residual ? p.residual.data : d_ptr;

  OpDesc op;
  const cublasOperation_t op_a = tb_t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = ta_t ? CUBLAS_OP_T : CUBLAS_OP_N;
  op.set(CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  op.set(CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  op.set(CUBLASLT_MATMUL_DESC_EPILOGUE, e.kind);
  if (with_bias) {
    // A bias read (BIAS) or a bias gradient written (BGRAD): one attribute for both.
    const void* bias_ptr = e.bias;
    op.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr);
    const int32_t bias_type = cuda_type(e.bias_dtype);
    op.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type);
  }
  if (with_aux) {
    // The pre-activation: written by GELU_AUX*, read by DGELU*; laid out as D.
    const void* aux = e.aux;
    op.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
    const int64_t aux_ld = d.N;
    op.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld);
  }

  const Key key = {d.M, d.N, d.K, int64_t(p.ta), int64_t(p.tb), int64_t(p.a.dtype),
                   int64_t(p.out.dtype), with_bias ? int64_t(e.bias_dtype) : -1, int64_t(e.kind),
                   alignment(p.a.data), alignment(p.b.data), alignment(d_ptr),
                   with_bias ? alignment(e.bias) : 0, with_aux ? alignment(e.aux) : 0,
                   accumulate ? 1 : 0, with_residual ? alignment(c_ptr) : 0};
  const bool fused = e.kind != CUBLASLT_EPILOGUE_DEFAULT || with_residual;
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    Preference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes_);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment(p.b.data));
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment(p.a.data));
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment(c_ptr));
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment(d_ptr));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle_, op.desc, A.desc, B.desc, D.desc, D.desc, pref.desc, 1, &result, &returned);
    // For a fused epilogue or a separate C any refusal means "use the plain product and our
    // kernels"; for the plain product only "not supported" is an answer, anything else is an error.
    if (!fused && status != CUBLAS_STATUS_NOT_SUPPORTED) TRAINER_CUBLAS_CHECK(status);
    CachedAlgo cached;
    cached.found = status == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (cached.found) cached.algo = result.algo;
    it = cache_.emplace(key, cached).first;
  }
  if (!it->second.found) return false;

  const float alpha = 1.0f;
  const float beta = accumulate || with_residual ? 1.0f : 0.0f;
  const cublasStatus_t status =
      cublasLtMatmul(handle_, op.desc, &alpha, p.b.data, A.desc, p.a.data, B.desc, &beta, c_ptr, D.desc, d_ptr,
                     D.desc, &it->second.algo, workspace_, workspace_bytes_, ctx.stream);
  // cuBLASLt checks some epilogue type combinations (a bias gradient's f32 beside bf16 D) only
  // here, before it launches anything: for a fused form that is one more refusal, remembered.
  if (fused && (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE)) {
    it->second.found = false;
    return false;
  }
  TRAINER_CUBLAS_CHECK(status);
  ++epilogue_runs_[std::string(epilogue_name(e.kind)) + (with_residual ? "+C" : "")];
  return true;
}

void run(const Context& ctx, const MatmulOp& op) { ctx.matmul->run(ctx, op); }

}  // namespace trainer::cuda
