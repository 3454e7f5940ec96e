// Shared by the PyTorch parity tests (test_torch_parity*.cpp): the token stream both sides
// train on, the global weights of a single-process trainer, the JSON lists the reference
// scripts write, and the per-tensor comparison.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "app/engine/trainer.h"
#include "model/param_table.h"

namespace trainer::testing {

// A learnable sequence (counting with a stride) with some noise, every id below 257.
inline std::vector<int32_t> parity_tokens(int n) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  uint64_t x = 99;
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    tokens[size_t(i)] = (x >> 61) == 0 ? int32_t((x >> 33) % 257) : int32_t((i * 5) % 257);
  }
  return tokens;
}

using Weights = std::map<std::string, std::vector<float>>;

// Global tensors of a single-process trainer.
inline Weights gather_weights(Trainer& t) {
  Weights w;
  const auto& table = t.layout().table();
  for (const LocalParam& p : t.layout().params()) {
    if (p.copy != CopyKind::primary) continue;
    const ParamSpec& spec = table[size_t(p.spec)];
    std::vector<float> local = t.store().local_values(p);
    std::vector<float>& g = w[spec.name];
    g.assign(size_t(spec.numel()), 0.0f);
    int64_t pos = 0;
    for (const Range& r : p.runs)
      for (int64_t i = r.begin; i < r.end; ++i) g[size_t(i)] = local[size_t(pos++)];
  }
  return w;
}

// The numbers of a flat JSON list `"key": [a, b, ...]` (what gpt2_torch.py writes).
inline std::vector<double> json_numbers(const std::string& text, const std::string& key) {
  std::vector<double> out;
  size_t at = text.find("\"" + key + "\"");
  REQUIRE_MESSAGE(at != std::string::npos, key);
  at = text.find('[', at);
  const size_t end = text.find(']', at);
  REQUIRE((at != std::string::npos && end != std::string::npos));
  std::string body = text.substr(at + 1, end - at - 1);
  for (char& c : body)
    if (c == ',') c = ' ';
  std::istringstream in(body);
  double v;
  while (in >> v) out.push_back(v);
  return out;
}

// ||a - b|| / ||b|| over one tensor.
inline double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double d2 = 0, b2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    d2 += d * d;
    b2 += double(b[i]) * double(b[i]);
  }
  return std::sqrt(d2) / std::max(std::sqrt(b2), 1e-30);
}

}  // namespace trainer::testing
