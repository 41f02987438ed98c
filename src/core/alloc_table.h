// File: alloc_table.h
//
// The allocation table: every live heap block, pointer -> (size, triple, birth epoch). A block at a
// 16-byte aligned address (every block glibc's malloc and pymalloc hand out) is kept with the
// others of its granule, the 1 KiB of address space it starts in: a bitmap of the 64 places a
// block can start there, and a 16-byte record per block in address order. Granules are found by
// key in kAllocTableShards shards (each open addressing with linear probing and backward-shift
// deletion under its own spin lock), so threads rarely meet on a lock, and blocks allocated one
// after another share a granule and its cache lines. Blocks at other addresses keep a plain
// 24-byte record in a small side table; lookups only go there while it holds something.
//
// A block costs its 16-byte record, kept in its granule's 64-byte entry while the granule holds
// three or fewer, else in room beside it that doubles as the granule fills (and halves as it
// empties), plus a share of the entry in shards that double at 7/8 load (see docs/RUNTIME.md for
// the figures measured).
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

// alloc_table_prefetch() starts loading the entry a block at `pointer` would be kept in, for one
// who applies records a batch at a time (deferred_records.h). Takes no lock; harmless when the
// table moves meanwhile.
void alloc_table_prefetch(uintptr_t pointer);

// alloc_table_remove() takes the block at `pointer` out; false when it is not tracked.
bool alloc_table_remove(uintptr_t pointer, AllocRecord* removed);

// alloc_table_reassign() gives the block at `pointer` another triple and a new birth in place, its
// size kept, unless it has that triple already; its record as it was goes to *before. False when
// it is not tracked, or when `only_from` is given and the block has another triple (left as it is).
bool alloc_table_reassign(uintptr_t pointer, TripleId triple, Epoch birth, AllocRecord* before,
                          TripleId only_from = TripleId::kNone);

// alloc_table_visit() calls visit(records, count, context) with every live block, a batch at a
// time, while holding the lock of the shard the batch comes from. For the snapshot writer: `visit`
// must not call out. `between`, if given, is called between shards, with no lock held.
void alloc_table_visit(void (*visit)(const AllocRecord* records, uint32_t count, void* context), void* context,
                       void (*between)() = nullptr);

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
