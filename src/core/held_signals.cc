#include "core/held_signals.h"

#include <errno.h>
#include <string.h>
#include <ucontext.h>

__thread int leakscope_tls_held_handlers __attribute__((tls_model("initial-exec"), visibility("hidden"))) = 0;

namespace leakscope::internal {
namespace {

// Two are enough in practice: a bookkeeping span lasts microseconds, and standard signals merge.
constexpr int kHeldCapacity = 2;

struct HeldDelivery {
  ProgramAction action;
  int signal_number;
  siginfo_t info;
  ucontext_t context;
};

__thread HeldDelivery tls_held[kHeldCapacity] __attribute__((tls_model("initial-exec")));

bool hold_with_signals_blocked(const ProgramAction& action, int signal_number, const siginfo_t* info,
                               const void* context) {
  int count = leakscope_tls_held_handlers;
  if (signal_number < SIGRTMIN) {
    for (int i = 0; i < count; ++i) {
      if (tls_held[i].signal_number == signal_number) return true;
    }
  }
  if (count == kHeldCapacity) return false;
  HeldDelivery& held = tls_held[count];
  held.action = action;
  held.signal_number = signal_number;
  memcpy(&held.info, info, sizeof(held.info));
  const auto* interrupted = static_cast<const ucontext_t*>(context);
  memcpy(&held.context, interrupted, sizeof(held.context));
  // The floating-point state lives beside the kernel's frame, which is gone by delivery time.
  if (interrupted->uc_mcontext.fpregs != nullptr) {
    memcpy(&held.context.__fpregs_mem, interrupted->uc_mcontext.fpregs, sizeof(held.context.__fpregs_mem));
  }
  leakscope_tls_held_handlers = count + 1;
  return true;
}

}  // namespace

void run_program_handler(const ProgramAction& action, int signal_number, siginfo_t* info, void* context) {
  if ((action.flags & SA_SIGINFO) != 0) {
    reinterpret_cast<void (*)(int, siginfo_t*, void*)>(action.handler)(signal_number, info, context);
  } else {
    reinterpret_cast<void (*)(int)>(action.handler)(signal_number);
  }
}

bool held_signals_hold(const ProgramAction& action, int signal_number, const siginfo_t* info, const void* context) {
  // Another signal must not queue into the slot this one is filling.
  sigset_t all, previous;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &previous);
  bool held = hold_with_signals_blocked(action, signal_number, info, context);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  return held;
}

void held_signals_deliver() {
  int saved_errno = errno;
  // A handler's own allocations may hold another signal meanwhile: take one at a time from the front.
  while (leakscope_tls_held_handlers > 0) {
    HeldDelivery delivery = tls_held[0];
    int remaining = --leakscope_tls_held_handlers;
    memmove(&tls_held[0], &tls_held[1], sizeof(HeldDelivery) * static_cast<size_t>(remaining));
    delivery.context.uc_mcontext.fpregs = &delivery.context.__fpregs_mem;
    sigset_t blocked = delivery.action.mask;
    if ((delivery.action.flags & SA_NODEFER) == 0) sigaddset(&blocked, delivery.signal_number);
    sigset_t previous;
    sigprocmask(SIG_BLOCK, &blocked, &previous);
    run_program_handler(delivery.action, delivery.signal_number, &delivery.info, &delivery.context);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
  }
  errno = saved_errno;
}

}  // namespace leakscope::internal
