#include "core/runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "core/accelerator.h"
#include "core/alloc_table.h"
#include "core/device_table.h"
#include "core/deferred_records.h"
#include "core/environment.h"
#include "core/epoch.h"
#include "core/high_water.h"
#include "core/internal_alloc.h"
#include "core/interpreter.h"
#include "core/interval_map.h"
#include "core/leak_check.h"
#include "core/memory_budget.h"
#include "core/module_map.h"
#include "core/parked_blocks.h"
#include "core/recorder.h"
#include "core/sampler.h"
#include "core/snapshot_schedule.h"
#include "core/snapshot_writer.h"
#include "core/spin_lock.h"
#include "core/stack_capture.h"
#include "core/stack_depot.h"
#include "core/sys.h"
#include "core/task_registry.h"
#include "core/thread_list.h"
#include "core/thread_registry.h"
#include "core/triple_registry.h"

__thread int leakscope_tls_hook_depth __attribute__((tls_model("initial-exec"), visibility("hidden"))) = 0;
__thread int leakscope_tls_allocator_depth __attribute__((tls_model("initial-exec"), visibility("hidden"))) = 0;
__thread int leakscope_tls_held_signal __attribute__((tls_model("initial-exec"), visibility("hidden"))) = 0;

namespace leakscope::internal {

std::atomic<int> g_runtime_state{kUninitialized};
constinit std::atomic<const uint64_t*> g_teardown_word{nullptr};

namespace {

// Set in a process's environment by the first traced process, so that exec'd descendants know
// they are not the root and do not reuse its output file.
constexpr const char* kLineageVariable = "LEAKSCOPE_TRACED_ROOT";

Options g_options;
SpinLock g_snapshot_lock;  // one snapshot at a time: writer thread, snapshot_now, exit, signals
bool g_final_written = false;
// Teardown mark: 0 not yet, 1 being written by g_teardown_marker, 2 written.
constexpr int kTeardownWriting = 1;
constexpr int kTeardownWritten = 2;
constexpr uint64_t kTeardownWaitNs = 2'000'000'000;
int g_teardown_phase = 0;
pid_t g_teardown_marker = 0;
constexpr uint64_t kTeardownBegun = 1;  // polled while the mark is written, whatever began teardown
std::atomic<bool> g_exec_pending{false};  // periodic snapshots wait: the exec snapshot must stay last
pid_t g_pid = 0;
char g_output_path[kMaxPathLength];
std::atomic<bool> g_disable_reported{false};

// g_writer_wake becomes 1 when the final snapshot is asked of the writer thread; g_final_state
// goes 0 (none) -> 1 (asked) -> 2 (written or given up) and is waited on. The writer sleeps on
// g_writer_knocks, which whoever asks it for something (knock_writer()) counts up first: a knock
// between its look at what is asked and its sleep is not lost.
int g_writer_wake = 0;
int g_writer_knocks = 0;
int g_final_state = 0;
SnapshotReason g_final_reason = SnapshotReason::kExit;
int g_final_signal = 0;
bool g_writer_running = false;
int g_writer_tid = 0;  // futex word: start_writer_thread() waits for the writer to publish it
int g_leak_check_requested = 0;  // by leak_check_signal: the writer runs it
int g_high_water_requested = 0;  // by high_water_publish(): the writer writes a snapshot
// Set when the main thread ends by pthread_exit(): libc then ends the process when its last thread
// ends, and counts the writer among them, so the writer must end it once the program's are gone
// (g_last_thread_watch, the writer's once the flag is set).
int g_main_thread_exited = 0;
LastThreadWatch g_last_thread_watch;
constexpr uint64_t kLastThreadPollNs = 10'000'000;
sigset_t g_program_signal_mask;  // of the thread that started the writer, which blocks every signal

// How long an exit or a dying thread waits for the writer's final snapshot: long enough for a
// process with a million stacks, short enough that a stuck writer never keeps a crash waiting.
constexpr uint64_t kFinalSnapshotWaitNs = 10ull * 1000 * 1000 * 1000;

void report(const char* prefix, const char* text) {
  char line[2 * kMaxPathLength + 512];
  snprintf(line, sizeof(line), "leakscope: %s%s\n", prefix, text);
  sys::write_stderr(line);
}

// expand_output_path() applies %p, %e and %% to the output pattern. A process that inherited
// tracking (fork child, exec'd descendant) whose pattern has no %p gets ".PID" appended.
bool expand_output_path(const char* pattern, pid_t pid, bool descendant, char* out, size_t size) {
  char exe[kMaxPathLength];
  const char* exe_name = "unknown";
  if (sys::read_link("/proc/self/exe", exe, sizeof(exe)) > 0) {
    const char* slash = strrchr(exe, '/');
    exe_name = slash != nullptr ? slash + 1 : exe;
  }
  size_t used = 0;
  bool has_pid = false;
  for (const char* cursor = pattern; *cursor != '\0'; ++cursor) {
    char piece[kMaxPathLength];
    if (cursor[0] == '%' && cursor[1] == 'p') {
      snprintf(piece, sizeof(piece), "%d", pid);
      has_pid = true;
      ++cursor;
    } else if (cursor[0] == '%' && cursor[1] == 'e') {
      snprintf(piece, sizeof(piece), "%s", exe_name);
      ++cursor;
    } else if (cursor[0] == '%' && cursor[1] == '%') {
      snprintf(piece, sizeof(piece), "%%");
      ++cursor;
    } else {
      piece[0] = *cursor;
      piece[1] = '\0';
    }
    size_t length = strlen(piece);
    if (used + length + 1 > size) return false;
    memcpy(out + used, piece, length + 1);
    used += length;
  }
  if (descendant && !has_pid) {
    int written = snprintf(out + used, size - used, ".%d", pid);
    if (written < 0 || used + static_cast<size_t>(written) >= size) return false;
  }
  return true;
}

// create_stream() creates the stream file at `path`: exclusively, so never through a symlink
// someone planted nor into a file that already exists (another user's, another run's), with mode
// 0600 whatever the umask (stacks, paths, argv and options are the program's secrets), and locked
// for the process's life so that `leakscope run` can tell a stream still being written from a
// stale one. -errno on failure (-EEXIST: the name is taken).
int create_stream(const char* path) {
  int fd = sys::open_file(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND, 0600);
  if (fd < 0) return fd;
  sys::chmod_file(fd, 0600);
  sys::lock_file(fd);
  return fd;
}

// open_output() creates the stream file; a name that is taken gets ".2", ".3"... as an exec'd
// image's does, so two processes with one output name each get a readable file.
int open_output(bool descendant) {
  if (!expand_output_path(g_options.output.text, g_pid, descendant, g_output_path, sizeof(g_output_path))) {
    return -ENAMETOOLONG;
  }
  int fd = create_stream(g_output_path);
  size_t base_length = strlen(g_output_path);
  for (int attempt = 2; fd == -EEXIST && attempt < 1000; ++attempt) {
    snprintf(g_output_path + base_length, sizeof(g_output_path) - base_length, ".%d", attempt);
    fd = create_stream(g_output_path);
  }
  return fd;
}

// own_path() is the path this library was loaded from, as the loader keeps it ("" when unknown).
const char* own_path() {
  static char path[kMaxPathLength];
  if (path[0] == '\0') {
    Dl_info self;
    if (dladdr(reinterpret_cast<void*>(&runtime_init), &self) != 0 && self.dli_fname != nullptr) {
      snprintf(path, sizeof(path), "%s", self.dli_fname);
    }
  }
  return path;
}

// names_this_library() tells whether the LD_PRELOAD entry `entry` (`length` bytes) is libleakscope:
// by its name, or by the path this library was loaded from (a copy under another name).
bool names_this_library(const char* entry, size_t length) {
  const char* name = entry;
  for (size_t i = 0; i < length; ++i) {
    if (entry[i] == '/') name = entry + i + 1;
  }
  size_t name_length = length - static_cast<size_t>(name - entry);
  if (name_length >= 15 && memcmp(name, "libleakscope.so", 15) == 0) return true;
  const char* path = own_path();
  return strlen(path) == length && memcmp(path, entry, length) == 0;
}

// preloaded() tells whether LD_PRELOAD names libleakscope. When it does not, the library was
// loaded by other means: a CUDA driver or NVTX following an injection variable inherited by a
// program that is not to be traced (follow_exec=0).
bool preloaded() {
  const char* preload = getenv("LD_PRELOAD");
  for (const char* cursor = preload; cursor != nullptr && *cursor != '\0';) {
    size_t length = strcspn(cursor, ": ");
    if (length > 0 && names_this_library(cursor, length)) return true;
    cursor += length;
    if (*cursor != '\0') ++cursor;
  }
  return false;
}

// remove_self_from_preload() drops libleakscope from LD_PRELOAD so exec'd programs run untraced.
void remove_self_from_preload() {
  const char* preload = getenv("LD_PRELOAD");
  if (preload == nullptr) return;
  char kept[kMaxPathLength];
  size_t used = 0;
  const char* cursor = preload;
  while (*cursor != '\0') {
    size_t length = strcspn(cursor, ": ");
    bool ours = length > 0 && names_this_library(cursor, length);
    if (length > 0 && !ours && used + length + 2 < sizeof(kept)) {
      if (used > 0) kept[used++] = ':';
      memcpy(kept + used, cursor, length);
      used += length;
    }
    cursor += length;
    if (*cursor != '\0') ++cursor;
  }
  kept[used] = '\0';
  if (used == 0) {
    unsetenv("LD_PRELOAD");
  } else {
    environment_set("LD_PRELOAD", kept, true);
  }
}

bool open_stream(bool descendant, pid_t traced_parent_pid, uint64_t start_monotonic_ns) {
  int fd = open_output(descendant);
  if (fd < 0) {
    char reason[kMaxPathLength + 128];
    snprintf(reason, sizeof(reason), "cannot open output '%s': %s", g_output_path, strerror(-fd));
    runtime_disable(reason);
    return false;
  }
  char options_text[kMaxPathLength + 512];
  options_format(g_options, options_text, sizeof(options_text));
  ProcessDescription process{};
  process.pid = g_pid;
  process.ppid = sys::get_ppid();
  process.traced_parent_pid = traced_parent_pid;
  process.start_realtime_ns = sys::realtime_ns();
  process.start_monotonic_ns = start_monotonic_ns;
  process.interval_ns = g_options.interval;
  process.depth = static_cast<uint32_t>(g_options.depth);
  process.options = options_text;
  int error = snapshot_writer_open(fd, g_output_path, process);
  if (error != 0) {
    char reason[kMaxPathLength + 128];
    snprintf(reason, sizeof(reason), "cannot write output '%s': %s", g_output_path, strerror(-error));
    runtime_disable(reason);
    return false;
  }
  if (g_options.verbose) report("writing ", g_output_path);
  return true;
}

// say_budget_stage() says once on stderr each stage of the memory budget reached (a forked child
// inherits what its parent said).
BudgetStage g_budget_said = BudgetStage::kWithin;

void say_budget_stage() {
  BudgetStage stage = memory_budget_stage();
  if (stage <= g_budget_said) return;
  char text[256], budget[32];
  options_format_size(memory_budget_max(), budget, sizeof(budget));
  if (g_budget_said < BudgetStage::kCoarseStacks) {
    snprintf(text, sizeof(text), "own memory reached 7/8 of max_memory=%s: stacks first seen from now on keep %d frames",
             budget, kBudgetStackDepth);
    report("", text);
  }
  if (stage == BudgetStage::kCountingOnly) {
    snprintf(text, sizeof(text),
             "own memory reached max_memory=%s: allocations at stacks first seen from now on are counted under one site",
             budget);
    report("", text);
  }
  g_budget_said = stage;
}

// write_snapshot_locked() writes one snapshot; the caller holds g_snapshot_lock.
int write_snapshot_locked(SnapshotReason reason, int signal_number, bool final,
                          const LeakCheckResult* leak_check = nullptr) {
  if (g_final_written || g_runtime_state.load(std::memory_order_relaxed) != kActive) return -1;
  // Not from a fatal signal's handler, which may have stopped a thread inside the bookkeeping.
  if (reason != SnapshotReason::kSignal) {
    deferred_records_settle();
    recorder_unpark_in_use();
  } else {
    deferred_records_try_settle();
  }
  HighWaterSeen high_water = high_water_seen();
  int error = snapshot_writer_write(reason, signal_number, final, leak_check);
  if (final) g_final_written = true;
  if (error != 0) {
    char text[kMaxPathLength + 128];
    if (error == -ESTALE) {
      snprintf(text, sizeof(text), "output '%s' was closed or replaced by the program and cannot be reopened",
               g_output_path);
    } else {
      snprintf(text, sizeof(text), "cannot write output '%s': %s", g_output_path, strerror(-error));
    }
    runtime_disable(text);
    return -1;
  }
  high_water_after_snapshot(high_water);
  say_budget_stage();
  return 0;
}

// lock_snapshot_asleep() is how the writer takes the snapshot lock: asleep between tries, as a
// leak check holds it for seconds, and a writer spinning meanwhile would take a core from it.
void lock_snapshot_asleep() {
  while (!g_snapshot_lock.try_lock()) {
    int nap = 0;
    sys::futex_wait(&nap, 0, 1'000'000);
  }
}

// leak_check_locked() runs a leak check and writes the snapshot (`reason`) that carries it; the
// caller holds g_snapshot_lock. Returns the bytes found lost, directly and indirectly, or -1.
int64_t leak_check_locked(LeakCheckTrigger trigger, SnapshotReason reason, const ProgramContext* program) {
  if (g_final_written || g_runtime_state.load(std::memory_order_relaxed) != kActive) return -1;
  if (g_options.sample != 0) {
    static bool said = false;
    if (!said) report("", "leak check skipped: it needs exact mode (sample=0), as every block must be known");
    said = true;
    return -1;
  }
  bool on_writer = g_writer_running && sys::get_tid() == g_writer_tid;
  LeakCheckRequest request{};
  request.trigger = trigger;
  request.stop_signal = g_options.stop_signal;
  request.mmap_roots = g_options.leak_check_mmap == OptionAutomatic::kOn ||
                       (g_options.leak_check_mmap == OptionAutomatic::kAuto && interpreter_found());
  request.program = on_writer ? nullptr : program;
  request.leave_running = on_writer || !g_writer_running ? 0 : g_writer_tid;
  LeakCheckResult result;
  if (!leak_check_run(request, &result)) {
    report("warning: ", "leak check failed: no memory for it, or the stop signal could not be installed");
    return -1;
  }
  if (result.threads_missed != 0) {
    char text[512];
    snprintf(text, sizeof(text),
             "leak check: %u thread%s could not be paused (blocking signal %d, stop_signal, or stuck): blocks only %s may "
             "show as lost",
             result.threads_missed, result.threads_missed == 1 ? "" : "s", g_options.stop_signal,
             result.threads_missed == 1 ? "it holds" : "they hold");
    if (result.threads_scanned_waiting != 0) {
      size_t used = strlen(text);
      snprintf(text + used, sizeof(text) - used, " in registers (%u scanned from where %s in a system call)",
               result.threads_scanned_waiting, result.threads_scanned_waiting == 1 ? "it waits" : "they wait");
    }
    report("warning: ", text);
  }
  int64_t lost = static_cast<int64_t>(result.lost_bytes + result.indirectly_lost_bytes);
  int written = write_snapshot_locked(reason, 0, false, &result);
  leak_check_release(&result);
  return written == 0 ? lost : -1;
}

// write_final_snapshot() writes the final snapshot once and stops tracking; the caller is the
// writer thread, or the thread ending the process when there is no writer.
void write_final_snapshot(SnapshotReason reason, int signal_number) {
  lock_snapshot_asleep();
  write_snapshot_locked(reason, signal_number, true);
  g_snapshot_lock.unlock();
  g_runtime_state.store(kDisabled, std::memory_order_release);
}

// knock_writer() wakes the writer thread to look at what is asked of it. Async-signal-safe.
void knock_writer() {
  __atomic_add_fetch(&g_writer_knocks, 1, __ATOMIC_RELEASE);
  sys::futex_wake(&g_writer_knocks);
}

// end_process_as_last_thread() is what libc does when a process's last thread ends: exit(0), with
// its atexit handlers, static destructors and stdio flush. The writer stands in for the program's
// last thread, so what teardown allocates and frees is recorded as the program's.
[[noreturn]] void end_process_as_last_thread() {
  leakscope_tls_hook_depth = 0;
  // The program's signals reach it again: a SIGPIPE at the last flush, a raise() in an atexit
  // handler, the mask a child started from there inherits.
  pthread_sigmask(SIG_SETMASK, &g_program_signal_mask, nullptr);
  exit(0);
}

void* writer_main(void*) {
  leakscope_tls_hook_depth = 1;  // the writer's own libc calls are never the program's
  __atomic_store_n(&g_writer_tid, sys::get_tid(), __ATOMIC_RELEASE);
  sys::futex_wake(&g_writer_tid);
  prctl(PR_SET_NAME, "leakscope", 0, 0, 0);
  uint64_t interval = g_options.interval;
  uint64_t start = sys::monotonic_ns();
  uint64_t next = start + snapshot_epoch_length(0, interval, 0, g_options.ramp);
  uint64_t last_done = start, last_cost = 0;
  for (;;) {
    int knocks = __atomic_load_n(&g_writer_knocks, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&g_writer_wake, __ATOMIC_ACQUIRE) != 0) break;
    uint64_t waiting = deferred_records_pending();
    if (waiting != 0) deferred_records_settle();
    if (__atomic_exchange_n(&g_leak_check_requested, 0, __ATOMIC_ACQ_REL) != 0) {
      lock_snapshot_asleep();
      leak_check_locked(LeakCheckTrigger::kSignal, SnapshotReason::kOnDemand, nullptr);
      g_snapshot_lock.unlock();
      continue;
    }
    bool main_thread_exited = __atomic_load_n(&g_main_thread_exited, __ATOMIC_ACQUIRE) != 0;
    if (main_thread_exited && g_last_thread_watch.only_left(runtime_own_threads())) end_process_as_last_thread();
    uint64_t now = sys::monotonic_ns();
    // A high-water snapshot waits out the ramp's floor since the last snapshot, and four times
    // the last one's cost, as the ramp's do.
    bool high_water = __atomic_load_n(&g_high_water_requested, __ATOMIC_ACQUIRE) != 0;
    uint64_t high_water_at = last_done + snapshot_epoch_length(0, interval, last_cost, true);
    if (high_water && now >= high_water_at && now < next) {
      __atomic_store_n(&g_high_water_requested, 0, __ATOMIC_RELEASE);
      lock_snapshot_asleep();
      if (!g_exec_pending.load(std::memory_order_acquire)) write_snapshot_locked(SnapshotReason::kHighWater, 0, false);
      g_snapshot_lock.unlock();
      last_done = sys::monotonic_ns();
      last_cost = last_done - now;
      continue;
    }
    if (now < next) {
      uint64_t until = high_water && high_water_at < next ? high_water_at : next;
      // Records arriving fast: look again soon, so that the threads appending them need not knock.
      if (waiting >= kDeferredSettleAt && until - now > kDeferredSettlePollNs) until = now + kDeferredSettlePollNs;
      if (main_thread_exited && until - now > kLastThreadPollNs) until = now + kLastThreadPollNs;
      sys::futex_wait(&g_writer_knocks, knocks, until - now);
      continue;
    }
    __atomic_store_n(&g_high_water_requested, 0, __ATOMIC_RELEASE);  // this one serves it
    lock_snapshot_asleep();
    if (!g_exec_pending.load(std::memory_order_acquire)) write_snapshot_locked(SnapshotReason::kPeriodic, 0, false);
    g_snapshot_lock.unlock();
    uint64_t done = sys::monotonic_ns();
    last_done = done;
    last_cost = done - now;
    uint64_t length = snapshot_epoch_length(done - start, interval, done - now, g_options.ramp);
    next += length;
    if (next <= done) next = done + length;  // a slow snapshot skips ticks rather than bursting
  }
  write_final_snapshot(g_final_reason, g_final_signal);
  __atomic_store_n(&g_final_state, 2, __ATOMIC_RELEASE);
  sys::futex_wake(&g_final_state);
  return nullptr;
}

void start_writer_thread() {
  __atomic_store_n(&g_writer_wake, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&g_final_state, 0, __ATOMIC_RELEASE);
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);  // the program's signals never land on our thread
  g_program_signal_mask = previous;
  pthread_t thread;
  g_writer_running = pthread_create(&thread, nullptr, writer_main, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (g_writer_running) {
    pthread_detach(thread);
    // A leak check must know which thread is ours (it blocks every signal) from the start.
    uint64_t deadline = sys::monotonic_ns() + 1'000'000'000;
    while (__atomic_load_n(&g_writer_tid, __ATOMIC_ACQUIRE) == 0 && sys::monotonic_ns() < deadline) {
      sys::futex_wait(&g_writer_tid, 0, 10'000'000);
    }
  } else {
    report("warning: ", "no writer thread; snapshots only at exit and on request");
  }
}

// finish() has the final snapshot written, once per process, and returns when it is on disk or
// after kFinalSnapshotWaitNs. The writer thread writes it on its own stack, so the caller may be a
// signal handler on a small alternate stack, or a thread holding locks the snapshot never needs;
// without a writer (it could not be started) the caller writes it. Async-signal-safe.
void finish(SnapshotReason reason, int signal_number) {
  if (!g_writer_running || sys::get_tid() == g_writer_tid) {
    if (__atomic_exchange_n(&g_final_state, 1, __ATOMIC_ACQ_REL) == 0 && g_snapshot_lock.try_lock_for(2000)) {
      write_snapshot_locked(reason, signal_number, true);
      g_snapshot_lock.unlock();
      g_runtime_state.store(kDisabled, std::memory_order_release);
    }
    return;
  }
  int expected = 0;
  if (__atomic_compare_exchange_n(&g_final_state, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    g_final_reason = reason;
    g_final_signal = signal_number;
    __atomic_store_n(&g_writer_wake, 1, __ATOMIC_RELEASE);
    knock_writer();
  }
  uint64_t deadline = sys::monotonic_ns() + kFinalSnapshotWaitNs;
  for (uint64_t now = sys::monotonic_ns(); __atomic_load_n(&g_final_state, __ATOMIC_ACQUIRE) != 2 && now < deadline;
       now = sys::monotonic_ns()) {
    sys::futex_wait(&g_final_state, 1, deadline - now);
  }
}

// leave_outer_bookkeeping() ends a bookkeeping span that a Bookkeeping scope cannot express (one
// that begins in one function and ends in another), delivering what was held meanwhile.
void leave_outer_bookkeeping() {
  if (--leakscope_tls_hook_depth == 0 && (leakscope_tls_held_signal | leakscope_tls_held_handlers) != 0) {
    runtime_after_bookkeeping_slow();
  }
}

void fork_prepare() {
  ++leakscope_tls_hook_depth;
  g_snapshot_lock.lock();
  deferred_records_before_fork();
  module_map_before_fork();
  depot_before_fork();
  interpreter_before_fork();
  triple_registry_before_fork();
  task_registry_before_fork();
  thread_registry_before_fork();
  interval_map_before_fork();
  device_table_before_fork();
  alloc_table_before_fork();
  parked_blocks_before_fork();
  internal_alloc_before_fork();
}

void fork_parent() {
  internal_alloc_after_fork_parent();
  parked_blocks_after_fork_parent();
  alloc_table_after_fork_parent();
  interval_map_after_fork_parent();
  device_table_after_fork_parent();
  thread_registry_after_fork_parent();
  task_registry_after_fork_parent();
  triple_registry_after_fork_parent();
  interpreter_after_fork_parent();
  depot_after_fork_parent();
  module_map_after_fork_parent();
  deferred_records_after_fork_parent();
  g_snapshot_lock.unlock();
  leave_outer_bookkeeping();
}

void fork_child() {
  // What was held came to the parent, before the fork.
  leakscope_tls_held_handlers = 0;
  leakscope_tls_held_signal = 0;
  internal_alloc_after_fork_child();
  parked_blocks_after_fork_child();
  alloc_table_after_fork_child();
  interval_map_after_fork_child();
  device_table_after_fork_child();
  thread_registry_after_fork_child();
  task_registry_after_fork_child();
  triple_registry_after_fork_child();
  interpreter_after_fork_child();
  depot_after_fork_child();
  module_map_after_fork_child();
  deferred_records_after_fork_child();
  g_snapshot_lock.reset_after_fork();
  recorder_device_forget_all();  // device memory stays the parent's

  pid_t parent = g_pid;
  g_pid = sys::get_pid();
  __atomic_store_n(&g_teardown_phase, 0, __ATOMIC_RELAXED);
  g_exec_pending.store(false, std::memory_order_relaxed);
  g_writer_running = false;  // the parent's writer thread does not exist here
  __atomic_store_n(&g_main_thread_exited, 0, __ATOMIC_RELAXED);  // the child's main thread forked it
  g_last_thread_watch.after_fork_child();
  __atomic_store_n(&g_high_water_requested, 0, __ATOMIC_RELAXED);
  g_writer_tid = 0;
  if (g_runtime_state.load(std::memory_order_relaxed) == kActive && !g_final_written) {
    snapshot_writer_after_fork_child();
    int parent_fd = snapshot_writer_fd();
    if (parent_fd >= 0) sys::close_file(parent_fd);
    if (!g_options.follow_fork) {
      g_runtime_state.store(kDisabled, std::memory_order_relaxed);
    } else if (open_stream(true, parent, sys::monotonic_ns())) {
      start_writer_thread();
    }
  }
  --leakscope_tls_hook_depth;
}

bool init_tables(char* error, size_t size) {
  if (!depot_init() || !triple_registry_init() || !task_registry_init() || !thread_registry_init()) {
    snprintf(error, size, "out of memory for the runtime's tables");
    return false;
  }
  return true;
}

}  // namespace

void runtime_init(RealFunctionResolver resolve_real_functions) {
  int expected = kUninitialized;
  if (!g_runtime_state.compare_exchange_strong(expected, kInitializing, std::memory_order_acq_rel)) {
    // Another thread is initializing (this one cannot be: it would be inside a hook).
    while (g_runtime_state.load(std::memory_order_acquire) == kInitializing) sched_yield();
    return;
  }
  ++leakscope_tls_hook_depth;
  // Resolved first: the hooks pass every call on to them even when nothing is tracked.
  char error[kMaxPathLength + 256];
  bool ok = resolve_real_functions(error, sizeof(error));
  if (ok && !preloaded()) {
    g_runtime_state.store(kDisabled, std::memory_order_release);
    leave_outer_bookkeeping();
    return;
  }
  options_set_defaults(&g_options);
  ok = ok && options_parse(getenv("LEAKSCOPE_OPTIONS"), &g_options, error, sizeof(error));
  if (ok && g_options.help) sys::write_stderr(options_help_text());
  if (ok && g_options.verbose) {
    char text[kMaxPathLength + 512];
    options_format(g_options, text, sizeof(text));
    report("options: ", text);
  }
  if (ok && !g_options.enabled) {
    g_runtime_state.store(kDisabled, std::memory_order_release);
  } else if (ok && init_tables(error, sizeof(error))) {
    memory_budget_set(g_options.max_memory);
    recorder_set_depth(static_cast<int>(g_options.depth));
    recorder_set_startup_depth(static_cast<int>(g_options.startup_depth));
    sampler_set_interval(g_options.sample);
    recorder_queue_all();
    high_water_init(g_options.high_water);
    stack_capture_init(g_options.unwind);
    module_map_refresh(epoch_current(), true);
    g_runtime_state.store(kActive, std::memory_order_release);
  } else {
    runtime_disable(error);
  }
  leave_outer_bookkeeping();
}

bool runtime_start() {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive) return false;
  Bookkeeping bookkeeping;
  g_pid = sys::get_pid();
  bool descendant = getenv(kLineageVariable) != nullptr;
  if (!descendant) {
    char pid_text[32];
    snprintf(pid_text, sizeof(pid_text), "%d", g_pid);
    environment_set(kLineageVariable, pid_text, true);
  }
  if (!g_options.follow_exec) remove_self_from_preload();
  if (!open_stream(descendant, descendant ? sys::get_ppid() : 0, sys::monotonic_ns())) return false;
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  accelerator_start(g_options);
  start_writer_thread();
  return true;
}

