// File: signal_hooks.h
//
// Final snapshots on every signal whose default action ends the process, invisible to the program.
// leakscope installs its handler only for signals still at SIG_DFL, and the sigaction/signal hooks
// report SIG_DFL for them, so a program (Python, for one) that checks for a default disposition
// before installing its own sees what it would see without leakscope. Once the program installs a
// handler, it is the program's. Our handler has the writer thread write the final snapshot
// (runtime.h), restores SIG_DFL and re-raises, so the process ends with the same signal and
// status; a signal sent while the thread is in leakscope's bookkeeping is held until it leaves it.
//
// Every handler the program installs through sigaction or signal is reached through a stand-in of
// leakscope's, which holds it while its thread is in leakscope's bookkeeping (held_signals.h), so
// what a handler allocates is counted exactly; the hooks report the program's own handler, flags
// and mask back to it. Handlers installed by raw system calls (Go's runtime) are not seen.
#ifndef LEAKSCOPE_INTERPOSE_SIGNAL_HOOKS_H_
#define LEAKSCOPE_INTERPOSE_SIGNAL_HOOKS_H_

namespace leakscope::internal {

// signal_hooks_install() installs the fatal-signal snapshot handler. Called once at start.
void signal_hooks_install();

// signal_hooks_install_leak_check() makes `signal_number` run a leak check (leak_check_signal),
// reported to the program as SIG_DFL like the others; a handler the program installs later wins.
// Called at start, before signal_hooks_install().
void signal_hooks_install_leak_check(int signal_number);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_INTERPOSE_SIGNAL_HOOKS_H_
