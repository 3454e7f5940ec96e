// A scope's closing action, run from its destructor (a profiler's or a trace's closing mark):
// an error the action throws propagates as the scope's own, except while another error is
// already unwinding through the scope (one thrown after the guard was made). A second exception
// then would end the process with std::terminate and lose the first, so the action's error is
// printed to stderr instead and the first goes on. The destructor that calls close() must be
// noexcept(false).
#pragma once

#include <cstdio>
#include <exception>

namespace trainer {

class UnwindGuard {
 public:
  // what: names the action in the stderr line ("op profiler: closing mark").
  template <class F>
  void close(F&& action, const char* what) const {
    if (std::uncaught_exceptions() == at_start_) {
      action();
      return;
    }
    try {
      action();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s during an error: %s\n", what, e.what());
    } catch (...) {
      std::fprintf(stderr, "%s during an error: an unknown exception\n", what);
    }
  }

 private:
  int at_start_ = std::uncaught_exceptions();
};

}  // namespace trainer
