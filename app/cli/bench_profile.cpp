// bench --profile's table and JSON rows (see bench_profile.h).
#include "app/cli/bench_profile.h"

#include <fmt/core.h>

#include <algorithm>

namespace trainer {

namespace {

// A rate needs a measured time; ops that compute little show "-" for TFLOP/s.
std::string rate(double amount, double seconds, double unit) {
  return amount > 0 && seconds > 0 ? fmt::format("{:.1f}", amount / seconds / unit) : std::string("-");
}

// The floor's share of the measured time, "-" without a roofline or a time.
std::string roof_share(const OpProfileRow& r, const Roofline& roof) {
  if (!roof.known() || r.seconds <= 0) return "-";
  return fmt::format("{:.0f}", 100 * roof.floor_s(r.bytes, r.flops) / r.seconds);
}

// The summary line under the table: the ops' floors against their time, and the three rows
// whose measured time is furthest above their floor.
void print_roofline(const std::vector<OpProfileRow>& rows, int steps, const RooflineChoice& choice) {
  const Roofline& roof = choice.roof;
  double floor = 0, measured = 0;
  std::vector<std::pair<double, const OpProfileRow*>> gaps;
  for (const OpProfileRow& r : rows) {
    const double f = roof.floor_s(r.bytes, r.flops);
    floor += f;
    measured += r.seconds;
    gaps.emplace_back(r.seconds - f, &r);
  }
  std::stable_sort(gaps.begin(), gaps.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string furthest;
  for (size_t i = 0; i < std::min<size_t>(3, gaps.size()); ++i)
    furthest += fmt::format("{}{} {} +{:.3f} ms", i ? ", " : "", gaps[i].second->op, gaps[i].second->shape,
                            1e3 * gaps[i].first / steps);
  fmt::print("  roofline {}: the ops' floors {:.3f} ms of their {:.3f} ms per step ({:.0f}%); furthest above theirs: "
             "{}\n",
             choice.describe(), 1e3 * floor / steps, 1e3 * measured / steps, measured > 0 ? 100 * floor / measured : 0.0,
             furthest);
}

}  // namespace

void print_profile(const std::vector<OpProfileRow>& rows, int steps, double step_s, const RooflineChoice& choice,
                   const std::string& unknown) {
  const Roofline& roof = choice.roof;
  double total = 0;
  for (const OpProfileRow& r : rows) total += r.seconds;
  fmt::print("  op profile (rank 0, per step; ops total {:.4f} s of the {:.4f} s step):\n", total / steps, step_s);
  fmt::print("    {:>10} {:>6} {:>8} {:>7} {:>8} {:>8} {:>5}  {:<20} {}\n", "ms/step", "%step", "calls", "us/call",
             "GB/s", "TFLOP/s", "%roof", "op", "shape");
  for (const OpProfileRow& r : rows) {
    const double per_step = r.seconds / steps;
    fmt::print("    {:>10.3f} {:>6.1f} {:>8.1f} {:>7.1f} {:>8} {:>8} {:>5}  {:<20} {}\n", 1e3 * per_step,
               100.0 * per_step / step_s, double(r.calls) / steps, 1e6 * r.seconds / double(r.calls),
               rate(r.bytes, r.seconds, 1e9), rate(r.flops, r.seconds, 1e12), roof_share(r, roof), r.op, r.shape);
  }
  if (roof.known())
    print_roofline(rows, steps, choice);
  else
    fmt::print("  no roofline: {}\n", unknown);
}

std::string profile_json(const std::vector<OpProfileRow>& rows, int steps, const Roofline& roof) {
  std::string out = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const OpProfileRow& r = rows[i];
    const std::string floor = roof.known() ? fmt::format("{:.6g}", roof.floor_s(r.bytes, r.flops) / steps) : "null";
    out += fmt::format("{}{{\"op\": \"{}\", \"shape\": \"{}\", \"calls_per_step\": {:.6g}, \"seconds_per_step\": {:.6g}, "
                       "\"bytes_per_step\": {:.6g}, \"flops_per_step\": {:.6g}, \"floor_seconds_per_step\": {}}}",
                       i ? ", " : "", r.op, r.shape, double(r.calls) / steps, r.seconds / steps, r.bytes / steps,
                       r.flops / steps, floor);
  }
  return out + "]";
}

}  // namespace trainer
