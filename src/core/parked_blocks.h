// File: parked_blocks.h
//
// Heap blocks a runtime keeps after the program let go of them, to hand out again without
// calling its allocator (CPython's free lists): while kept, each is recorded at the free-list
// stack (recorder_park()), and this set remembers the triple it had. A runtime that says when it
// hands one out again (CPython 3.13's reference tracer) moves it itself; for one that does not
// (3.10-3.12), the snapshot writer asks the runtime's in-use test of every kept block and gives
// those in use again back to their triple, so that what a program keeps of them is judged where
// it was made, never hidden among the free lists' bounded stock.
//
// A fixed table (131 072 blocks, 2 MiB, made on the first park) under one spin lock; when full,
// blocks are not parked and stay at their own triple.
#ifndef LEAKSCOPE_CORE_PARKED_BLOCKS_H_
#define LEAKSCOPE_CORE_PARKED_BLOCKS_H_

#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

struct ParkedBlock {
  uintptr_t block;
  TripleId own;     // the triple it had when parked
  TripleId parked;  // the free-list triple it was parked at
};

// The runtime's test of a kept block: true once it is in use again. Called under the set's lock,
// which a block's free takes before the block goes back to its allocator, so its memory is
// there to read.
using ParkedInUse = bool (*)(uintptr_t block);

// parked_blocks_enable() sets the in-use test; parking is off until it is called.
void parked_blocks_enable(ParkedInUse in_use);
bool parked_blocks_enabled();

// parked_blocks_add() remembers a block as parked; false when the set is full or cannot be made.
bool parked_blocks_add(const ParkedBlock& parked);
// parked_blocks_remove() forgets a block that leaves its parked triple (freed, resized, renewed).
void parked_blocks_remove(uintptr_t block);

// parked_blocks_count() is how many blocks the set holds: tracked, yet let go of by the program.
size_t parked_blocks_count();

// parked_blocks_take_in_use() takes out of the set up to `capacity` blocks the runtime uses again,
// into `out`, and returns how many; 0 when the lock is held too long (a later snapshot takes them).
size_t parked_blocks_take_in_use(ParkedBlock* out, size_t capacity);

void parked_blocks_before_fork();
void parked_blocks_after_fork_parent();
void parked_blocks_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_PARKED_BLOCKS_H_
