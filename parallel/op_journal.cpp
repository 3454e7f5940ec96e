// OpJournal (see op_journal.h).
#include "parallel/op_journal.h"

#include <cstdio>

namespace trainer {

namespace {

std::string size_text(size_t bytes) {
  char buf[32];
  if (bytes >= (size_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%zu bytes", bytes);
  return buf;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

}  // namespace

std::string describe_entry(const JournalEntry& e) {
  std::string peer;
  if (e.peer_world >= 0) peer = (e.op == "send" ? " to rank " : " from rank ") + std::to_string(e.peer_world);
  return e.op + " #" + std::to_string(e.seq) + " on the " + e.group + " group" + peer + " (" + size_text(e.bytes) + ")";
}

uint64_t OpJournal::begin(const JournalEntry& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t h = next_++;
  open_[h] = entry;
  return h;
}

void OpJournal::set_waiting(uint64_t handle, bool waiting) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = open_.find(handle);
  if (it != open_.end()) it->second.waiting = waiting;
}

void OpJournal::end(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = open_.find(handle);
  if (it == open_.end()) return;
  JournalEntry& last = last_done_[it->second.group];
  if (it->second.seq >= last.seq) last = it->second;
  open_.erase(it);
}

std::string OpJournal::report(int rank, double now_s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string who = "rank " + std::to_string(rank) + ": ";
  std::string out;
  for (const auto& [h, e] : open_)
    if (e.waiting) out += who + "waiting " + seconds_text(now_s - e.start_s) + " in " + describe_entry(e) + "\n";
  if (out.empty()) out = who + "not waiting on communication (computing, or between operations)\n";
  for (const auto& [h, e] : open_)
    if (!e.waiting)
      out += who + "also in flight: " + describe_entry(e) + ", started " + seconds_text(now_s - e.start_s) + " ago\n";
  std::string done;
  for (const auto& [group, e] : last_done_) done += (done.empty() ? "" : ", ") + group + " " + e.op + " #" + std::to_string(e.seq);
  out += who + "last completed: " + (done.empty() ? std::string("nothing yet") : done) + "\n";
  return out;
}

std::string OpJournal::summary(double now_s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [h, e] : open_)
    if (e.waiting) return "waits " + seconds_text(now_s - e.start_s) + " in " + describe_entry(e);
  if (open_.empty()) return "no operation in flight (computing, or between steps)";
  return "not waiting; in flight: " + describe_entry(open_.begin()->second);
}

}  // namespace trainer
