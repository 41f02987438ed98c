// File: interval_map.h
//
// Live address ranges of the mmap and brk domains. Unlike heap blocks, a range can be unmapped
// in part, so ranges are kept sorted and split: munmap of the middle of a mapping leaves two
// blocks, of one end leaves one shorter block. Mappings are few next to heap blocks, so a sorted
// array under one lock is enough.
#ifndef LEAKSCOPE_CORE_INTERVAL_MAP_H_
#define LEAKSCOPE_CORE_INTERVAL_MAP_H_

#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

struct Interval {
  uintptr_t begin;
  uintptr_t end;  // exclusive
  TripleId triple;  // kReservedRange for address space reserved but not accessible
  Epoch birth;
};

// The triple of a range mapped PROT_NONE: address space reserved (as Go and allocators reserve
// it), not live memory; it belongs to no triple and is counted apart (recorder.h).
constexpr TripleId kReservedRange = static_cast<TripleId>(UINT32_MAX);

// What extracting a range did to one tracked interval.
struct IntervalCut {
  Interval removed;     // the part taken out
  bool whole_block;     // the interval is gone entirely
  bool split;           // a hole was punched: one interval became two
};

// interval_map_insert() adds a range; callers extract [begin, end) first, so ranges never
// overlap. Returns false when memory is exhausted. Thread-safe.
bool interval_map_insert(const Interval& interval);

// interval_map_extract() removes [begin, end) from every tracked range it meets (only those
// `selects` takes, when it is given) and calls on_cut(cut, context) for each, under the map's lock
// (on_cut must not call out). Returns the number of ranges met. Thread-safe.
int interval_map_extract(uintptr_t begin, uintptr_t end, void (*on_cut)(const IntervalCut&, void*),
                         void* context, bool (*selects)(const Interval&) = nullptr);

// interval_map_visit() calls visit(intervals, count, context) under the lock (snapshot writer).
void interval_map_visit(void (*visit)(const Interval* intervals, uint32_t count, void* context),
                        void* context);

void interval_map_before_fork();
void interval_map_after_fork_parent();
void interval_map_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_INTERVAL_MAP_H_
