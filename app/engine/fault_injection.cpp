// FaultInjector (see fault_injection.h).
#include "app/engine/fault_injection.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "kernels/base/errors.h"

namespace trainer {

namespace {

[[noreturn]] void bad_text(const char* var, const std::string& text, const char* form) {
  throw ConfigError(std::string(var) + "=" + text + ": not a list of " + form + "; valid e.g. " +
                    (std::string(form).find(':') != std::string::npos ? "7:10 or 7:10,12:4" : "5 or 5,9"));
}

int64_t parse_step(const char* var, const std::string& all, const std::string& item, const char* form) {
  if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 12)
    bad_text(var, all, form);
  const int64_t step = std::stoll(item);
  if (step < 1) bad_text(var, all, form);
  return step;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  if (!text.empty() && text.back() == ',') items.emplace_back();
  return items;
}

}  // namespace

FaultInjector::FaultInjector(const std::string& nan_steps, const std::string& spike_steps) {
  constexpr const char* kNan = "TRAINER_FAULT_NAN_STEP";
  constexpr const char* kSpike = "TRAINER_FAULT_SPIKE_STEP";
  for (const std::string& item : split_commas(nan_steps))
    faults_.push_back({parse_step(kNan, nan_steps, item, "steps N >= 1"), true, 1, false});
  for (const std::string& item : split_commas(spike_steps)) {
    const char* form = "STEP:FACTOR pairs (step >= 1, factor a finite number > 0)";
    const size_t colon = item.find(':');
    if (colon == std::string::npos) bad_text(kSpike, spike_steps, form);
    const std::string factor_text = item.substr(colon + 1);
    char* end = nullptr;
    const double factor = std::strtod(factor_text.c_str(), &end);
    if (factor_text.empty() || *end != '\0' || !std::isfinite(factor) || factor <= 0)
      bad_text(kSpike, spike_steps, form);
    faults_.push_back({parse_step(kSpike, spike_steps, item.substr(0, colon), form), false, factor, false});
  }
}

FaultInjector FaultInjector::from_environment() {
  const char* nan = std::getenv("TRAINER_FAULT_NAN_STEP");
  const char* spike = std::getenv("TRAINER_FAULT_SPIKE_STEP");
  return FaultInjector(nan ? nan : "", spike ? spike : "");
}

bool FaultInjector::apply(int64_t step, double& loss, double& grad_norm) {
  bool fired = false;
  for (InjectedFault& f : faults_) {
    if (f.fired || f.step != step) continue;
    f.fired = fired = true;
    if (f.nan) {
      loss = std::nan("");
      grad_norm = std::nan("");
    } else {
      loss *= f.factor;
    }
  }
  return fired;
}

}  // namespace trainer
