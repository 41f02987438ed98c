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

// Every signal whose default action ends the process; the real-time ones are added at install.
constexpr int kFatalSignals[] = {SIGHUP,  SIGINT,  SIGQUIT,   SIGILL,  SIGTRAP, SIGABRT, SIGBUS,  SIGFPE,
                                 SIGUSR1, SIGSEGV, SIGUSR2,   SIGPIPE, SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU,
                                 SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR,  SIGSYS};

// Whether the disposition of a signal is ours (and so reported to the program as SIG_DFL).
std::atomic<bool> g_ours[NSIG];

bool is_ours(int signal_number) {
  return signal_number > 0 && signal_number < NSIG && g_ours[signal_number].load(std::memory_order_acquire);
}

// is_fault() tells a signal the kernel raised for the instruction the thread was executing (it
// would fault again if the handler returned) from one sent to the process.
bool is_fault(int signal_number, const siginfo_t* info) {
  bool synchronous = signal_number == SIGSEGV || signal_number == SIGBUS || signal_number == SIGFPE ||
                     signal_number == SIGILL || signal_number == SIGTRAP || signal_number == SIGSYS;
  return synchronous && info != nullptr && info->si_code > 0;
}

void on_fatal_signal(int signal_number, siginfo_t* info, void*) {
  int saved_errno = errno;
  // A signal sent while this thread is in leakscope's bookkeeping waits until it leaves it
  // (microseconds): the final snapshot then needs no lock the interrupted code might hold.
  if (leakscope_tls_hook_depth != 0 && !is_fault(signal_number, info) && leakscope_tls_held_signal == 0) {
    leakscope_tls_held_signal = signal_number;
    errno = saved_errno;
    return;
  }
  runtime_fatal_signal_snapshot(signal_number);
  // SA_RESETHAND has restored SIG_DFL and SA_NODEFER leaves the signal unblocked, so this
  // delivers the default action now: the process ends as it would have without us.
  g_ours[signal_number].store(false, std::memory_order_release);
  sys::signal_thread(sys::get_tid(), signal_number);
  errno = saved_errno;
}

bool install(int signal_number) {
  struct sigaction current;
  if (g_real.sigaction(signal_number, nullptr, &current) != 0) return false;
  if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) return false;
  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = on_fatal_signal;
  ours.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  if (g_real.sigaction(signal_number, &ours, nullptr) != 0) return false;
  g_ours[signal_number].store(true, std::memory_order_release);
  return true;
}

}  // namespace

void signal_hooks_install() {
  for (int signal_number : kFatalSignals) install(signal_number);
  for (int signal_number = SIGRTMIN; signal_number <= SIGRTMAX; ++signal_number) install(signal_number);
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
