// Document starts and positions of packed sequences (see documents.h).
#include "model/documents.h"

namespace trainer {

void document_layout(const int32_t* tokens, int64_t B, int64_t T, const DocumentOptions& o, int32_t* doc_start,
                     int32_t* positions) {
  for (int64_t b = 0; b < B; ++b) {
    const int32_t* x = tokens + b * T;
    int32_t start = 0;
    for (int64_t t = 0; t < T; ++t) {
      const bool opens = o.boundary == DocumentBoundary::starts ? x[t] == o.token : t > 0 && x[t - 1] == o.token;
      if (opens) start = int32_t(t);
      if (doc_start) doc_start[b * T + t] = start;
      if (positions) positions[b * T + t] = o.resets() ? int32_t(t) - start : int32_t(t);
    }
  }
}

}  // namespace trainer
