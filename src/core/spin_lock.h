// File: spin_lock.h
//
// SpinLock: the runtime's only lock. Critical sections are a few hundred instructions and never
// call out of the runtime, so spinning (then yielding) beats a futex round trip; it also makes
// fork handling trivial (reset_after_fork()). Allocation-free; try_lock() is signal-safe.
#ifndef LEAKSCOPE_CORE_SPIN_LOCK_H_
#define LEAKSCOPE_CORE_SPIN_LOCK_H_

#include <sched.h>

#include <atomic>

namespace leakscope::internal {

class SpinLock {
 public:
  // lock() inlines the uncontended case: hooks take a lock on every call.
  void lock() {
    if (__builtin_expect(state_.exchange(1, std::memory_order_acquire) != 0, 0)) lock_contended();
  }

  bool try_lock() { return state_.exchange(1, std::memory_order_acquire) == 0; }

  // try_lock_for() spins at most `attempts` yields; for paths (fatal signals) that must not hang.
  bool try_lock_for(int attempts) {
    for (int i = 0; i < attempts; ++i) {
      if (try_lock()) return true;
      sched_yield();
    }
    return false;
  }

  void unlock() { state_.store(0, std::memory_order_release); }

  // reset_after_fork() releases the lock in a fork child, whose only thread is the forking one.
  void reset_after_fork() { state_.store(0, std::memory_order_relaxed); }

 private:
  __attribute__((noinline)) void lock_contended() {
    int spins = 0;
    do {
      while (state_.load(std::memory_order_relaxed) != 0) {
        if (++spins < 128) {
          __builtin_ia32_pause();
        } else {
          sched_yield();
        }
      }
    } while (state_.exchange(1, std::memory_order_acquire) != 0);
  }

  std::atomic<int> state_{0};
};

class SpinLockGuard {
 public:
  explicit SpinLockGuard(SpinLock& lock) : lock_(lock) { lock_.lock(); }
  ~SpinLockGuard() { lock_.unlock(); }
  SpinLockGuard(const SpinLockGuard&) = delete;
  SpinLockGuard& operator=(const SpinLockGuard&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_SPIN_LOCK_H_
