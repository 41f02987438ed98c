// File: world_stop.h
//
// Pausing every other thread of the process, for a leak check: each is sent the stop signal
// (stop_signal) with rt_tgsigqueueinfo, and its handler saves the thread's registers, stack
// pointer and thread pointer, says so, and waits on a futex until it is released. Signals rather
// than ptrace, so that it works under a debugger or strace, with Yama's ptrace_scope, in
// containers that forbid ptrace, and in non-dumpable processes. The thread list is read from
// /proc/self/task again until a pass finds no thread not yet signalled (threads created meanwhile).
// A thread that does not answer in time (it blocks the signal, or is stuck in the kernel) is
// counted as missed; the handler then stays installed, as a no-op, so that the signal reaching it
// later ends nothing. Where such a thread waits in a system call (a sigwait loop), the kernel
// still tells its stack pointer, so its stack can be scanned; its registers cannot.
//
// The caller takes the locks the paused threads could hold and it needs (the allocation table's)
// before stopping, and allocates nothing through libc while they are paused.
#ifndef LEAKSCOPE_CORE_WORLD_STOP_H_
#define LEAKSCOPE_CORE_WORLD_STOP_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

namespace leakscope::internal {

// The registers a paused thread's handler saves: the general ones, then the 16 XMM ones (where a
// compiler may keep a pointer).
constexpr int kGeneralRegisterWords = 23;
constexpr int kSavedRegisterWords = kGeneralRegisterWords + 32;

enum class PausedState : uint32_t { kSignalled = 0, kPaused = 1, kGone = 2 };

struct PausedThread {
  pid_t tid;
  uint32_t state;        // PausedState, written by the thread's handler
  // Of a thread that never paused: its stack pointer as the kernel reports it while the thread
  // waits in a system call (/proc/self/task/TID/syscall), or 0 when it is running.
  uintptr_t waiting_stack_pointer;
  uintptr_t stack_pointer;
  uintptr_t thread_pointer;  // %fs base: the thread's TCB, its static TLS below it
  uint64_t registers[kSavedRegisterWords];
};

struct StoppedWorld {
  PausedThread* threads = nullptr;
  uint32_t count = 0;   // threads signalled (gone ones included)
  uint32_t paused = 0;  // of them, paused now
  uint32_t missed = 0;  // still alive, never paused
  size_t mapped_bytes = 0;
  uint64_t stopped_at_ns = 0;
};

// world_stop() pauses every thread of the process except the caller and `also_running` (0: none)
// using `signal_number`. False when memory for the list cannot be mapped or the handler cannot be
// installed: then nothing is paused.
bool world_stop(int signal_number, pid_t also_running, StoppedWorld* world);

// world_resume() releases the paused threads and the list.
void world_resume(StoppedWorld* world);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_WORLD_STOP_H_
