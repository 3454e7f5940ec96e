// Byte-pair merging by rank (see bpe.h).
#include "data/bpe.h"

#include <algorithm>
#include <stdexcept>

namespace trainer {

void MergeTable::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  size_ = 0;
  for (const Slot& s : old)
    if (s.rule.merged >= 0) add(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xFFFFFFFFu), s.rule);
}

void MergeTable::add(int32_t left, int32_t right, MergeRule rule) {
  if (rule.merged < 0) throw std::logic_error("MergeTable::add: a merged id is a token id (>= 0)");
  if (2 * (size_ + 1) > slots_.size()) grow();
  const uint64_t k = key(left, right);
  for (size_t i = slot_of(k);; i = (i + 1) & (slots_.size() - 1)) {
    Slot& s = slots_[i];
    if (s.rule.merged < 0) {
      s.key = k;
      s.rule = rule;
      ++size_;
      return;
    }
    if (s.key == k) {
      s.rule = rule;
      return;
    }
  }
}

namespace {

using Candidate = BpeScratch::Candidate;

// Min-heap on (rank, pos) through std::push_heap with an inverted comparison.
bool heap_after(const Candidate& a, const Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

}  // namespace

void bpe_merge(const MergeTable& merges, std::vector<int32_t>* symbols, BpeScratch* scratch) {
  std::vector<int32_t>& sym = *symbols;  // sym[i] < 0: merged into its left neighbour
  const int32_t n = static_cast<int32_t>(sym.size());
  if (n < 2) return;
  auto& prev = scratch->prev;
  auto& next = scratch->next;
  auto& heap = scratch->heap;
  auto& batch = scratch->batch;
  prev.resize(static_cast<size_t>(n));
  next.resize(static_cast<size_t>(n));
  heap.clear();
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  auto push = [&](int32_t pos, int32_t right_pos) {
    const MergeRule* rule = merges.find(sym[pos], sym[right_pos]);
    if (!rule) return;
    heap.push_back({rule->rank, pos, sym[pos], sym[right_pos], rule->merged});
    std::push_heap(heap.begin(), heap.end(), heap_after);
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i, i + 1);

  while (!heap.empty()) {
    const int32_t rank = heap.front().rank;
    batch.clear();
    while (!heap.empty() && heap.front().rank == rank) {
      std::pop_heap(heap.begin(), heap.end(), heap_after);
      batch.push_back(heap.back());
      heap.pop_back();
    }
    // Pairs created below never have this rank (the merged symbol is longer than either
    // half), so the batch holds every occurrence of the pair, in position order.
    for (const Candidate& c : batch) {
      if (sym[c.pos] != c.left) continue;  // stale: this symbol was merged since
      const int32_t r = next[c.pos];
      if (r < 0 || sym[r] != c.right) continue;
      sym[c.pos] = c.merged;
      sym[r] = -1;
      next[c.pos] = next[r];
      if (next[r] >= 0) prev[next[r]] = c.pos;
      if (prev[c.pos] >= 0) push(prev[c.pos], c.pos);
      if (next[c.pos] >= 0) push(c.pos, next[c.pos]);
    }
  }
  int32_t out = 0;
  for (int32_t i = 0; i >= 0; i = next[i]) sym[out++] = sym[i];
  sym.resize(static_cast<size_t>(out));
}

}  // namespace trainer
