// Helpers shared by the tests: paths, running the trainer binary, random data, comparisons.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt_config.h"

namespace trainer::testing {

std::string source_dir();
std::string binary_dir();
std::string trainer_exe();

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Initialises MPI once per process (as a singleton) and finalises it at exit, for in-process
// tests that build an MpiComm over MPI_COMM_SELF.
void ensure_mpi();

// Runs a shell command line, capturing its output.
RunResult run_command(const std::string& command_line);

// A fresh empty directory under the build tree, removed first if present.
std::string scratch_dir(const std::string& name);
void write_text_file(const std::string& path, const std::string& text);
std::string read_text_file(const std::string& path);

// A 2-layer, 2-head, d_model 8 model with a vocabulary of 10 padded to 16 and 5 positions:
// small enough for file-format tests, divisible for tensor 2.
GptConfig tiny_gpt_config();

// Deterministic pseudo-random floats in [lo, hi) from a seed.
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// max |a - b| / max(|b|, floor) over all elements.
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b, double floor = 1e-6);

}  // namespace trainer::testing
