// File: held_signals.h
//
// The program's signal handlers, held while their thread is in leakscope's bookkeeping. A handler
// that ran there could not be recorded (the interrupted record step may hold the very lock its
// allocation needs), and one that longjmps out would leave that lock held for good. So the
// handler is queued with copies of its siginfo and context and run as soon as the bookkeeping
// ends, microseconds later, on the same thread, with the signal mask the kernel would have set
// and no lock held: its allocations are counted like any other code's.
//
// Everything here runs in signal context or on the hot path's exit: no allocation, no locks.
#ifndef LEAKSCOPE_CORE_HELD_SIGNALS_H_
#define LEAKSCOPE_CORE_HELD_SIGNALS_H_

#include <signal.h>

// How many program handlers are held on this thread (the Bookkeeping scope's exit reads it).
extern __thread int leakscope_tls_held_handlers __attribute__((tls_model("initial-exec"), visibility("hidden")));

namespace leakscope::internal {

// A handler as the program installed it: the function (an sa_handler when SA_SIGINFO is not in
// `flags`), its flags and its mask.
struct ProgramAction {
  void* handler;
  int flags;
  sigset_t mask;
};

// run_program_handler() calls the program's handler the way the kernel would have.
void run_program_handler(const ProgramAction& action, int signal_number, siginfo_t* info, void* context);

// held_signals_hold() queues the delivery of `signal_number` to `action` on this thread. False
// when the queue is full; a standard signal already queued is merged into it, as the kernel
// merges one that is pending.
bool held_signals_hold(const ProgramAction& action, int signal_number, const siginfo_t* info, const void* context);

// held_signals_deliver() runs the queued handlers in the order their signals came, each with its
// action's mask (and its own signal, unless SA_NODEFER) blocked; errno is kept.
void held_signals_deliver();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_HELD_SIGNALS_H_
