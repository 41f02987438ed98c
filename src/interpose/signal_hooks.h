// File: signal_hooks.h
//
// Final snapshots on fatal signals, invisible to the program. leakscope installs its handler only
// for signals still at SIG_DFL, and the sigaction/signal hooks report SIG_DFL for them, so a
// program (Python, for one) that checks for a default disposition before installing its own sees
// what it would see without leakscope. Once the program installs a handler, it is the program's.
// Our handler writes the final snapshot, restores SIG_DFL and re-raises, so the process ends
// with the same signal and status.
#ifndef LEAKSCOPE_INTERPOSE_SIGNAL_HOOKS_H_
#define LEAKSCOPE_INTERPOSE_SIGNAL_HOOKS_H_

namespace leakscope::internal {

// signal_hooks_install() installs the fatal-signal snapshot handler. Called once at start.
void signal_hooks_install();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_INTERPOSE_SIGNAL_HOOKS_H_
