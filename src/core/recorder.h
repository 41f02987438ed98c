// File: recorder.h
//
// The record step of every hook: turn "this call returned that block" into table entries and
// counters tagged with the (thread, task, stack) triple. Hooks call these inside a Bookkeeping
// scope (runtime.h), so anything the recorder itself triggers is never recorded.
//
// Cost budget of recorder_alloc(): one stack capture (libunwind, ~0.5 us for 20 frames), one
// lock-free depot lookup, a per-thread triple cache hit, two relaxed atomic adds and one insert
// under a shard lock. recorder_free(): one removal under a shard lock and three atomic adds.
#ifndef LEAKSCOPE_CORE_RECORDER_H_
#define LEAKSCOPE_CORE_RECORDER_H_

#include <stddef.h>
#include <stdint.h>

#include "core/alloc_table.h"
#include "core/device_table.h"
#include "core/interval_map.h"
#include "core/runtime.h"
#include "core/sampler.h"
#include "core/thread_registry.h"
#include "core/types.h"

namespace leakscope::internal {

// Sampled mode's fast paths, taken before the hook guard: almost every call in sampled mode ends
// here, with a countdown or one filter read, and never reaches the recorder.
//
// recorder_skips_alloc() is true when this allocation of `size` bytes is not to be recorded (its
// bytes are then counted against the thread's sampling gap); false sends it down the full path.
LS_ALWAYS_INLINE bool recorder_skips_alloc(size_t size) {
  if (!sampler_enabled() || (leakscope_tls_hook_depth | leakscope_tls_allocator_depth) != 0) return false;
  ThreadState* thread = thread_current_if_registered();
  return thread != nullptr && sampler_skip(thread, size);
}

// recorder_skips_free() is true when the block at `pointer` is certainly not recorded.
LS_ALWAYS_INLINE bool recorder_skips_free(const void* pointer) {
  return sampler_enabled() && !sampler_filter_may_contain(reinterpret_cast<uintptr_t>(pointer));
}

// recorder_alloc() records a new block of the heap-like `domain` at `pointer`; recorder_free()
// ends a heap block's record. While the program has had one thread their records go through the
// queue of deferred_records.h, but for blocks of 64 KiB or more.
void recorder_alloc(Domain domain, void* pointer, size_t size);

// The same for an allocator whose calls are serialized (CPython's object allocator, under the
// interpreter's lock; deferred_records.h): a block inside one of its arenas is recorded through
// the queue, applied by the writer; any other at once (or queued too while the program has had one
// thread, as recorder_alloc() queues it then). recorder_take_queued() queues the take of a
// block being resized when it is in an arena (false: use recorder_take()), and
// recorder_end_take_queued() says how the resize went.
void recorder_alloc_serialized(void* pointer, size_t size);
void recorder_free_serialized(void* pointer);
bool recorder_take_queued(void* pointer);
void recorder_end_take_queued(void* pointer, bool ended);

// recorder_queue_serialized() makes the queue the serialized functions use (false without
// memory: they record at once); deferred_records_settle() applies it.
bool recorder_queue_serialized();

// recorder_queue_all() has every heap record queued while the program has one thread
// (deferred_records_queue_all()), in exact mode; recorder_queues_all() tells whether they still
// are, and resizes then queue their takes too.
void recorder_queue_all();
bool recorder_queues_all();

// recorder_last_alloc() is the block the calling thread's last recorder_alloc() recorded (0: none).
uintptr_t recorder_last_alloc();

// recorder_renew() records the heap block at `pointer`, when it is tracked, as made anew by the
// caller: its record is counted freed and another made with its size, this stack and this epoch.
// For an object a runtime hands out again from a free list of its own, without its allocator.
void recorder_renew(void* pointer);

// recorder_park() records the heap block at `pointer`, when it is tracked, as kept by its runtime
// on a free list after the program let go of it: counted freed at its stack and made anew at the
// free-list marker stack (kFreeListFrame, stream_format.h), this thread's, born now, with the
// triple it had remembered (parked_blocks.h). Nothing changes for a block already there.
void recorder_park(void* pointer);

// recorder_unpark_in_use() gives the parked blocks their runtime has handed out again unseen back
// to the triples they had, counted made anew now. For the snapshot writer, before an epoch closes;
// not signal-safe.
void recorder_unpark_in_use();

// A watch on one block of the calling thread's frees (FreeWatch, thread_registry.h):
// recorder_watch_free() starts one and returns the watch it replaces, for recorder_end_watch() to
// put back (watches nest); recorder_watched_freed() tells whether a recorder_free() of the thread
// ended the block since.
FreeWatch recorder_watch_free(uintptr_t block);
bool recorder_watched_freed();
void recorder_end_watch(FreeWatch replaced);

// Every function below that ends blocks first polls for the start of teardown
// (runtime_poll_teardown()), so the teardown mark precedes what teardown frees.

// recorder_free() records the end of the block at `pointer`, if it is tracked.
void recorder_free(void* pointer);

// recorder_take() removes the block at `pointer` without counting it as freed yet, for realloc:
// on success the caller calls recorder_count_freed(), on failure recorder_restore().
bool recorder_take(void* pointer, AllocRecord* taken);
void recorder_count_freed(const AllocRecord& taken);
void recorder_restore(const AllocRecord& taken);

// recorder_map() records a new range of the mmap or brk domain; any tracked range it overlaps is
// unmapped first (MAP_FIXED replaces mappings, as Go commits what it reserved). A `reserved` range
// (mapped PROT_NONE) is address space, not memory: it is counted apart (recorder_reserved_bytes()).
void recorder_map(Domain domain, uintptr_t begin, size_t length, bool reserved = false);

// recorder_protect() records an mprotect of [begin, begin + length): made accessible, the reserved
// parts become mappings of the caller's; made PROT_NONE, the mapped parts go back to reserved.
void recorder_protect(uintptr_t begin, size_t length, bool accessible);

// recorder_reserved_bytes() is the address space reserved now (PROT_NONE, never made accessible).
uint64_t recorder_reserved_bytes();

// recorder_unmap() records that [begin, begin + length) is gone, splitting ranges as needed.
void recorder_unmap(uintptr_t begin, size_t length);

// For mremap: the ranges under [begin, begin + length) are taken out before the call and either
// counted freed (success) or put back (failure), so no other thread's new mapping at the same
// address is ever mistaken for ours.
struct TakenRange {
  static constexpr int kCapacity = 32;
  int count;
  IntervalCut cuts[kCapacity];
};
void recorder_take_range(uintptr_t begin, size_t length, TakenRange* taken);
void recorder_count_range_freed(const TakenRange& taken);
void recorder_restore_range(const TakenRange& taken);

// The device domains (device_table.h): a device block is counted like a heap block, on the
// triple of the caller's stack, with its births and lifetimes.
//
// recorder_device_alloc() records `block` (key, kind, domain, size, begin, context, device given;
// triple and birth filled here). A reserved range (DeviceKey::kReservedRange) is kept in no triple.
// `driver_frames`, when given, says how many of the captured stack's innermost frames are the
// driver's own (a callback's way in), which the stack leaves out: it then starts at the call the
// program made.
using DriverFrames = int (*)(const uintptr_t* frames, int depth);
void recorder_device_alloc(DeviceBlock block, DriverFrames driver_frames = nullptr);

// recorder_device_free() records the end of the block of `kind` at `key`, if it is tracked.
void recorder_device_free(DeviceKey kind, uint64_t key);

// recorder_device_release() ends the VMM allocation `handle`, or, while it is mapped, when it is
// unmapped (recorder_device_unmap(), which forgets the mappings in [begin, begin + size)).
void recorder_device_release(uint64_t handle);
void recorder_device_unmap(uintptr_t begin, uint64_t size);

// recorder_device_free_context() ends every block of the driver's destroyed `context`.
void recorder_device_free_context(uint64_t context);

// recorder_device_forget_all() ends every device block, in a fork child: device memory is the
// parent's, the child holds none of it. Call with the tables usable (after the fork handlers).
void recorder_device_forget_all();

// recorder_set_depth() sets the frames kept per stack (1..kMaxStackDepth).
void recorder_set_depth(int depth);

// recorder_set_startup_depth() sets the innermost frames kept of a stack made during start-up
// (startup_phase.h, imports of interpreted code included), at most the depth less one (the
// marker's frame); 0 keeps such stacks whole. Call after recorder_set_depth().
void recorder_set_startup_depth(int depth);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_RECORDER_H_
