// ZB-H1 compute orders by list scheduling (see pipeline_zero_bubble.h).
#include "parallel/pipeline_zero_bubble.h"

#include <algorithm>

#include "kernels/base/check.h"

namespace trainer {

namespace {

struct ZbPass {
  std::vector<Action> order;  // the kept stage's
  int length = 0;             // unit steps until every stage is done
};

// keep: the stage whose order is recorded, or -1 for none (the length alone).
ZbPass run_pass(int p, int m, int keep) {
  TRAINER_CHECK(p >= 1 && m >= 1, "zero-bubble shape");
  constexpr int kNever = 1 << 30;
  // The step at whose end each stage's F and B of each micro-batch finished (kNever: not yet).
  std::vector<std::vector<int>> f_end(size_t(p), std::vector<int>(size_t(m), kNever)), b_end = f_end;
  std::vector<int> next_f(size_t(p), 0), next_b(size_t(p), 0), next_w(size_t(p), 0);
  ZbPass pass;
  if (keep >= 0) pass.order.reserve(size_t(3) * size_t(m));
  int done = 0;
  for (int t = 0; done < p; ++t) {
    TRAINER_CHECK(t < 4 * p * m + 4 * p, "zero-bubble pass does not finish");
    done = 0;
    for (int s = 0; s < p; ++s) {
      const size_t u = size_t(s);
      int& f = next_f[u];
      int& b = next_b[u];
      int& w = next_w[u];
      if (w == m) {
        ++done;
        continue;
      }
      // A message finished at the end of step t - 1 is usable at step t.
      const bool b_ready = b < f && (s == p - 1 ? f_end[u][size_t(b)] < t : b_end[u + 1][size_t(b)] < t);
      // 1F1B's bound on micro-batches between F and B, and its first stage's (p) between F and
      // W on every stage: room to put off up to s W passes on stage s.
      const bool f_ready = f < m && (s == 0 || f_end[u - 1][size_t(f)] < t) && f - b < p - s && f - w < p;
      Action a{ActionKind::forward, -1, 0};
      if (b_ready) {
        b_end[u][size_t(b)] = t;
        a = {ActionKind::backward, b++, 0};
      } else if (f_ready) {
        f_end[u][size_t(f)] = t;
        a = {ActionKind::forward, f++, 0};
      } else if (w < b) {
        a = {ActionKind::backward_weight, w++, 0};
      }
      if (s == keep && a.micro >= 0) pass.order.push_back(a);
      if (w == m) pass.length = std::max(pass.length, t + 1);
    }
  }
  return pass;
}

}  // namespace

std::vector<Action> zero_bubble_order(int n_stages, int n_micro, int stage) {
  TRAINER_CHECK(stage >= 0 && stage < n_stages, "zero-bubble stage");
  return run_pass(n_stages, n_micro, stage).order;
}

double zero_bubble_fraction(int n_stages, int n_micro) {
  const ZbPass pass = run_pass(n_stages, n_micro, -1);
  return 1.0 - 3.0 * double(n_micro) / double(pass.length);
}

}  // namespace trainer
