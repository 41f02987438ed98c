// The process's life cycle as leakscope sees it:
//   - the first hook call, or the library constructor, runs the runtime's init; the constructor
//     then starts it (the stream, the writer thread), looks for an interpreter and installs the
//     fatal-signal snapshots;
//   - exit() and a return from main begin teardown: the mark is written before atexit handlers
//     and static destructors run (an exit() that libc makes itself, after main returns, is not
//     interposable, hence the main of ours that __libc_start_main is handed). A mark at exit() or
//     at the interpreter's finalization sees the run's last state; one at main's return comes
//     after main's locals (a Server object, a vector of models) were destroyed, so reports take
//     each site from it or the snapshot before it;
//   - the library destructor writes the final snapshot after them;
//   - a main thread that ends by pthread_exit() leaves the process to its last thread, which libc
//     ends with exit(0); the writer thread would be that thread and never end, so it is told, and
//     ends the process itself when the program's threads are gone;
//   - _exit, _Exit and quick_exit skip both, so without these hooks a process that leaves by them
//     (a forked worker, a crashed-out server) would lose its last epoch.
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/interpreter.h"
#include "core/runtime.h"
#include "core/startup_phase.h"
#include "core/types.h"
#include "interpose/hook_guard.h"
#include "interpose/real_functions.h"
#include "interpose/signal_hooks.h"

namespace leakscope::internal {
namespace {

using MainFunction = int (*)(int, char**, char**);

MainFunction g_program_main = nullptr;

[[noreturn]] void exit_now(void (*real)(int), int status) {
  if (real != nullptr) real(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

// main_then_mark_teardown() runs the program's main; what follows its return is teardown.
int main_then_mark_teardown(int argc, char** argv, char** envp) {
  startup_phase_main_begins();
  int status = g_program_main(argc, argv, envp);
  runtime_mark_teardown(SnapshotReason::kMainReturned);
  return status;
}

__attribute__((constructor)) void start() {
  runtime_init(real_functions_resolve);
  if (!runtime_start()) return;
  Bookkeeping bookkeeping;
  interpreter_attach(nullptr);
  if (runtime_options().leak_check_signal != 0) signal_hooks_install_leak_check(runtime_options().leak_check_signal);
  if (runtime_options().signal_snapshot) signal_hooks_install();
}

__attribute__((destructor)) void stop() { runtime_finish(SnapshotReason::kExit); }

}  // namespace

bool hook_should_record_slow() {
  if ((leakscope_tls_hook_depth | leakscope_tls_allocator_depth) != 0) return false;
  int state = g_runtime_state.load(std::memory_order_acquire);
  if (state == kUninitialized || state == kInitializing) {
    runtime_init(real_functions_resolve);
    state = g_runtime_state.load(std::memory_order_acquire);
  }
  return state == kActive;
}

}  // namespace leakscope::internal

using leakscope::internal::g_real;
using leakscope::internal::SnapshotReason;

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  leakscope::internal::runtime_finish(SnapshotReason::kUnderscoreExit);
  leakscope::internal::exit_now(g_real._exit, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  leakscope::internal::runtime_finish(SnapshotReason::kUnderscoreExit);
  leakscope::internal::exit_now(g_real._Exit != nullptr ? g_real._Exit : g_real._exit, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void quick_exit(int status) noexcept {
  leakscope::internal::runtime_finish(SnapshotReason::kQuickExit);
  auto real = g_real.quick_exit != nullptr ? g_real.quick_exit : g_real._exit;
  leakscope::internal::exit_now(real, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void exit(int status) {
  leakscope::internal::runtime_mark_teardown(SnapshotReason::kTeardown);
  auto real = g_real.exit != nullptr ? g_real.exit : reinterpret_cast<void (*)(int)>(dlsym(RTLD_NEXT, "exit"));
  leakscope::internal::exit_now(real, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void pthread_exit(void* value) {
  leakscope::internal::runtime_thread_exits();
  auto real = g_real.pthread_exit;
  if (real == nullptr) real = reinterpret_cast<decltype(real)>(dlsym(RTLD_NEXT, "pthread_exit"));
  real(value);
  __builtin_unreachable();
}

extern "C" __attribute__((visibility("default"))) int __libc_start_main(
    int (*main)(int, char**, char**), int argc, char** argv, void (*init)(void), void (*fini)(void),
    void (*rtld_fini)(void), void* stack_end) {
  auto real = g_real.__libc_start_main;
  if (real == nullptr) real = reinterpret_cast<decltype(real)>(dlsym(RTLD_NEXT, "__libc_start_main"));
  leakscope::internal::g_program_main = main;
  return real(leakscope::internal::main_then_mark_teardown, argc, argv, init, fini, rtld_fini, stack_end);
}
