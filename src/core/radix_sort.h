// File: radix_sort.h
//
// A least-significant-digit radix sort (16-bit digits) for code that may not call qsort, which can
// allocate: a leak check sorts a million blocks while the program's threads are paused. Stable;
// O(n) per digit; the caller provides the scratch array and the 65536 counters.
#ifndef LEAKSCOPE_CORE_RADIX_SORT_H_
#define LEAKSCOPE_CORE_RADIX_SORT_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace leakscope::internal {

constexpr size_t kRadixCounters = 1u << 16;

// radix_sort() sorts items[0, count) by key(item), an unsigned value below 2^key_bits.
template <typename Item, typename Key>
void radix_sort(Item* items, Item* scratch, size_t count, size_t* counters, int key_bits, Key key) {
  Item* from = items;
  Item* to = scratch;
  for (int shift = 0; shift < key_bits; shift += 16) {
    memset(counters, 0, kRadixCounters * sizeof(size_t));
    for (size_t i = 0; i < count; ++i) ++counters[(static_cast<uint64_t>(key(from[i])) >> shift) & 0xffff];
    size_t position = 0;
    for (size_t digit = 0; digit < kRadixCounters; ++digit) {
      size_t here = counters[digit];
      counters[digit] = position;
      position += here;
    }
    for (size_t i = 0; i < count; ++i) to[counters[(static_cast<uint64_t>(key(from[i])) >> shift) & 0xffff]++] = from[i];
    Item* swap = from;
    from = to;
    to = swap;
  }
  if (from != items) memcpy(static_cast<void*>(items), from, count * sizeof(Item));
}

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_RADIX_SORT_H_
