// File: recorded_calls.h
//
// The shapes of a hook that stands in front of an allocator (hooks.h gives the steps): allocate,
// resize and free, each around the allocator's own call, passed in as `call`. The malloc family
// (heap_hooks.cc), operator new's nothrow forms and delete (new_hooks.cc) and CPython's allocator
// domains (python_allocator_hooks.cc) are recorded through them, so a block is counted the same
// way whichever allocator served it. `kSerialized` marks an allocator whose calls are serialized
// (CPython's, under the interpreter's lock): its blocks in arenas are recorded through the queue
// of deferred_records.h, as every block is while the program has one thread.
#ifndef LEAKSCOPE_INTERPOSE_RECORDED_CALLS_H_
#define LEAKSCOPE_INTERPOSE_RECORDED_CALLS_H_

#include <stddef.h>

#include "core/recorder.h"
#include "core/runtime.h"
#include "interpose/hook_guard.h"

namespace leakscope::internal {

template <bool kSerialized>
LS_ALWAYS_INLINE void record_alloc(void* pointer, size_t size) {
  if constexpr (kSerialized) {
    recorder_alloc_serialized(pointer, size);
  } else {
    recorder_alloc(Domain::kHeap, pointer, size);
  }
}

// allocate_recorded() is the shape of every allocating handler: guard, call, record on success.
// The malloc family's `call` must cope with g_real not being resolved yet (it then serves from
// the bootstrap pool).
// A call left unrecorded by sampled mode still runs inside an AllocatorCall: the memory an
// allocator below leakscope (jemalloc, tcmalloc, mimalloc) maps for itself is its own, not the
// program's mmap or brk, whichever of its calls is sampled.
template <bool kSerialized = false, typename Call>
LS_ALWAYS_INLINE void* allocate_recorded(size_t size, Call&& call) {
  if (recorder_skips_alloc(size)) {
    AllocatorCall inside;
    return call();
  }
  if (!hook_should_record()) return call();
  void* result;
  {
    AllocatorCall inside;
    result = call();
  }
  if (result != nullptr) {
    Bookkeeping record;
    record_alloc<kSerialized>(result, size);
  }
  return result;
}

// resize_recorded() is realloc's shape: the old block's record is taken out before the call (its
// address may be reused as soon as the real realloc returns) and put back if the call fails.
template <bool kSerialized = false, typename Call>
LS_ALWAYS_INLINE void* resize_recorded(void* pointer, size_t size, Call&& call) {
  // Sampled mode: neither the old block nor the new one is recorded.
  if ((pointer == nullptr || recorder_skips_free(pointer)) && recorder_skips_alloc(size)) {
    AllocatorCall inside;
    return call();
  }
  if (!hook_should_record()) return call();
  AllocRecord taken;
  bool tracked = false, queued = false;
  {
    Bookkeeping record;
    queued = pointer != nullptr && (kSerialized || recorder_queues_all()) && recorder_take_queued(pointer);
    tracked = !queued && pointer != nullptr && recorder_take(pointer, &taken);
  }
  void* result;
  {
    AllocatorCall inside;
    result = call();
  }
  bool failed = result == nullptr && size != 0 && pointer != nullptr;
  Bookkeeping record;
  if (queued) recorder_end_take_queued(pointer, !failed);
  if (failed) {
    if (tracked) recorder_restore(taken);
  } else {
    if (tracked) recorder_count_freed(taken);
    if (result != nullptr) record_alloc<kSerialized>(result, size);
  }
  return result;
}

// free_recorded() is free's shape: the record goes first, as the address may be handed out again
// as soon as the allocator has it back.
template <bool kSerialized = false, typename Call>
LS_ALWAYS_INLINE void free_recorded(void* pointer, Call&& call) {
  if (pointer == nullptr || recorder_skips_free(pointer)) {
    AllocatorCall inside;
    return call();
  }
  if (!hook_should_record()) return call();
  {
    Bookkeeping record;
    if constexpr (kSerialized) {
      recorder_free_serialized(pointer);
    } else {
      recorder_free(pointer);
    }
  }
  AllocatorCall inside;
  call();
}

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_INTERPOSE_RECORDED_CALLS_H_
