// FLOPs per token and device peaks (see flops.h).
#include "app/engine/flops.h"

#include <fmt/core.h>
#include <omp.h>

#include <sstream>
#include <vector>

namespace trainer {

double flops_per_token(const GptConfig& c, int seq_len) {
  // Every parameter is a multiply-add per token in forward and two in backward, except the
  // tables that are only looked up: gpt2's position table and an untied token table (a
  // tied one is the head's matrix). Attention adds its score and weighted-sum products
  // over the n_head query heads (grouped k/v heads do not change them).
  const double looked_up = c.tied() ? 0.0 : double(c.padded_vocab) * double(c.d_model);
  return 6.0 * (double(c.num_params_no_wpe()) - looked_up) +
         6.0 * double(c.n_layer) * double(seq_len) * double(c.d_model);
}

std::string DevicePeak::describe() const {
  if (kind == PeakKind::unknown)
    return "unknown peak for '" + device + "' (set train.peak_tflops to report MFU)";
  return fmt::format("{:.4g} TFLOP/s {} ({})", flops / 1e12, peak_kind_name(kind), device);
}

namespace {

// Data-sheet dense peaks in TFLOP/s (NVIDIA: A100, H100 and H200 data sheets; L40S, L4, A10
// product briefs). A row matches when the device name contains its model as a whole word
// (words split at spaces and '-') and, when it has one, its variant word; rows with a variant
// come first so "H100 PCIe" is not taken for the SXM part.
struct PeakRow {
  const char* model;
  const char* variant;  // "" = any
  double bf16;
  double fp32;
};
const PeakRow kPeaks[] = {
    {"H100", "PCIe", 756, 51},   {"H100", "NVL", 835, 60},  {"H200", "NVL", 835, 60},
    {"GH200", "", 989, 67},      {"H200", "", 989, 67},     {"H100", "", 989, 67},
    {"A100", "", 312, 19.5},     {"L40S", "", 362, 91.6},   {"L4", "", 121, 30.3},
    {"A10", "", 125, 31.2},
};

std::vector<std::string> words(const std::string& name) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : name) {
    if (ch == ' ' || ch == '-' || ch == '_') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool has_word(const std::vector<std::string>& ws, const char* w) {
  for (const std::string& x : ws)
    if (x == w) return true;
  return false;
}

}  // namespace

DevicePeak device_peak(Device device, const std::string& device_name, DType act_dtype, double recipe_peak_tflops) {
  DevicePeak p;
  p.device = device_name;
  if (recipe_peak_tflops > 0) {
    p.flops = recipe_peak_tflops * 1e12;
    p.kind = PeakKind::recipe;
    return p;
  }
  if (device == Device::cpu) {
    p.flops = 0.25e12 * double(omp_get_max_threads());
    p.kind = PeakKind::cpu_fp32;
    return p;
  }
  const std::vector<std::string> ws = words(device_name);
  for (const PeakRow& row : kPeaks) {
    if (!has_word(ws, row.model) || (*row.variant && !has_word(ws, row.variant))) continue;
    const bool bf16 = act_dtype == DType::bf16;
    p.flops = (bf16 ? row.bf16 : row.fp32) * 1e12;
    p.kind = bf16 ? PeakKind::bf16_dense : PeakKind::fp32;
    return p;
  }
  return p;
}

double mfu_of(double flops_per_s, const DevicePeak& peak) {
  return peak.flops > 0 ? flops_per_s / peak.flops : -1.0;
}

}  // namespace trainer
