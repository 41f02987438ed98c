// File: runtime.h
//
// The runtime's state and operations (init, start, snapshots, teardown, exec, the final snapshot,
// fork), the depths every hook's guard reads, and the scopes that set them. The interposition
// layer (src/interpose/process_hooks.cc) drives the life cycle; nothing here calls into it.
//
// Order of init (runtime_init, on the first hook call or the library constructor, whichever
// comes first): resolve the real functions, parse LEAKSCOPE_OPTIONS, set up the tables and the
// unwinder, read the module map. Start (runtime_start, from the constructor): open the output,
// write the process frame, register the fork handlers, start the writer thread. Allocations made
// before start are recorded and appear in the first snapshot.
#ifndef LEAKSCOPE_CORE_RUNTIME_H_
#define LEAKSCOPE_CORE_RUNTIME_H_

#include <stdint.h>

#include <atomic>

#include "core/held_signals.h"
#include "core/options.h"
#include "core/stream_format.h"
#include "core/types.h"

// Depth of leakscope's own bookkeeping on this thread's stack: a hook's record step, a snapshot,
// init. Non-zero means any allocation now is the runtime's own or one libc makes on its behalf
// (dlsym, pthread_create), and is passed straight through.
extern __thread int leakscope_tls_hook_depth __attribute__((tls_model("initial-exec"), visibility("hidden")));

// Depth of real allocator calls that hooks make on this thread (the real malloc, operator new,
// alloc_cpu). Non-zero means an allocation or mapping now is the allocator's own work for the
// outer hook, which counts it (libstdc++'s operator new calling malloc, c10's alloc_cpu calling
// posix_memalign, jemalloc mapping an arena), and is passed straight through.
extern __thread int leakscope_tls_allocator_depth __attribute__((tls_model("initial-exec"), visibility("hidden")));

// A fatal signal held back on this thread until its bookkeeping ends (signal_hooks.cc); 0 when none.
// The program's own handlers held meanwhile are counted in held_signals.h.
extern __thread int leakscope_tls_held_signal __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace leakscope::internal {

enum RuntimeState : int {
  kUninitialized = 0,
  kInitializing = 1,
  kActive = 2,
  kDisabled = 3,  // bad options, unwritable output, after the final snapshot, or enabled=0
};

extern std::atomic<int> g_runtime_state;

// runtime_after_bookkeeping_slow() delivers the signals that arrived while this thread was in
// leakscope's bookkeeping and were held until it left: the program's handlers first, in order,
// then a fatal signal leakscope handles (signal_hooks.cc).
void runtime_after_bookkeeping_slow();

// Bookkeeping is the scope of leakscope's own work on a thread: a hook's record step, a snapshot,
// a C API call. Leaving the outermost one delivers the signals held meanwhile.
class Bookkeeping {
 public:
  LS_ALWAYS_INLINE Bookkeeping() { ++leakscope_tls_hook_depth; }
  LS_ALWAYS_INLINE ~Bookkeeping() {
    if (--leakscope_tls_hook_depth == 0 && LS_UNLIKELY((leakscope_tls_held_signal | leakscope_tls_held_handlers) != 0)) {
      runtime_after_bookkeeping_slow();
    }
  }
  Bookkeeping(const Bookkeeping&) = delete;
  Bookkeeping& operator=(const Bookkeeping&) = delete;
};

// AllocatorCall is the scope of a hook's call to the real allocator function.
class AllocatorCall {
 public:
  LS_ALWAYS_INLINE AllocatorCall() { ++leakscope_tls_allocator_depth; }
  LS_ALWAYS_INLINE ~AllocatorCall() { --leakscope_tls_allocator_depth; }
  AllocatorCall(const AllocatorCall&) = delete;
  AllocatorCall& operator=(const AllocatorCall&) = delete;
};

// A function that finds the real functions leakscope stands in front of (dlsym(RTLD_NEXT)); on a
// missing required one it writes the reason and returns false.
using RealFunctionResolver = bool (*)(char* error, size_t size);

// runtime_init() runs the init steps once, resolving the real functions first; other threads
// wait for it. Thread-safe.
void runtime_init(RealFunctionResolver resolve_real_functions);

// runtime_start() opens the stream, writes the process frame, registers the fork handlers and
// starts the writer thread; false when tracking is off or could not start. From the library
// constructor, once.
bool runtime_start();

// runtime_options() are the effective options (valid after init).
const Options& runtime_options();

// runtime_snapshot_now() writes a snapshot now, for `reason`; 0 on success, -1 when not tracking
// or on error.
int runtime_snapshot_now(SnapshotReason reason = SnapshotReason::kOnDemand);

// runtime_leak_check() runs a leak check on the calling thread (leakscope_leak_check()) and writes
// the snapshot that carries it; returns the bytes found lost, or -1 when not tracking, in sampled
// mode, or on failure.
int64_t runtime_leak_check();

// runtime_request_leak_check() has the writer thread run one (leak_check_signal). Async-signal-safe.
void runtime_request_leak_check();

// runtime_request_high_water_snapshot() has the writer thread write a snapshot of the high water
// (high_water.h) as soon as the ramp's floor since the last one allows. Async-signal-safe.
void runtime_request_high_water_snapshot();

// runtime_request_settle() has the writer thread apply the queue of deferred records
// (deferred_records.h), which has reached kDeferredKnockAt.
void runtime_request_settle();

// runtime_own_threads() is the number of threads the runtime runs in the process (its writer).
int runtime_own_threads();

// runtime_thread_exits() is told by pthread_exit() before the calling thread ends. When it is the
// main thread, the writer thread watches for the program's other threads to end, and then ends the
// process as libc would have (exit(0)), which counts the writer as one of them and would wait.
void runtime_thread_exits();

// runtime_stream_path() is the path of the stream this process writes (empty before start).
const char* runtime_stream_path();

// runtime_finish() writes the final snapshot and stops tracking: `reason` is kExit (the library
// destructor, after atexit handlers and static destructors) or kUnderscoreExit (_exit, _Exit).
// Idempotent; a no-op in a vfork child, which shares the parent's memory.
void runtime_finish(SnapshotReason reason);

// runtime_mark_teardown() writes the snapshot that marks where teardown begins, once per process:
// `reason` is kTeardown (exit() called, an interpreter began finalizing) or kMainReturned. Reports
// judge the run before it and show what teardown freed apart. A call from another thread while the
// mark is being written waits for it (bounded), so no free is counted before the mark; later calls
// return at once. Thread-safe; callable from inside a hook, provided the caller holds none of the runtime's table
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

// runtime_fatal_signal_snapshot() writes the final snapshot from a fatal-signal handler. The
// writer thread writes it, on its own stack, while the handler waits a bounded time, so neither the
// interrupted stack (a small alternate signal stack) nor a lock the interrupted code holds is
// needed. Async-signal-safe.
void runtime_fatal_signal_snapshot(int signal_number);

// runtime_note() prints "leakscope: <text>" on stderr: something the user should know that does
// not stop tracking.
void runtime_note(const char* text);

// runtime_disable() prints "leakscope: tracking disabled: <reason>" once and stops tracking.
void runtime_disable(const char* reason);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_RUNTIME_H_
