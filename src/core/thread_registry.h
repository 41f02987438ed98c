// File: thread_registry.h
//
// Threads and their per-thread runtime state. Each OS thread that allocates gets a slot on its
// first event: a ThreadState reached through initial-exec TLS and a ThreadRecord the snapshot
// writer reads. Slots are reused: once a thread has exited, the writer has written its exit and
// the kernel no longer knows its tid, the writer releases its slot, and the next new thread takes
// it with its triples, so that a thread-per-request server running for days holds as much as its
// busiest moment needed. What each thread of a slot still holds stays its own: the two never
// share an epoch (the new one starts after the snapshot that released the slot), and the stream's
// birth epochs tell them apart. Names are read by the writer from /proc (they can change), and
// once more by the thread itself when it exits.
#ifndef LEAKSCOPE_CORE_THREAD_REGISTRY_H_
#define LEAKSCOPE_CORE_THREAD_REGISTRY_H_

#include <stdint.h>
#include <sys/types.h>

#include <atomic>

#include "core/types.h"

namespace leakscope::internal {

struct TripleEntry;
struct StartupStackMemoSlot;

constexpr int kMaxTaskDepth = 16;
constexpr int kTripleCacheSlots = 64;
constexpr uint32_t kMaxThreadSlots = 1u << 16;  // threads alive at once
constexpr int kThreadNameSize = 16;             // as the kernel's comm
constexpr int kGivenThreadNameSize = 64;        // leakscope_thread_name(): a runtime's own names run longer

// A block a thread watches its own frees for (recorder_watch_free()), and whether one ended it.
struct FreeWatch {
  uintptr_t block;
  bool freed;
};

struct TripleCacheSlot {
  uint64_t key;  // domain, task and stack packed; 0 = empty
  TripleEntry* triple;
};

// The runtime's state for one thread; only that thread writes it, except tid in a fork child.
struct ThreadState {
  ThreadSlot slot;
  uint32_t incarnation;  // which thread of the process this is, counted from 1; never reused
  pid_t tid;
  int task_depth;  // may exceed kMaxTaskDepth; deeper tasks are counted, not stored
  TaskId tasks[kMaxTaskDepth];
  // The task an annotation library's innermost range on this thread names (NVTX push/pop,
  // accelerator.h); the explicit tasks above come first.
  TaskId annotated_task;
  // The task of the asyncio step running on this thread, plus 1; 0 outside one. The Python
  // package writes it (python_package_api.cc) and it comes before every other task while set.
  uint32_t step_task;
  // While nonzero, what this thread allocates is recorded at the stack of this one marker frame
  // (stream_format.h) instead of its own: a runtime's allocator at work for itself
  // (python_arena_hooks_install()).
  uintptr_t stack_marker;
  TripleCacheSlot triple_cache[kTripleCacheSlots];
  // The triples of this thread's start-up allocations by caller (startup_stack_memo.h); mapped at
  // its first, and handed on with the slot.
  StartupStackMemoSlot* startup_memo;
  // The block this thread's last recorder_alloc() recorded (recorder_last_alloc()); kept here, not
  // in a thread-local, as the leak check scans threads' static TLS for pointers to blocks.
  uintptr_t last_alloc;
  // The block recorder_watch_free() watches this thread's frees for, and whether one ended it.
  FreeWatch free_watch;
  // The thread's stack, for the frame-pointer walk (read on first use; 0 = not yet).
  uintptr_t stack_begin;
  uintptr_t stack_end;
  // Sampled mode (sampler.h): bytes left before the next recorded allocation, and the generator.
  bool sampling_started;
  int64_t bytes_until_sample;
  uint64_t random_state;
};

// What the registry publishes about the thread in a slot for the snapshot writer.
struct ThreadRecord {
  uint32_t incarnation;  // 0 while the slot is free
  pid_t tid;
  std::atomic<bool> exited;
  char exit_name[kThreadNameSize];  // valid once `exited` is seen with acquire
  char given_name[kGivenThreadNameSize];  // leakscope_thread_name(); empty when none (under the lock)
};

// A copy of a slot's record (thread_slot_read()).
struct ThreadRecordCopy {
  uint32_t incarnation;
  pid_t tid;
  bool exited;
  char exit_name[kThreadNameSize];
  char given_name[kGivenThreadNameSize];
};

// thread_registry_init() sets up the registry and the exit notification key.
bool thread_registry_init();

// thread_current() returns this thread's state, registering it on first use; nullptr when every
// slot is taken or memory is exhausted. Thread-safe; allocation-free w.r.t. malloc; not
// signal-safe on a thread's first call.
ThreadState* thread_current();

// thread_current_task() is the task of the asyncio step `state`'s thread runs, else its innermost
// explicit task, else its annotated task, else TaskId::kNone.
inline TaskId thread_current_task(const ThreadState* state) {
  if (state->step_task != 0) return static_cast<TaskId>(state->step_task - 1);
  int depth = state->task_depth;
  if (depth <= 0) return state->annotated_task;
  return state->tasks[(depth <= kMaxTaskDepth ? depth : kMaxTaskDepth) - 1];
}

// thread_slot_end() is one past the largest slot ever used. thread_slot_read() copies the record
// of `slot` as it is now, consistently (under the registry's lock); false when out of range.
uint32_t thread_slot_end();
bool thread_slot_read(ThreadSlot slot, ThreadRecordCopy* copy);

// thread_give_name() sets the name reports show for the thread of `state` (leakscope_thread_name).
void thread_give_name(ThreadState* state, const char* name);

// thread_slot_release() frees `slot` for the next new thread, if it still holds `incarnation`.
// Only for a thread the kernel no longer knows: its state is handed to another thread.
void thread_slot_release(ThreadSlot slot, uint32_t incarnation);

// Fork: the child keeps the forking thread (with its new tid) and marks every other one exited.
void thread_registry_before_fork();
void thread_registry_after_fork_parent();
void thread_registry_after_fork_child();

}  // namespace leakscope::internal

// This thread's state, set on registration (initial-exec: reading it never allocates).
extern __thread leakscope::internal::ThreadState* leakscope_tls_thread
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace leakscope::internal {

// thread_current_if_registered() is this thread's state, or nullptr before its first event.
// Inline and signal-safe, for the hooks' fast paths.
inline ThreadState* thread_current_if_registered() { return leakscope_tls_thread; }

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_THREAD_REGISTRY_H_
