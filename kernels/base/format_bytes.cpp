// format_bytes (see format_bytes.h).
#include "kernels/base/format_bytes.h"

#include <cinttypes>
#include <cstdio>

namespace trainer {

namespace {

std::string printed(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  const double b = double(bytes);
  constexpr double KiB = 1024.0, MiB = KiB * 1024, GiB = MiB * 1024, TiB = GiB * 1024;
  if (b >= 1024.0 * TiB) return printed("%.2f PiB", b / (1024.0 * TiB));
  if (b >= TiB) return printed("%.2f TiB", b / TiB);
  if (b >= GiB) return printed("%.2f GiB", b / GiB);
  if (b >= MiB) return printed("%.1f MiB", b / MiB);
  if (b >= KiB) return printed("%.1f KiB", b / KiB);
  char text[32];
  std::snprintf(text, sizeof text, "%" PRId64 " B", bytes);
  return text;
}

}  // namespace trainer