const Options& runtime_options() { return g_options; }

void runtime_after_bookkeeping_slow() {
  if (leakscope_tls_held_handlers != 0) held_signals_deliver();
  int signal_number = leakscope_tls_held_signal;
  if (signal_number == 0) return;
  leakscope_tls_held_signal = 0;
  runtime_fatal_signal_snapshot(signal_number);
  // The handler that held it was leakscope's (the program had none), and left it blocked: end as
  // the default would.
  sys::reset_signal_to_default(signal_number);
  sys::signal_thread(sys::get_tid(), signal_number);
  sys::unblock_signal(signal_number);
}

int runtime_snapshot_now(SnapshotReason reason) {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive) return -1;
  Bookkeeping bookkeeping;
  g_snapshot_lock.lock();
  int result = write_snapshot_locked(reason, 0, false);
  g_snapshot_lock.unlock();
  return result;
}

const char* runtime_stream_path() { return g_output_path; }

int64_t runtime_leak_check() {
  ProgramContext program;
  capture_program_context(&program);
  if (g_runtime_state.load(std::memory_order_acquire) != kActive || sys::get_pid() != g_pid) return -1;
  Bookkeeping bookkeeping;
  g_snapshot_lock.lock();
  int64_t lost = leak_check_locked(LeakCheckTrigger::kRequest, SnapshotReason::kOnDemand, &program);
  g_snapshot_lock.unlock();
  return lost;
}

