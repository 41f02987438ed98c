// File: alloc_table.h
//
// The allocation table: every live heap block, pointer -> (size, triple, birth epoch). Sharded by
// pointer hash (kAllocTableShards shards, each open addressing with linear probing and
// backward-shift deletion under its own spin lock), so threads rarely meet on a lock.
//
// A block costs 16 bytes of slot: its figures are packed (see alloc_table.cc) into two words, which
// holds for every block below 4 GiB at a 16-byte aligned address under 2^47, with fewer than 2^26
// triples and 2^27 epochs (four years at 1 s snapshots). Blocks outside that keep a plain 24-byte
// record in a small side table; lookups only go there while it holds something. Shards double at
// 7/8 load, so slots stay 44-88 % used: 18-37 bytes per live block.
#ifndef LEAKSCOPE_CORE_ALLOC_TABLE_H_
#define LEAKSCOPE_CORE_ALLOC_TABLE_H_

#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

constexpr uint32_t kAllocTableShards = 512;

// A block's figures as the recorder and the snapshot writer see them (not as stored).
struct AllocRecord {
  uintptr_t pointer;
  uint64_t size;
  TripleId triple;
  Epoch birth;
};

// alloc_table_insert() adds a block. If `record.pointer` was already present (its free was never
// seen), the stale record is returned in *replaced and true is returned, so the caller can count
// it as freed. Thread-safe; not signal-safe.
bool alloc_table_insert(const AllocRecord& record, AllocRecord* replaced);

// alloc_table_remove() takes the block at `pointer` out; false when it is not tracked.
bool alloc_table_remove(uintptr_t pointer, AllocRecord* removed);

// alloc_table_visit() calls visit(records, count, context) with every live block, a batch at a
// time, while holding the lock of the shard the batch comes from. For the snapshot writer: `visit`
// must not call out.
void alloc_table_visit(void (*visit)(const AllocRecord* records, uint32_t count, void* context), void* context);

// alloc_table_lock_all() takes every shard's lock, so the table stands still (a leak check, fork);
// alloc_table_visit_locked() is alloc_table_visit() under them; alloc_table_unlock_all() ends it.
void alloc_table_lock_all();
void alloc_table_visit_locked(void (*visit)(const AllocRecord* records, uint32_t count, void* context), void* context);
void alloc_table_unlock_all();

// alloc_table_live_blocks() is the number of tracked blocks (racy sum; for tests and overhead).
uint64_t alloc_table_live_blocks();

// alloc_table_slot_bytes() is the memory the table's slots take (racy sum; for tests).
uint64_t alloc_table_slot_bytes();

void alloc_table_before_fork();
void alloc_table_after_fork_parent();
void alloc_table_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_ALLOC_TABLE_H_
