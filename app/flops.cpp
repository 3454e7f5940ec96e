// FLOPs per token and device peaks (see flops.h).
#include "app/flops.h"

#include <omp.h>

namespace trainer {

double flops_per_token(const GptConfig& c, int seq_len) {
  return 6.0 * double(c.num_params_no_wpe()) + 6.0 * double(c.n_layer) * double(seq_len) * double(c.d_model);
}

double peak_flops(const std::string& name, bool bf16, double recipe_peak_tflops) {
  if (recipe_peak_tflops > 0) return recipe_peak_tflops * 1e12;
  struct Entry {
    const char* key;
    double bf16_tflops;
    double tf32_tflops;
  };
  static const Entry table[] = {{"H200", 989, 494.5}, {"H100", 989, 494.5}, {"A100", 312, 156},
                                {"L40S", 362, 183}, {"A10", 125, 62.5}, {"V100", 125, 15.7}};
  for (const Entry& e : table)
    if (name.find(e.key) != std::string::npos) return (bf16 ? e.bf16_tflops : e.tf32_tflops) * 1e12;
  return 0.25e12 * double(omp_get_max_threads());
}

}  // namespace trainer
