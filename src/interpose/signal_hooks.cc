#include "interpose/signal_hooks.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include <atomic>

#include "core/held_signals.h"
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

// The handler the program installed for each signal, which the kernel reaches through
// on_program_signal. The handler pointer is stored last, so a delivery that sees it sees the rest.
struct ProgramSlot {
  std::atomic<void*> handler;
  std::atomic<int> flags;
  sigset_t mask;
};
ProgramSlot g_program[NSIG];

bool valid(int signal_number) { return signal_number > 0 && signal_number < NSIG; }

bool kills_by_default(int signal_number) {
  if (signal_number >= SIGRTMIN && signal_number <= SIGRTMAX) return true;
  for (int fatal : kFatalSignals) {
    if (fatal == signal_number) return true;
  }
  return false;
}

bool is_ours(int signal_number) {
  return valid(signal_number) && g_ours[signal_number].load(std::memory_order_acquire);
}

// is_fault() tells a signal the kernel raised for the instruction the thread was executing (it
// would fault again if the handler returned) from one sent to the process.
bool is_fault(int signal_number, const siginfo_t* info) {
  bool synchronous = signal_number == SIGSEGV || signal_number == SIGBUS || signal_number == SIGFPE ||
                     signal_number == SIGILL || signal_number == SIGTRAP || signal_number == SIGSYS;
  return synchronous && info != nullptr && info->si_code > 0;
}

void on_fatal_signal(int signal_number, siginfo_t* info, void* context) {
  int saved_errno = errno;
  // A signal sent while this thread is in leakscope's bookkeeping waits until it leaves it
  // (microseconds): the final snapshot then needs no lock the interrupted code might hold. It stays
  // blocked meanwhile (in the mask the interrupted code resumes with), so that a second one waits
  // too instead of taking the default action SA_RESETHAND has put back.
  if (leakscope_tls_hook_depth != 0 && !is_fault(signal_number, info) && leakscope_tls_held_signal == 0) {
    leakscope_tls_held_signal = signal_number;
    if (context != nullptr) sigaddset(&static_cast<ucontext_t*>(context)->uc_sigmask, signal_number);
    errno = saved_errno;
    return;
  }
  runtime_fatal_signal_snapshot(signal_number);
  // SA_RESETHAND has restored SIG_DFL; the signal stayed blocked while the final snapshot was
  // written, so a second one (a process group's SIGTERM, and `leakscope run` passing it on) waited
  // instead of ending the process half-way. Raised again and unblocked, the default action ends
  // the process now, as it would have without us.
  g_ours[signal_number].store(false, std::memory_order_release);
  sys::signal_thread(sys::get_tid(), signal_number);
  sys::unblock_signal(signal_number);
  errno = saved_errno;
}

// on_program_signal() stands in front of every handler the program installs. Outside leakscope's
// bookkeeping it calls the handler at once; inside, it holds it until the bookkeeping ends
// (held_signals.h). A fault cannot wait: its handler runs at once, and what it allocates then is
// not recorded.
void on_program_signal(int signal_number, siginfo_t* info, void* context) {
  ProgramAction action;
  action.handler = g_program[signal_number].handler.load(std::memory_order_acquire);
  action.flags = g_program[signal_number].flags.load(std::memory_order_relaxed);
  action.mask = g_program[signal_number].mask;
  if (action.handler == nullptr) return;  // replaced as it arrived
  if (leakscope_tls_hook_depth != 0 && !is_fault(signal_number, info) &&
      held_signals_hold(action, signal_number, info, context)) {
    return;
  }
  // Interrupting the real allocator (the case that is undefined without leakscope too) or a hook's
  // real call: the handler's allocations are its own.
  int allocator_depth = leakscope_tls_allocator_depth;
  leakscope_tls_allocator_depth = 0;
  run_program_handler(action, signal_number, info, context);
  leakscope_tls_allocator_depth = allocator_depth;
}

// is_function() tells a handler from SIG_DFL and SIG_IGN by its value alone, as the kernel does:
// Go's runtime asks for the default action as {SIG_DFL, SA_SIGINFO} when it dies of a signal.
bool is_function(const struct sigaction& action) { return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN; }

bool is_program_trampoline(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction == on_program_signal;
}

// on_leak_check_signal() has the writer thread run a leak check (leak_check_signal).
void on_leak_check_signal(int, siginfo_t*, void*) {
  int saved_errno = errno;
  runtime_request_leak_check();
  errno = saved_errno;
}