void runtime_request_high_water_snapshot() {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive || !g_writer_running) return;
  if (__atomic_exchange_n(&g_high_water_requested, 1, __ATOMIC_ACQ_REL) == 0) knock_writer();
}

int runtime_own_threads() { return g_writer_running ? 1 : 0; }

void runtime_thread_exits() {
  // Whatever tracking's state: a writer left running by a runtime disabled since still counts.
  if (!g_writer_running || sys::get_tid() != sys::get_pid()) return;
  Bookkeeping bookkeeping;
  g_last_thread_watch.start();  // now: the program may use up its descriptors before it ends
  __atomic_store_n(&g_main_thread_exited, 1, __ATOMIC_RELEASE);
  knock_writer();
}

void runtime_request_settle() {
  if (g_writer_running) knock_writer();
}

void runtime_request_leak_check() {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive || !g_writer_running) return;
  __atomic_store_n(&g_leak_check_requested, 1, __ATOMIC_RELEASE);
  knock_writer();
}

void runtime_finish(SnapshotReason reason) {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive || sys::get_pid() != g_pid) return;
  Bookkeeping bookkeeping;
  finish(reason, 0);
}

void runtime_mark_teardown(SnapshotReason reason) {
  ProgramContext program;
  capture_program_context(&program);
  if (g_runtime_state.load(std::memory_order_acquire) != kActive || sys::get_pid() != g_pid) return;
  int phase = 0;
  if (!__atomic_compare_exchange_n(&g_teardown_phase, &phase, kTeardownWriting, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    // Another thread saw teardown begin first (a thread finishing its exit while the main thread
    // finalizes, say): what this one frees waits for the mark, so that the mark shows what was
    // live when teardown began, however the two are scheduled. Bounded, never on itself.
    uint64_t deadline = sys::monotonic_ns() + kTeardownWaitNs;
    while (phase == kTeardownWriting && __atomic_load_n(&g_teardown_marker, __ATOMIC_ACQUIRE) != sys::get_tid()) {
      uint64_t now = sys::monotonic_ns();
      if (now >= deadline) break;
      sys::futex_wait(&g_teardown_phase, kTeardownWriting, deadline - now);
      phase = __atomic_load_n(&g_teardown_phase, __ATOMIC_ACQUIRE);
    }
    return;
  }
  __atomic_store_n(&g_teardown_marker, sys::get_tid(), __ATOMIC_RELEASE);
  g_teardown_word.store(&kTeardownBegun, std::memory_order_release);
  {
    Bookkeeping bookkeeping;
    g_snapshot_lock.lock();
    if (!g_options.leak_check || leak_check_locked(LeakCheckTrigger::kTeardown, reason, &program) < 0) {
      write_snapshot_locked(reason, 0, false);
    }
    g_snapshot_lock.unlock();
  }
  // Polls stop only now: until the mark is written, every thread that frees waits for it.
  g_teardown_word.store(nullptr, std::memory_order_relaxed);
  __atomic_store_n(&g_teardown_phase, kTeardownWritten, __ATOMIC_RELEASE);
  sys::futex_wake(&g_teardown_phase);
}

void runtime_before_exec() {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive || sys::get_pid() != g_pid) return;
  Bookkeeping bookkeeping;
  g_snapshot_lock.lock();
  g_exec_pending.store(true, std::memory_order_release);
  write_snapshot_locked(SnapshotReason::kExec, 0, false);
  g_snapshot_lock.unlock();
}

void runtime_exec_failed() { g_exec_pending.store(false, std::memory_order_release); }

void runtime_fatal_signal_snapshot(int signal_number) {
  if (g_runtime_state.load(std::memory_order_acquire) != kActive || sys::get_pid() != g_pid) return;
  ++leakscope_tls_hook_depth;  // not a Bookkeeping scope: a held signal must not be delivered from here
  finish(SnapshotReason::kSignal, signal_number);
  --leakscope_tls_hook_depth;
}

void runtime_note(const char* text) { report("", text); }

void runtime_disable(const char* reason) {
  g_runtime_state.store(kDisabled, std::memory_order_release);
  if (!g_disable_reported.exchange(true)) report("tracking disabled: ", reason);
}

}  // namespace leakscope::internal
