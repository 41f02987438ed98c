// File: triple_registry.h
//
// Sites (domain, stack) and triples (domain, thread, task, stack), interned to dense ids, with
// the counters the snapshots are made of. Counters are cumulative and only grow, so the writer
// emits differences without ever resetting anything a hook might be updating.
//
//   live bytes  = alloc_bytes - free_bytes
//   live blocks = alloc_count - free_count + split_count
// free_count counts blocks that ended; a partial munmap frees bytes without ending the block,
// and one that punches a hole in the middle makes two blocks of one (split_count).
#ifndef LEAKSCOPE_CORE_TRIPLE_REGISTRY_H_
#define LEAKSCOPE_CORE_TRIPLE_REGISTRY_H_

#include <stdint.h>

#include <atomic>

#include "core/types.h"

namespace leakscope::internal {

struct SiteEntry {
  SiteEntry* next;
  uint64_t hash;
  uint32_t id;
  Domain domain;
  StackId stack;
};

struct TripleEntry {
  TripleEntry* next;
  uint64_t hash;
  uint32_t id;
  ThreadSlot thread;
  TaskId task;
  // A runtime's free-list triple, whose blocks the parked set (parked_blocks.h) remembers: a block
  // leaving it is forgotten there.
  std::atomic<bool> holds_parked_blocks;
  SiteEntry* site;
  std::atomic<uint64_t> alloc_count;
  std::atomic<uint64_t> alloc_bytes;
  std::atomic<uint64_t> free_count;
  std::atomic<uint64_t> free_bytes;
  std::atomic<uint64_t> split_count;
  // Kept per triple, not per site: a site is shared by every thread, a triple mostly written by
  // one, so frees on different cores do not contend for one cache line. Bytes freed since the last
  // snapshot: the writer takes them with an atomic exchange and sums them per site.
  std::atomic<uint64_t> freed_bytes_by_lifetime[kLifetimeBuckets];
  // Blocks freed in the epoch they were born in (temporary allocations), since the last snapshot;
  // taken by exchange like the lifetimes.
  std::atomic<uint64_t> temporary_blocks;
};

bool triple_registry_init();

// triple_intern() returns the triple for the key, creating it and its site on first sight;
// nullptr when memory is exhausted. Thread-safe; lock-free for known triples.
TripleEntry* triple_intern(Domain domain, ThreadSlot thread, TaskId task, StackId stack);

// triple_find() returns the triple for the key if it exists, else nullptr (also, rarely, while
// another thread grows the table). Lock-free; never allocates.
TripleEntry* triple_find(Domain domain, ThreadSlot thread, TaskId task, StackId stack);

const TripleEntry* triple_get(TripleId id);
TripleEntry* triple_get_mutable(TripleId id);
uint32_t triple_end_id();
const SiteEntry* site_get(SiteId id);
uint32_t site_end_id();

// lifetime_bucket() maps a lifetime in whole epochs to its log2 bucket (see types.h).
inline int lifetime_bucket(uint32_t epochs) {
  if (epochs == 0) return 0;
  int bucket = 32 - __builtin_clz(epochs);
  return bucket < kLifetimeBuckets ? bucket : kLifetimeBuckets - 1;
}

// triple_record_free() counts `bytes` of `blocks` blocks born in `birth` as freed in `now`
// (blocks is 0 for a partial unmap, which ends no block; more than 1 for a sampled block, which
// stands for several). Thread-safe, lock-free, signal-safe.
inline void triple_record_free(TripleEntry* triple, uint64_t bytes, uint64_t blocks, Epoch birth, Epoch now) {
  if (blocks != 0) triple->free_count.fetch_add(blocks, std::memory_order_relaxed);
  triple->free_bytes.fetch_add(bytes, std::memory_order_relaxed);
  uint32_t lifetime = raw(now) >= raw(birth) ? raw(now) - raw(birth) : 0;
  triple->freed_bytes_by_lifetime[lifetime_bucket(lifetime)].fetch_add(bytes, std::memory_order_relaxed);
  if (lifetime == 0 && blocks != 0) triple->temporary_blocks.fetch_add(blocks, std::memory_order_relaxed);
}

inline void triple_record_alloc(TripleEntry* triple, uint64_t bytes, uint64_t blocks) {
  triple->alloc_count.fetch_add(blocks, std::memory_order_relaxed);
  triple->alloc_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// triple_live_bytes_of_domain() sums live bytes over every triple of `domain` (for the C API).
int64_t triple_live_bytes_of_domain(Domain domain);

void triple_registry_before_fork();
void triple_registry_after_fork_parent();
void triple_registry_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_TRIPLE_REGISTRY_H_