bool install(int signal_number, void (*handler)(int, siginfo_t*, void*) = on_fatal_signal,
             int flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK) {
  struct sigaction current;
  if (g_real.sigaction(signal_number, nullptr, &current) != 0) return false;
  if (current.sa_handler != SIG_DFL) return false;
  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = handler;
  ours.sa_flags = flags;
  sigemptyset(&ours.sa_mask);
  if (g_real.sigaction(signal_number, &ours, nullptr) != 0) return false;
  g_ours[signal_number].store(true, std::memory_order_release);
  return true;
}

// what_the_program_sees() turns the kernel's disposition into the one the program installed.
void what_the_program_sees(int signal_number, const struct sigaction& kernel, struct sigaction* seen) {
  *seen = kernel;
  if (is_ours(signal_number)) {
    memset(seen, 0, sizeof(*seen));
    seen->sa_handler = SIG_DFL;
  } else if (is_program_trampoline(kernel)) {
    ProgramSlot& slot = g_program[signal_number];
    seen->sa_flags = slot.flags.load(std::memory_order_relaxed);
    seen->sa_mask = slot.mask;
    if ((seen->sa_flags & SA_SIGINFO) != 0) {
      seen->sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t*, void*)>(slot.handler.load(std::memory_order_acquire));
    } else {
      seen->sa_handler = reinterpret_cast<sighandler_t>(slot.handler.load(std::memory_order_acquire));
    }
  }
}

}  // namespace

void signal_hooks_install_leak_check(int signal_number) {
  if (!install(signal_number, on_leak_check_signal, SA_SIGINFO | SA_RESTART | SA_ONSTACK)) {
    runtime_note("leak_check_signal: the signal is not at its default action (ignored, or the program's); not installed");
  }
}

void signal_hooks_install() {
  for (int signal_number : kFatalSignals) install(signal_number);
  for (int signal_number = SIGRTMIN; signal_number <= SIGRTMAX; ++signal_number) install(signal_number);
}

int handle_sigaction(int signal_number, const struct sigaction* action, struct sigaction* previous) {
  if (!valid(signal_number) || signal_number == SIGKILL || signal_number == SIGSTOP) {
    return g_real.sigaction(signal_number, action, previous);
  }
  struct sigaction kernel, seen;
  if (g_real.sigaction(signal_number, nullptr, &kernel) != 0) return -1;
  what_the_program_sees(signal_number, kernel, &seen);
  if (action != nullptr) {
    struct sigaction installed = *action;
    if (is_function(*action)) {
      ProgramSlot& slot = g_program[signal_number];
      slot.handler.store(nullptr, std::memory_order_release);
      slot.mask = action->sa_mask;
      slot.flags.store(action->sa_flags, std::memory_order_relaxed);
      slot.handler.store((action->sa_flags & SA_SIGINFO) != 0 ? reinterpret_cast<void*>(action->sa_sigaction)
                                                                : reinterpret_cast<void*>(action->sa_handler),
                         std::memory_order_release);
      installed.sa_sigaction = on_program_signal;
      installed.sa_flags |= SA_SIGINFO;
    }
    if (installed.sa_handler == SIG_DFL && kills_by_default(signal_number)) {
      // The default action put back (a program that dies of the signal it handled, as Go's
      // runtime does): ours again, so that its death still writes the final snapshot.
      if (!g_ours[signal_number].load(std::memory_order_acquire)) {
        if (g_real.sigaction(signal_number, &installed, nullptr) != 0) return -1;
        install(signal_number);
      }
    } else {
      if (g_real.sigaction(signal_number, &installed, nullptr) != 0) return -1;
      g_ours[signal_number].store(false, std::memory_order_release);
    }
  }
  if (previous != nullptr) *previous = seen;
  return 0;
}

sighandler_t handle_signal(int signal_number, sighandler_t handler) {
  // As glibc's signal(): BSD semantics, the signal blocked while its handler runs.
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  if (valid(signal_number)) sigaddset(&action.sa_mask, signal_number);
  action.sa_flags = SA_RESTART;
  struct sigaction previous;
  if (handle_sigaction(signal_number, &action, &previous) != 0) return SIG_ERR;
  return previous.sa_handler;
}

}  // namespace leakscope::internal
