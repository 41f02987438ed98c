#include "interpose/signal_hooks.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include <atomic>

#include "core/runtime.h"
#include "core/sys.h"
#include "interpose/hooks.h"

namespace leakscope::internal {
namespace {

constexpr int kFatalSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};

// Whether the disposition of a signal is ours (and so reported to the program as SIG_DFL).
std::atomic<bool> g_ours[NSIG];

bool is_ours(int signal_number) {
  return signal_number > 0 && signal_number < NSIG && g_ours[signal_number].load(std::memory_order_acquire);
}

void on_fatal_signal(int signal_number, siginfo_t*, void*) {
  int saved_errno = errno;
  runtime_fatal_signal_snapshot(signal_number);
  // SA_RESETHAND has restored SIG_DFL and SA_NODEFER leaves the signal unblocked, so this
  // delivers the default action now: the process ends as it would have without us.
  g_ours[signal_number].store(false, std::memory_order_release);
  sys::signal_thread(sys::get_tid(), signal_number);
  errno = saved_errno;
}

}  // namespace

void signal_hooks_install() {
  for (int signal_number : kFatalSignals) {
    struct sigaction current;
    if (g_real.sigaction(signal_number, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction ours;
    memset(&ours, 0, sizeof(ours));
    ours.sa_sigaction = on_fatal_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    if (g_real.sigaction(signal_number, &ours, nullptr) == 0) {
      g_ours[signal_number].store(true, std::memory_order_release);
    }
  }
}

int handle_sigaction(int signal_number, const struct sigaction* action, struct sigaction* previous) {
  if (!is_ours(signal_number)) return g_real.sigaction(signal_number, action, previous);
  struct sigaction as_default;
  memset(&as_default, 0, sizeof(as_default));
  as_default.sa_handler = SIG_DFL;
  if (action != nullptr) {
    int result = g_real.sigaction(signal_number, action, nullptr);
    if (result != 0) return result;
    g_ours[signal_number].store(false, std::memory_order_release);
  }
  if (previous != nullptr) *previous = as_default;
  return 0;
}

sighandler_t handle_signal(int signal_number, sighandler_t handler) {
  if (!is_ours(signal_number)) return g_real.signal(signal_number, handler);
  sighandler_t replaced = g_real.signal(signal_number, handler);
  if (replaced == SIG_ERR) return SIG_ERR;
  g_ours[signal_number].store(false, std::memory_order_release);
  return SIG_DFL;
}

}  // namespace leakscope::internal
