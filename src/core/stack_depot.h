// File: stack_depot.h
//
// The stack depot interns a stack (return addresses, innermost first) to a StackId, so that an
// allocation carries 4 bytes instead of its frames. Stacks live for the life of the process; the
// snapshot writer emits each one once, in id order.
//
// A stack is kept as its innermost kStackHeadFrames frames plus a shared, separately interned tail
// (the outer frames). Distinct stacks mostly differ near the allocation and share their callers: in
// a Python process 600 k distinct native stacks had fewer than 10 k distinct tails past frame 8, so
// storing each tail once cuts the depot to about a third.
#ifndef LEAKSCOPE_CORE_STACK_DEPOT_H_
#define LEAKSCOPE_CORE_STACK_DEPOT_H_

#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

constexpr uint32_t kStackHeadFrames = 8;

struct StackTail {
  StackTail* next;
  uint64_t hash;
  uint32_t id;
  uint32_t depth;
  uintptr_t frames[];  // `depth` return addresses, continuing the head outwards
};

struct StackEntry {
  StackEntry* next;
  uint64_t hash;
  uint32_t id;
  uint32_t depth;           // head and tail together
  const StackTail* tail;    // nullptr when depth <= kStackHeadFrames
  uintptr_t head[];         // min(depth, kStackHeadFrames) return addresses, innermost first

  uintptr_t frame(uint32_t index) const {
    return index < kStackHeadFrames ? head[index] : tail->frames[index - kStackHeadFrames];
  }
};

// depot_init() allocates the depot. Not thread-safe; runtime init calls it once.
bool depot_init();

// depot_intern() returns the id of `frames[0..depth)`, adding it on first sight; StackId::kNone
// for an empty stack or when memory is exhausted. Thread-safe; lock-free when the stack is known.
// Not signal-safe.
StackId depot_intern(const uintptr_t* frames, int depth);

// depot_find() returns the id of `frames[0..depth)` when the depot holds it, else StackId::kNone
// (also, rarely, while another thread grows the table). Lock-free; never allocates.
StackId depot_find(const uintptr_t* frames, int depth);

// depot_get() returns the stack with `id`, or nullptr. Lock-free.
const StackEntry* depot_get(StackId id);

// depot_end_id() is one past the largest published StackId.
uint32_t depot_end_id();

void depot_before_fork();
void depot_after_fork_parent();
void depot_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_STACK_DEPOT_H_
