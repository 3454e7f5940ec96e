// FLOPs per token, device peaks and bandwidths (see flops.h).
#include "app/plan/flops.h"

#include <fmt/core.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>
#include <vector>

#include "kernels/base/errors.h"

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

// Data-sheet dense peaks in TFLOP/s and memory bandwidths in TB/s (NVIDIA: A100, H100, H200
// and GH200 data sheets; L40S, L4, A10 product briefs). A row matches when the device name
// contains its model as a whole word (words split at spaces, '-' and '_') and, when it has one,
// its variant word (any case: the driver writes "A100-PCIE-40GB" and "H100 PCIe"); rows with a
// variant come first so "H100 PCIe" is not taken for the SXM part. GH200's figure is the 96 GB
// HBM3 part's (the 144 GB HBM3e part has 4.9 TB/s: bench --bandwidth says so). The measured
// columns (0 = none on record) are flops.h's Ceilings::measured: the plain H200 (SXM), the part
// the driver names "NVIDIA H200", and the H100 SXM ("NVIDIA H100 80GB HBM3"), each on the machines
// lent to this project; the NVL and PCIe parts were never measured.
struct PeakRow {
  const char* model;
  const char* variant;  // "" = any
  double bf16;
  double fp32;
  double hbm_tbs;
  double measured_bf16 = 0;
  double measured_tbs = 0;
};
const PeakRow kPeaks[] = {
    {"H100", "PCIe", 756, 51, 2.0},      {"H100", "NVL", 835, 60, 3.9},   {"H200", "NVL", 835, 60, 4.8},
    {"GH200", "", 989, 67, 4.0},         {"H200", "", 989, 67, 4.8, 790, 4.3}, {"H100", "", 989, 67, 3.35, 798, 3.0},
    {"A100", "40GB", 312, 19.5, 1.555},  {"A100", "PCIe", 312, 19.5, 1.935}, {"A100", "", 312, 19.5, 2.039},
    {"L40S", "", 362, 91.6, 0.864},      {"L4", "", 121, 30.3, 0.3},      {"A10", "", 125, 31.2, 0.6},
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

bool same_ignoring_case(const std::string& a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The first row whose model (exactly) and variant (any case) are words of the name.
const PeakRow* find_row(const std::string& device_name) {
  const std::vector<std::string> ws = words(device_name);
  const auto has_model = [&](const char* w) { return std::find(ws.begin(), ws.end(), w) != ws.end(); };
  const auto has_variant = [&](const char* w) {
    return std::any_of(ws.begin(), ws.end(), [&](const std::string& x) { return same_ignoring_case(x, w); });
  };
  for (const PeakRow& row : kPeaks)
    if (has_model(row.model) && (!*row.variant || has_variant(row.variant))) return &row;
  return nullptr;
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
  if (const PeakRow* row = find_row(device_name)) {
    const bool bf16 = act_dtype == DType::bf16;
    p.flops = (bf16 ? row->bf16 : row->fp32) * 1e12;
    p.kind = bf16 ? PeakKind::bf16_dense : PeakKind::fp32;
  }
  return p;
}

double device_memory_bandwidth(Device device, const std::string& device_name) {
  if (device == Device::cpu) return 0;
  const PeakRow* row = find_row(device_name);
  return row ? row->hbm_tbs * 1e12 : 0;
}

std::string RooflineChoice::describe() const {
  // Whole numbers from 100 up ("4300 GB/s", "12345 GB/s"), three digits below ("0.5 TFLOP/s").
  const auto part = [](double value, const char* unit, const std::string& source) {
    if (!(value > 0)) return fmt::format("unknown {}", unit);
    return value >= 100 ? fmt::format("{:.0f} {} ({})", value, unit, source)
                        : fmt::format("{:.3g} {} ({})", value, unit, source);
  };
  return part(roof.bytes_per_s / 1e9, "GB/s", bandwidth_source) + " and " +
         part(roof.flops_per_s / 1e12, "TFLOP/s", peak_source);
}

RooflineChoice roofline_for(Device device, const std::string& device_name, DType act_dtype, Ceilings ceilings,
                            double bandwidth_override, double recipe_peak_tflops) {
  RooflineChoice c;
  const PeakRow* row = device == Device::cuda ? find_row(device_name) : nullptr;
  const bool bf16 = act_dtype == DType::bf16;
  const auto unmeasured = [&](const char* what) {
    return ConfigError(fmt::format(
        "--ceilings measured: no measured {} is on record for '{}'{} (only in bf16 for an NVIDIA H200: 4.3 TB/s "
        "and 790 TFLOP/s, and an H100 SXM: 3.0 TB/s and 798 TFLOP/s); valid: --ceilings datasheet, or give the "
        "figures yourself with --bandwidth GB/s and "
        "--set train.peak_tflops=T",
        what, device_name, bf16 ? " in bf16" : " in fp32"));
  };
  if (bandwidth_override > 0) {
    c.roof.bytes_per_s = bandwidth_override;
    c.bandwidth_source = "--bandwidth";
  } else if (ceilings == Ceilings::measured) {
    if (!row || !(row->measured_tbs > 0)) throw unmeasured("memory bandwidth");
    c.roof.bytes_per_s = row->measured_tbs * 1e12;
    c.bandwidth_source = "measured";
  } else if ((c.roof.bytes_per_s = device_memory_bandwidth(device, device_name)) > 0) {
    c.bandwidth_source = "data sheet";
  }
  if (ceilings == Ceilings::measured && !(recipe_peak_tflops > 0)) {
    if (!row || !bf16 || !(row->measured_bf16 > 0)) throw unmeasured("matrix rate");
    c.roof.flops_per_s = row->measured_bf16 * 1e12;
    c.peak_source = "measured";
    return c;
  }
  const DevicePeak peak = device_peak(device, device_name, act_dtype, recipe_peak_tflops);
  c.roof.flops_per_s = peak.flops;
  if (peak.kind != PeakKind::unknown)
    c.peak_source = peak.kind == PeakKind::recipe     ? peak_kind_name(peak.kind)
                    : peak.kind == PeakKind::cpu_fp32 ? "the CPU estimate, 0.25 per thread"
                                                      : "data sheet";
  return c;
}

double mfu_of(double flops_per_s, const DevicePeak& peak) {
  return peak.flops > 0 ? flops_per_s / peak.flops : -1.0;
}

}  // namespace trainer
