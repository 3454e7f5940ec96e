// check_failed: the throwing half of TRAINER_CHECK (see check.h).
#include "kernels/base/check.h"

#include <sstream>
#include <stdexcept>

namespace trainer {

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  std::ostringstream s;
  s << "internal error at " << file << ":" << line << ": check `" << expr << "` failed";
  if (!msg.empty()) s << ": " << msg;
  throw std::logic_error(s.str());
}

}  // namespace trainer
