// File: alloc_table.h
//
// The allocation table: every live heap block, pointer -> (size, triple, birth epoch), 24 bytes
// a block. Sharded by pointer hash (kAllocTableShards shards, each open addressing with linear
// probing and backward-shift deletion under its own spin lock), so threads rarely meet on a lock.
// Shards grow by doubling at 3/4 load in internal memory.
#ifndef LEAKSCOPE_CORE_ALLOC_TABLE_H_
#define LEAKSCOPE_CORE_ALLOC_TABLE_H_

#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

constexpr uint32_t kAllocTableShards = 512;

struct AllocRecord {
  uintptr_t pointer;  // 0 marks an empty slot
  uint64_t size;
  TripleId triple;
  Epoch birth;
};
static_assert(sizeof(AllocRecord) == 24, "a live block costs 24 bytes in the table");

// alloc_table_insert() adds a block. If `record.pointer` was already present (its free was never
// seen), the stale record is returned in *replaced and true is returned, so the caller can count
// it as freed. Thread-safe; not signal-safe.
bool alloc_table_insert(const AllocRecord& record, AllocRecord* replaced);

// alloc_table_remove() takes the block at `pointer` out; false when it is not tracked.
bool alloc_table_remove(uintptr_t pointer, AllocRecord* removed);

// alloc_table_visit() calls visit(records, capacity, context) once per shard while holding that
// shard's lock; empty slots have pointer 0. For the snapshot writer: `visit` must not call out.
void alloc_table_visit(void (*visit)(const AllocRecord* records, uint32_t capacity, void* context),
                       void* context);

// alloc_table_live_blocks() is the number of tracked blocks (racy sum; for tests and overhead).
uint64_t alloc_table_live_blocks();

void alloc_table_before_fork();
void alloc_table_after_fork_parent();
void alloc_table_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_ALLOC_TABLE_H_
