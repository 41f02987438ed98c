// File: thread_registry.h
//
// Threads and their per-thread runtime state. Each OS thread that allocates gets a ThreadIdx on
// its first event (never reused, so old attributions stay valid) and a ThreadState reached through
// initial-exec TLS. Names are read by the snapshot writer from /proc (they can change), and once
// more by the thread itself when it exits.
#ifndef LEAKSCOPE_CORE_THREAD_REGISTRY_H_
#define LEAKSCOPE_CORE_THREAD_REGISTRY_H_

#include <stdint.h>
#include <sys/types.h>

#include <atomic>

#include "core/types.h"

namespace leakscope::internal {

struct TripleEntry;

constexpr int kMaxTaskDepth = 16;
constexpr int kTripleCacheSlots = 64;
constexpr uint32_t kMaxThreads = 1u << 16;
constexpr int kThreadNameSize = 16;  // as the kernel's comm

struct TripleCacheSlot {
  uint64_t key;  // domain, task and stack packed; 0 = empty
  TripleEntry* triple;
};

// The runtime's state for one thread; only that thread writes it, except tid in a fork child.
struct ThreadState {
  ThreadIdx idx;
  pid_t tid;
  int task_depth;  // may exceed kMaxTaskDepth; deeper tasks are counted, not stored
  TaskId tasks[kMaxTaskDepth];
  TripleCacheSlot triple_cache[kTripleCacheSlots];
  // The thread's stack, for the frame-pointer walk (read on first use; 0 = not yet).
  uintptr_t stack_begin;
  uintptr_t stack_end;
  // Sampled mode (sampler.h): bytes left before the next recorded allocation, and the generator.
  bool sampling_started;
  int64_t bytes_until_sample;
  uint64_t random_state;
};

// What the registry publishes about a thread for the snapshot writer.
struct ThreadRecord {
  pid_t tid;
  std::atomic<bool> exited;
  char exit_name[kThreadNameSize];  // valid once `exited` is seen with acquire
};

// thread_registry_init() sets up the registry and the exit notification key.
bool thread_registry_init();

// thread_current() returns this thread's state, registering it on first use; nullptr when the
// registry is full or memory is exhausted. Thread-safe; allocation-free w.r.t. malloc; not
// signal-safe on a thread's first call.
ThreadState* thread_current();

// thread_current_task() is the innermost task of `state`, or TaskId::kNone.
inline TaskId thread_current_task(const ThreadState* state) {
  int depth = state->task_depth;
  if (depth <= 0) return TaskId::kNone;
  return state->tasks[(depth <= kMaxTaskDepth ? depth : kMaxTaskDepth) - 1];
}

// thread_record() returns the record of `idx`, or nullptr. thread_end_idx() is one past the
// largest published index.
ThreadRecord* thread_record(ThreadIdx idx);
uint32_t thread_end_idx();

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
