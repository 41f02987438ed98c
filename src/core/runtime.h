// File: runtime.h
//
// The runtime's life cycle (init, start, fork, exit) and the guard every hook passes first.
//
// Order of init (runtime_init, on the first hook call or the library constructor, whichever
// comes first): resolve the real functions, parse LEAKSCOPE_OPTIONS, set up the tables and the
// unwinder, read the module map. Start (runtime_start, from the constructor): open the output,
// write the process frame, install fatal-signal snapshots and fork handlers, start the writer
// thread. Allocations made before start are recorded and appear in the first snapshot.
#ifndef LEAKSCOPE_CORE_RUNTIME_H_
#define LEAKSCOPE_CORE_RUNTIME_H_

#include <stdint.h>

#include <atomic>

#include "core/options.h"
#include "core/stream_format.h"
#include "core/types.h"

// Depth of leakscope frames on this thread's stack. Non-zero means: inside the runtime, so any
// allocation now is the runtime's own or the real allocator's, and is passed straight through.
extern __thread int leakscope_tls_hook_depth __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace leakscope::internal {

enum RuntimeState : int {
  kUninitialized = 0,
  kInitializing = 1,
  kActive = 2,
  kDisabled = 3,  // bad options, unwritable output, after the final snapshot, or enabled=0
};

extern std::atomic<int> g_runtime_state;

// hook_begin_slow() handles every case but "active and not nested": runs init on first use.
bool hook_begin_slow();

// hook_begin() is a hook's guard step: true means record this call, and the caller must call
// hook_end() after the record step. False means pass the call straight through.
LS_ALWAYS_INLINE bool hook_begin() {
  if (LS_LIKELY(leakscope_tls_hook_depth == 0 &&
                g_runtime_state.load(std::memory_order_relaxed) == kActive)) {
    ++leakscope_tls_hook_depth;
    return true;
  }
  return hook_begin_slow();
}

LS_ALWAYS_INLINE void hook_end() { --leakscope_tls_hook_depth; }

// runtime_init() runs the init steps once; other threads wait for it. Thread-safe.
void runtime_init();

// runtime_snapshot_now() writes a snapshot now; 0 on success, -1 when not tracking or on error.
int runtime_snapshot_now();

// runtime_finish() writes the final snapshot and stops tracking: `reason` is kExit (the library
// destructor, after atexit handlers and static destructors) or kUnderscoreExit (_exit, _Exit).
// Idempotent; a no-op in a vfork child, which shares the parent's memory.
void runtime_finish(SnapshotReason reason);

// runtime_mark_teardown() writes the snapshot that marks where teardown begins, once per process:
// `reason` is kTeardown (exit() called, an interpreter began finalizing) or kMainReturned. Reports
// judge the run before it and show what teardown freed apart. Later calls return at once.
// Thread-safe; callable from inside a hook, provided the caller holds none of the runtime's table
// locks.
void runtime_mark_teardown(SnapshotReason reason);

// A word in a language runtime's memory that turns non-zero when that runtime begins its teardown
// (an interpreter that calls its own finalizer directly, so that no hook sees it begin), set by an
// interpreter backend (core/interpreter.h). Every recorded free polls it first, so the teardown
// mark is written before the first byte that teardown frees is counted.
extern std::atomic<const uint64_t*> g_teardown_word;

// runtime_poll_teardown() is that poll: one relaxed load when no interpreter is watched.
LS_ALWAYS_INLINE void runtime_poll_teardown() {
  const uint64_t* word = g_teardown_word.load(std::memory_order_relaxed);
  if (LS_UNLIKELY(word != nullptr) && __atomic_load_n(word, __ATOMIC_RELAXED) != 0) runtime_mark_teardown(SnapshotReason::kTeardown);
}

// runtime_before_exec() writes the snapshot that ends this program image's stream (reason kExec)
// and holds back periodic snapshots, so that it stays the last one; runtime_exec_failed() resumes
// them when exec returned. Thread-safe.
void runtime_before_exec();
void runtime_exec_failed();

// runtime_fatal_signal_snapshot() writes a final snapshot from a fatal-signal handler if it can
// do so without waiting on a lock this thread might hold. Async-signal-aware.
void runtime_fatal_signal_snapshot(int signal_number);

// runtime_disable() prints "leakscope: tracking disabled: <reason>" once and stops tracking.
void runtime_disable(const char* reason);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_RUNTIME_H_
