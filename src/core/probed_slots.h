// File: probed_slots.h
//
// ProbedSlots: the open-addressing array the runtime's hash tables are built on (the allocation
// table's shards, the ranges of deferred records, the device blocks), in internal memory.
#ifndef LEAKSCOPE_CORE_PROBED_SLOTS_H_
#define LEAKSCOPE_CORE_PROBED_SLOTS_H_

#include <stdint.h>

#include <utility>

#include "core/internal_alloc.h"

namespace leakscope::internal {

// ProbedSlots: a power-of-two array of slots with linear probing and backward-shift deletion,
// doubled at 7/8 load. Keys says what a slot's key is (a value-initialized key, 0 for a number:
// the slot is empty) and how a key hashes. A home slot is taken from the hash's bits below its top
// 16, which a sharded table uses to pick the shard that owns the slots.
template <typename Slot, typename Keys, uint32_t kInitialCapacity>
struct ProbedSlots {
  using Key = decltype(Keys::key(std::declval<const Slot&>()));

  uint32_t capacity = 0;
  uint32_t count = 0;
  Slot* slots = nullptr;

  uint32_t home_of(uint64_t hash) const { return static_cast<uint32_t>(hash >> 16) & (capacity - 1); }
  uint32_t after(uint32_t slot) const { return (slot + 1) & (capacity - 1); }
  static bool vacant(const Slot& slot) { return Keys::key(slot) == Key{}; }

  // find() returns the slot holding `key`, or the empty slot that ends its probe run.
  uint32_t find(const Key& key, uint64_t hash) const {
    uint32_t slot = home_of(hash);
    while (!(Keys::key(slots[slot]) == key) && !vacant(slots[slot])) slot = after(slot);
    return slot;
  }

  // prefetch() starts loading the slot `hash` leads to before the owner's lock is taken, so that
  // the lock is held for less than a memory load. Read without the lock: the slots may be moving
  // to a larger array, and a prefetch of the old one is harmless.
  void prefetch(uint64_t hash) const {
    const Slot* current = __atomic_load_n(&slots, __ATOMIC_RELAXED);
    uint32_t room = __atomic_load_n(&capacity, __ATOMIC_RELAXED);
    if (current != nullptr) __builtin_prefetch(&current[static_cast<uint32_t>(hash >> 16) & (room - 1)]);
  }

  // make_room() doubles the slots when one more key would fill more than 7/8 of them; false
  // without memory.
  bool make_room() {
    if ((count + 1) * uint64_t{8} <= capacity * uint64_t{7}) return true;
    uint32_t grown_capacity = capacity == 0 ? kInitialCapacity : capacity * 2;
    auto* grown = static_cast<Slot*>(internal_alloc_populated(size_t{grown_capacity} * sizeof(Slot)));
    if (grown == nullptr) return false;
    Slot* old_slots = slots;
    uint32_t old_capacity = capacity;
    slots = grown;
    capacity = grown_capacity;
    for (uint32_t i = 0; i < old_capacity; ++i) {
      if (vacant(old_slots[i])) continue;
      Key key = Keys::key(old_slots[i]);
      slots[find(key, Keys::hash(key))] = old_slots[i];
    }
    if (old_slots != nullptr) internal_free(old_slots, size_t{old_capacity} * sizeof(Slot));
    return true;
  }

  // erase() empties slot `hole`, moving back each later member of its run whose home does not lie
  // cyclically in (hole, next].
  void erase(uint32_t hole) {
    for (uint32_t next = after(hole); !vacant(slots[next]); next = after(next)) {
      uint32_t home = home_of(Keys::hash(Keys::key(slots[next])));
      bool home_after_hole = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
      if (!home_after_hole) {
        slots[hole] = slots[next];
        hole = next;
      }
    }
    slots[hole] = Slot{};
    --count;
  }

  uint64_t bytes() const { return uint64_t{capacity} * sizeof(Slot); }
};

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_PROBED_SLOTS_H_
