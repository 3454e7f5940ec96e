// Validators for numeric command-line options: a closed range with bounds a person can read
// (CLI11's PositiveNumber prints DBL_MAX's 309 digits as its upper bound), and for floats a
// refusal of nan and inf, which CLI11's Range lets through (every comparison with nan is false).
// A refused value is a CLI parse error: main prints it and exits with code 2.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace trainer {

inline CLI::Validator int_in(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "Value " + text + " is not an integer";
        if (v < lo || v > hi)
          return "Value " + text + " not in range " + std::to_string(lo) + " to " + std::to_string(hi);
        return "";
      },
      "INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

inline CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v))
          return "Value " + text + " is not a finite number";
        if (v < lo || v > hi) return "Value " + text + " not in range " + CLI::detail::to_string(lo) + " to " + CLI::detail::to_string(hi);
        return "";
      },
      "FLOAT in [" + CLI::detail::to_string(lo) + " - " + CLI::detail::to_string(hi) + "]");
}

// Limits shared by several commands.
constexpr int64_t kMaxRanks = int64_t(1) << 20;

}  // namespace trainer
