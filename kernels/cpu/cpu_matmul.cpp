// Matrix products through OpenBLAS's row-major cblas_sgemm, with no copies: transposes become
// sgemm's transpose flags and leading dimensions.
//
// Determinism: OpenBLAS's own threading splits the output differently for different thread
// counts, and its edge-tile kernels round differently from its main kernel, so a threaded
// sgemm gives different bits with 1 and 2 threads. We therefore cut the output into fixed
// panels (up to kPanelRows x kPanelCols, a function of the shape only: panel_grid) and run one
// single-threaded sgemm per panel from an OpenMP loop (OpenBLAS's OpenMP build runs
// single-threaded inside a parallel region). Measured on GPT-2 124M shapes the panels cost no
// throughput.
// Epilogues run per panel while it is in cache: the bias is written into (or, when
// accumulating, added to) the panel before sgemm runs with beta = 1, and GELU follows sgemm.
#include <cblas.h>

#include <algorithm>
#include <climits>

#include "kernels/base/check.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {
constexpr int64_t kPanelRows = 256;  // the tallest panel
constexpr int64_t kPanelCols = 512;  // the widest panel
constexpr int64_t kPanelAlign = 16;  // floats: 64 bytes
// A product of at least this many multiply-adds is cut in two even when it fits one panel
// (about 0.1 ms on one thread here): a weight gradient like M = 128, N = 512, K = 2048 (the
// quickstart's MLP) otherwise ran on one thread while the other waited.
constexpr int64_t kSplitMacs = int64_t(1) << 23;

// The extent of each of `panels` equal panels (the last may be shorter), rounded up to
// kPanelAlign.
int64_t panel_extent(int64_t extent, int64_t panels) {
  const int64_t size = (extent + panels - 1) / panels;
  return (size + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
}

struct PanelGrid {
  int64_t height, width, rows, cols;
};

// The output's cut into panels, a function of the shape only. An even number of panels when
// there is more than one, so two threads (the common case here) get equal shares, and panels
// of equal size: N = 768 splits 384 + 384, not 512 + 256, and M = 576 splits 3 x 192, not
// 256 + 256 + 64 (either left one thread a third of such a product idle).
PanelGrid panel_grid(int64_t M, int64_t N, int64_t K) {
  int64_t cols = (N + kPanelCols - 1) / kPanelCols;
  if (cols > 1 && cols % 2 == 1) ++cols;
  int64_t rows = (M + kPanelRows - 1) / kPanelRows;
  if (rows * cols > 1 && (rows * cols) % 2 == 1) ++rows;
  if (rows * cols == 1 && M * N * K >= kSplitMacs) (N >= M ? cols : rows) = 2;
  PanelGrid g{};
  g.height = panel_extent(M, rows);
  g.width = panel_extent(N, cols);
  g.rows = (M + g.height - 1) / g.height;
  g.cols = (N + g.width - 1) / g.width;
  return g;
}
}  // namespace

void matmul(float* out, const float* a, const float* b, const float* bias, int64_t M, int64_t N,
            int64_t K, Transpose ta, Transpose tb, Accumulate mode, float* gelu_out) {
  if (M == 0 || N == 0) return;
  const bool ta_t = ta == Transpose::transpose, tb_t = tb == Transpose::transpose;
  const int64_t lda = ta_t ? M : K;
  const int64_t ldb = tb_t ? K : N;
  const PanelGrid grid = panel_grid(M, N, K);
  // No `if` clause: outside an active parallel region OpenBLAS would thread by itself.
#pragma omp parallel for schedule(static)
  for (int64_t panel = 0; panel < grid.rows * grid.cols; ++panel) {
    const int64_t i0 = (panel / grid.cols) * grid.height;
    const int64_t j0 = (panel % grid.cols) * grid.width;
    const int64_t m = std::min(grid.height, M - i0);
    const int64_t n = std::min(grid.width, N - j0);
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

void run(const MatmulOp& op) {
  const MatmulDims d = matmul_dims(op);
  TRAINER_CHECK(d.M <= INT_MAX && d.N <= INT_MAX && d.K <= INT_MAX, "matmul: a dimension exceeds sgemm's 32-bit sizes");
  matmul(f32(op.out), f32(op.a), f32(op.b), f32(op.bias), d.M, d.N, d.K, op.ta, op.tb, op.mode, f32(op.gelu_out));
  // The residual as AddOp adds it: the same bits as the product followed by add; the backward
  // forms as GeluBackwardOp and BiasBackwardOp (on out, or on a for dbias_a) would after it.
  if (op.residual.defined()) add(f32(op.out), f32(op.out), f32(op.residual), d.M * d.N);
  if (op.gelu_inp.defined()) gelu_backward(f32(op.out), f32(op.gelu_inp), f32(op.out), d.M * d.N);
  if (op.dbias.defined()) bias_backward(f32(op.dbias), f32(op.out), d.M, d.N);
  if (op.dbias_a.defined()) bias_backward(f32(op.dbias_a), f32(op.a), d.K, d.M);
}

void run(const BiasBackwardOp& op) {
  bias_backward(f32(op.dbias), f32(op.dout), matrix_rows(op.dout), matrix_cols(op.dout));
}

}  // namespace trainer::cpu
