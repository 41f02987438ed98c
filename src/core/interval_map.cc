#include "core/interval_map.h"

#include <string.h>

#include "core/internal_alloc.h"
#include "core/spin_lock.h"

namespace leakscope::internal {
namespace {

SpinLock g_lock;
constinit InternalArray<Interval> g_intervals;  // sorted by begin, non-overlapping

// first_ending_after() is the index of the first interval whose end is above `address`.
uint32_t first_ending_after(uintptr_t address) {
  uint32_t low = 0, high = static_cast<uint32_t>(g_intervals.size());
  while (low < high) {
    uint32_t middle = (low + high) / 2;
    if (g_intervals[middle].end <= address) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

bool insert_at(uint32_t index, const Interval& interval) {
  if (!g_intervals.resize(g_intervals.size() + 1)) return false;
  Interval* items = g_intervals.data();
  memmove(items + index + 1, items + index, (g_intervals.size() - 1 - index) * sizeof(Interval));
  items[index] = interval;
  return true;
}

void erase_at(uint32_t index) {
  Interval* items = g_intervals.data();
  memmove(items + index, items + index + 1, (g_intervals.size() - 1 - index) * sizeof(Interval));
  g_intervals.resize(g_intervals.size() - 1);
}

}  // namespace

bool interval_map_insert(const Interval& interval) {
  SpinLockGuard guard(g_lock);
  return insert_at(first_ending_after(interval.begin), interval);
}

int interval_map_extract(uintptr_t begin, uintptr_t end, void (*on_cut)(const IntervalCut&, void*),
                         void* context, bool (*selects)(const Interval&)) {
  SpinLockGuard guard(g_lock);
  int met = 0;
  uint32_t index = first_ending_after(begin);
  while (index < g_intervals.size() && g_intervals[index].begin < end) {
    Interval current = g_intervals[index];
    if (selects != nullptr && !selects(current)) {
      ++index;
      continue;
    }
    ++met;
    IntervalCut cut;
    cut.removed = current;
    cut.removed.begin = current.begin > begin ? current.begin : begin;
    cut.removed.end = current.end < end ? current.end : end;
    bool keeps_left = current.begin < begin;
    bool keeps_right = current.end > end;
    cut.whole_block = !keeps_left && !keeps_right;
    cut.split = keeps_left && keeps_right;
    if (cut.whole_block) {
      erase_at(index);
    } else if (cut.split) {
      Interval right = current;
      right.begin = end;
      g_intervals[index].end = begin;
      // If memory runs out the right part is dropped; it is then counted as freed.
      if (!insert_at(index + 1, right)) {
        cut.split = false;
        cut.removed.end = current.end;
      }
      index += 2;
    } else if (keeps_left) {
      g_intervals[index].end = begin;
      ++index;
    } else {
      g_intervals[index].begin = end;
      ++index;
    }
    on_cut(cut, context);
  }
  return met;
}

void interval_map_visit(void (*visit)(const Interval*, uint32_t, void*), void* context) {
  SpinLockGuard guard(g_lock);
  visit(g_intervals.data(), static_cast<uint32_t>(g_intervals.size()), context);
}

void interval_map_before_fork() { g_lock.lock(); }
void interval_map_after_fork_parent() { g_lock.unlock(); }
void interval_map_after_fork_child() { g_lock.reset_after_fork(); }

}  // namespace leakscope::internal
