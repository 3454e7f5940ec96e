// Matrix products through OpenBLAS's row-major cblas_sgemm, with no copies: transposes become
// sgemm's transpose flags and leading dimensions.
//
// Determinism: OpenBLAS's own threading splits the output differently for different thread
// counts, and its edge-tile kernels round differently from its main kernel, so a threaded
// sgemm gives different bits with 1 and 2 threads. We therefore cut the output into fixed
// panels (up to kPanelRows x kPanelCols, a function of the shape only) and run one single-threaded
// sgemm per panel from an OpenMP loop (OpenBLAS's OpenMP build runs single-threaded inside a
// parallel region). Measured on GPT-2 124M shapes the panels cost no throughput.
// Epilogues run per panel while it is in cache: the bias is written into (or, when
// accumulating, added to) the panel before sgemm runs with beta = 1, and GELU follows sgemm.
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {
constexpr int64_t kPanelRows = 256;
constexpr int64_t kPanelCols = 512;  // the widest panel

// Column panels: at most kPanelCols wide, an even number of them when there is more than one
// (so two threads, the common case here, get equal shares: N = 768 splits 384 + 384, not
// 512 + 256, which left one thread a third of the step idle in every such product), of equal
// width rounded up to 16 floats (64 bytes) but the last. A function of the shape only.
int64_t panel_width(int64_t N) {
  int64_t panels = (N + kPanelCols - 1) / kPanelCols;
  if (panels > 1 && panels % 2 == 1) ++panels;
  const int64_t width = (N + panels - 1) / panels;
  return (width + 15) / 16 * 16;
}
}  // namespace

void matmul(float* out, const float* a, const float* b, const float* bias, int64_t M, int64_t N,
            int64_t K, Transpose ta, Transpose tb, Accumulate mode, float* gelu_out) {
  if (M == 0 || N == 0) return;
  const bool ta_t = ta == Transpose::transpose, tb_t = tb == Transpose::transpose;
  const int64_t lda = ta_t ? M : K;
  const int64_t ldb = tb_t ? K : N;
  const int64_t row_panels = (M + kPanelRows - 1) / kPanelRows;
  const int64_t width = panel_width(N);
  const int64_t col_panels = (N + width - 1) / width;
  // No `if` clause: outside an active parallel region OpenBLAS would thread by itself.
#pragma omp parallel for schedule(static)
  for (int64_t panel = 0; panel < row_panels * col_panels; ++panel) {
    const int64_t i0 = (panel / col_panels) * kPanelRows;
    const int64_t j0 = (panel % col_panels) * width;
    const int64_t m = std::min(kPanelRows, M - i0);
    const int64_t n = std::min(width, N - j0);
    float* c = out + i0 * N + j0;
    float beta = mode == Accumulate::add ? 1.0f : 0.0f;
    if (bias) {
      for (int64_t i = 0; i < m; ++i) {
        float* row = c + i * N;
        if (mode == Accumulate::add) {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) row[j] += bias[j0 + j];
        } else {
          std::copy(bias + j0, bias + j0 + n, row);
        }
      }
      beta = 1.0f;
    }
    if (K > 0) {
      const float* pa = ta_t ? a + i0 : a + i0 * K;
      const float* pb = tb_t ? b + j0 * K : b + j0;
      cblas_sgemm(CblasRowMajor, ta_t ? CblasTrans : CblasNoTrans,
                  tb_t ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                  static_cast<blasint>(n), static_cast<blasint>(K), 1.0f, pa,
                  static_cast<blasint>(lda), pb, static_cast<blasint>(ldb), beta, c,
                  static_cast<blasint>(N));
    } else if (beta == 0.0f) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * N, c + i * N + n, 0.0f);
    }
    if (gelu_out) {
      for (int64_t i = 0; i < m; ++i) {
        const float* row = c + i * N;
        float* g = gelu_out + (i0 + i) * N + j0;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) g[j] = gelu_fast(row[j]);
      }
    }
  }
}

void bias_backward(float* dbias, const float* dout, int64_t M, int64_t N) {
  const int64_t blocks = (N + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (M * N > (1 << 15))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kColumnBlock;
    const int64_t width = std::min(kColumnBlock, N - c0);
    float sum[kColumnBlock] = {};
    for (int64_t i = 0; i < M; ++i) {
      const float* d = dout + i * N + c0;
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) sum[c] += d[c];
    }
    for (int64_t c = 0; c < width; ++c) dbias[c0 + c] += sum[c];
  }
}

}  // namespace trainer::cpu
