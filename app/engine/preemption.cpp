// PreemptionGuard implementation.
#include "app/engine/preemption.h"

#include <cerrno>
#include <csignal>
#include <stdexcept>
#include <string>
#include <cstring>

namespace trainer {

namespace {

volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_old_term, g_old_int;

void on_signal(int sig) {
  if (g_signal != 0) {
    // Second signal: default action, now.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
}

}  // namespace

PreemptionGuard::PreemptionGuard() {
  g_signal = 0;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTERM, &sa, &g_old_term) != 0 || sigaction(SIGINT, &sa, &g_old_int) != 0)
    throw std::runtime_error(std::string("cannot install the SIGTERM/SIGINT handlers: ") + std::strerror(errno));
}

PreemptionGuard::~PreemptionGuard() {
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
}

int PreemptionGuard::requested() const { return g_signal; }

}  // namespace trainer
