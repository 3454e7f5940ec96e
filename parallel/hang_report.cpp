// HangReporter (see hang_report.h).
#include "parallel/hang_report.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>

#include "parallel/launcher_env.h"

namespace trainer {

namespace {

constexpr int kAskTag = 1;
constexpr int kAnswerTag = 2;
constexpr int kMaxLine = 512;

volatile std::sig_atomic_t g_usr1 = 0;

void on_usr1(int) { g_usr1 = 1; }

}  // namespace

double journal_clock_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

HangReporter::HangReporter(double grace_s) : grace_s_(grace_s) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  signal_thread_ = std::thread([this] { watch_signal(); });
}

HangReporter::~HangReporter() {
  stop_ = true;
  signal_thread_.join();
  signal(SIGUSR1, SIG_DFL);
  for (MPI_Request& r : answers_) MPI_Request_free(&r);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void HangReporter::set_label(const std::string& label) {
  std::lock_guard<std::mutex> lock(label_mutex_);
  label_ = label;
}

std::string HangReporter::label() const {
  std::lock_guard<std::mutex> lock(label_mutex_);
  return label_.empty() ? "rank " + std::to_string(rank_) : label_;
}

void HangReporter::print_journal(const char* why) const {
  const std::string text = journal_.report(rank_, journal_clock_s());
  std::fprintf(stderr, "%s (%s, pid %d%s):\n%s", why, label().c_str(), int(getpid()),
               slurm_tag(launcher_env()).c_str(), text.c_str());
  std::fflush(stderr);
}

void HangReporter::watch_signal() {
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (g_usr1) {
      g_usr1 = 0;
      print_journal("report on SIGUSR1; training goes on");
    }
  }
}

void HangReporter::poll() {
  if (size_ == 1) return;
  int asked = 0;
  MPI_Status status;
  MPI_Iprobe(0, kAskTag, comm_, &asked, &status);
  if (!asked) return;
  int dummy = 0;
  MPI_Recv(&dummy, 1, MPI_INT, 0, kAskTag, comm_, MPI_STATUS_IGNORE);
  print_journal("report requested by rank 0, whose wait timed out");
  answer_lines_.push_back(std::make_unique<char[]>(kMaxLine));
  char* line = answer_lines_.back().get();
  std::snprintf(line, kMaxLine, "%s: %s", label().c_str(), journal_.summary(journal_clock_s()).c_str());
  answers_.emplace_back();
  MPI_Isend(line, kMaxLine, MPI_CHAR, 0, kAnswerTag, comm_, &answers_.back());
}

void HangReporter::timed_out(const std::string& what, double timeout_s) {
  std::fprintf(stderr,
               "fatal (rank %d%s): %s did not complete within %.0f s (parallel.timeout_s); another rank has probably "
               "died or hung; aborting the job\n",
               rank_, slurm_tag(launcher_env()).c_str(), what.c_str(), timeout_s);
  if (answer_lines_.empty()) print_journal("hang report");  // else printed when rank 0 asked
  // Rank 0 collects for grace_s after its own wait times out, which may come up to a timeout
  // later than this rank's (its wait may have begun later); the others leave it that long
  // before they abort the job themselves (an abort wakes stopped ranks, which would then
  // answer as if they had never hung).
  const double linger_s = rank_ == 0 ? grace_s_ : timeout_s + 2 * grace_s_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(linger_s);
  if (size_ > 1 && rank_ != 0) {
    char line[kMaxLine];
    std::snprintf(line, sizeof line, "%s: %s", label().c_str(), journal_.summary(journal_clock_s()).c_str());
    MPI_Request r;
    MPI_Isend(line, kMaxLine, MPI_CHAR, 0, kAnswerTag, comm_, &r);
    int done = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      MPI_Test(&r, &done, MPI_STATUS_IGNORE);
      std::this_thread::sleep_for(std::chrono::milliseconds(done ? 50 : 5));
    }
  } else if (size_ > 1) {
    int dummy = 0;
    std::vector<MPI_Request> asks(size_t(size_ - 1));
    for (int r = 1; r < size_; ++r) MPI_Isend(&dummy, 1, MPI_INT, r, kAskTag, comm_, &asks[size_t(r - 1)]);
    std::map<int, std::string> lines;
    while (int(lines.size()) < size_ - 1 && std::chrono::steady_clock::now() < deadline) {
      int got = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, comm_, &got, &st);
      if (!got) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      char line[kMaxLine];
      MPI_Recv(line, kMaxLine, MPI_CHAR, st.MPI_SOURCE, kAnswerTag, comm_, MPI_STATUS_IGNORE);
      line[kMaxLine - 1] = '\0';
      lines[st.MPI_SOURCE] = line;
    }
    std::string out = "hang summary (rank 0, after " + std::to_string(int(timeout_s)) + " s): who waits for whom\n";
    out += "  " + label() + ": " + journal_.summary(journal_clock_s()) + "\n";
    std::string silent;
    for (int r = 1; r < size_; ++r) {
      auto it = lines.find(r);
      if (it != lines.end()) {
        out += "  " + it->second + "\n";
      } else {
        out += "  rank " + std::to_string(r) + ": no answer within " + std::to_string(int(grace_s_ + 0.5)) +
               " s (dead, stopped, or busy outside communication)\n";
        silent += (silent.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    if (!silent.empty()) out += "  look first at rank" + std::string(silent.find(',') == std::string::npos ? " " : "s ") + silent + "\n";
    std::fputs(out.c_str(), stderr);
    std::fflush(stderr);
  }
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();
}

}  // namespace trainer
