// _exit skips atexit handlers and library destructors, so without this hook a process that leaves
// by _exit (a forked worker, a crashed-out server) would lose its last epoch.
#include <sys/syscall.h>
#include <unistd.h>

#include "core/runtime.h"
#include "core/types.h"
#include "interpose/real_functions.h"

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  leakscope::internal::runtime_finish();
  if (leakscope::internal::g_real._exit != nullptr) leakscope::internal::g_real._exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
