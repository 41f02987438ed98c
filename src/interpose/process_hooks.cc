// How a process ends, as leakscope sees it:
//   - exit() and a return from main begin teardown: the mark is written before atexit handlers
//     and static destructors run (an exit() that libc makes itself, after main returns, is not
//     interposable, hence the main of ours that __libc_start_main is handed);
//   - the library destructor writes the final snapshot after them (runtime.cc);
//   - _exit and _Exit skip both, so without these hooks a process that leaves by _exit (a forked
//     worker, a crashed-out server) would lose its last epoch.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/runtime.h"
#include "core/types.h"
#include "interpose/real_functions.h"

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
  int status = g_program_main(argc, argv, envp);
  runtime_mark_teardown(SnapshotReason::kMainReturned);
  return status;
}

}  // namespace
}  // namespace leakscope::internal

using leakscope::internal::g_real;

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  leakscope::internal::runtime_finish(leakscope::internal::SnapshotReason::kUnderscoreExit);
  leakscope::internal::exit_now(g_real._exit, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  leakscope::internal::runtime_finish(leakscope::internal::SnapshotReason::kUnderscoreExit);
  leakscope::internal::exit_now(g_real._Exit != nullptr ? g_real._Exit : g_real._exit, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void exit(int status) {
  leakscope::internal::runtime_mark_teardown(leakscope::internal::SnapshotReason::kTeardown);
  auto real = g_real.exit != nullptr ? g_real.exit : reinterpret_cast<void (*)(int)>(dlsym(RTLD_NEXT, "exit"));
  leakscope::internal::exit_now(real, status);
}

extern "C" __attribute__((visibility("default"))) int __libc_start_main(
    int (*main)(int, char**, char**), int argc, char** argv, void (*init)(void), void (*fini)(void),
    void (*rtld_fini)(void), void* stack_end) {
  auto real = g_real.__libc_start_main;
  if (real == nullptr) real = reinterpret_cast<decltype(real)>(dlsym(RTLD_NEXT, "__libc_start_main"));
  leakscope::internal::g_program_main = main;
  return real(leakscope::internal::main_then_mark_teardown, argc, argv, init, fini, rtld_fini, stack_end);
}
