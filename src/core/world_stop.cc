#include "core/world_stop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include <atomic>

#include "core/sys.h"
#include "core/thread_list.h"

namespace leakscope::internal {
namespace {

constexpr uint32_t kMaxPausedThreads = 1u << 16;
constexpr int kMaxListings = 30;
constexpr uint64_t kListingWaitNs = 200'000'000;  // per listing, for its threads to pause
constexpr uint64_t kTotalWaitNs = 2'000'000'000;

// The stop in progress: the handler checks a signal's generation and index against it, so that a
// signal that reaches a thread late (it had it blocked) does nothing.
std::atomic<PausedThread*> g_threads{nullptr};
std::atomic<uint32_t> g_capacity{0};
int g_generation = 0;  // of the current stop; futex word of the release (g_released)
int g_released = 0;    // the generation last released
int g_paused = 0;      // threads paused in this generation (futex word)
int g_stop_signal = 0;
bool g_handler_installed = false;
sys::KernelSignalAction g_previous_action;

uintptr_t thread_pointer() {
  uintptr_t value;
  asm volatile("mov %%fs:0, %0" : "=r"(value));
  return value;
}

void on_stop_signal(int, siginfo_t* info, void* context) {
  int saved_errno = errno;
  auto value = reinterpret_cast<uint64_t>(info->si_value.sival_ptr);
  int generation = static_cast<int>(value >> 32);
  uint32_t index = static_cast<uint32_t>(value);
  PausedThread* threads = g_threads.load(std::memory_order_acquire);
  if (info->si_code == SI_QUEUE && threads != nullptr && generation == __atomic_load_n(&g_generation, __ATOMIC_ACQUIRE) &&
      index < g_capacity.load(std::memory_order_relaxed) && threads[index].tid == sys::get_tid()) {
    PausedThread& self = threads[index];
    auto* machine = static_cast<ucontext_t*>(context);
    memcpy(self.registers, machine->uc_mcontext.gregs, kGeneralRegisterWords * sizeof(uint64_t));
    if (machine->uc_mcontext.fpregs != nullptr) {
      memcpy(self.registers + kGeneralRegisterWords, machine->uc_mcontext.fpregs->_xmm, 32 * sizeof(uint64_t));
    }
    self.stack_pointer = static_cast<uintptr_t>(machine->uc_mcontext.gregs[REG_RSP]);
    self.thread_pointer = thread_pointer();
    __atomic_store_n(&self.state, static_cast<uint32_t>(PausedState::kPaused), __ATOMIC_RELEASE);
    __atomic_add_fetch(&g_paused, 1, __ATOMIC_ACQ_REL);
    sys::futex_wake(&g_paused);
    // Nothing of the list is touched from here: it is unmapped once the threads are released.
    while (__atomic_load_n(&g_released, __ATOMIC_ACQUIRE) != generation) {
      sys::futex_wait(&g_released, __atomic_load_n(&g_released, __ATOMIC_ACQUIRE), 1'000'000'000);
    }
  }
  errno = saved_errno;
}

bool already_listed(const StoppedWorld& world, pid_t tid) {
  for (uint32_t i = 0; i < world.count; ++i) {
    if (world.threads[i].tid == tid) return true;
  }
  return false;
}

// signal_new_threads() signals every thread of /proc/self/task not yet listed; returns how many
// it found, or -1 when the directory cannot be read.
int signal_new_threads(StoppedWorld* world, pid_t self, pid_t also_running, uint32_t capacity, uint32_t* unlisted) {
  int found = 0;
  pid_t main_thread = sys::get_pid();
  bool listed = list_threads([&](pid_t tid) {
    if (tid == self || tid == also_running || already_listed(*world, tid)) return;
    // A main thread that left by pthread_exit() stays listed, a zombie that never answers.
    if (tid == main_thread && main_thread_has_ended()) return;
    if (world->count >= capacity) {
      ++*unlisted;
      return;
    }
    PausedThread& thread = world->threads[world->count];
    thread.tid = tid;
    thread.state = static_cast<uint32_t>(PausedState::kSignalled);
    uint64_t value = static_cast<uint64_t>(static_cast<uint32_t>(g_generation)) << 32 | world->count;
    ++world->count;
    ++found;
    if (sys::queue_signal(tid, g_stop_signal, value) != 0) thread.state = static_cast<uint32_t>(PausedState::kGone);
  });
  return listed ? found : -1;
}

uint32_t count_in_state(const StoppedWorld& world, PausedState state) {
  uint32_t count = 0;
  for (uint32_t i = 0; i < world.count; ++i) {
    if (__atomic_load_n(&world.threads[i].state, __ATOMIC_ACQUIRE) == static_cast<uint32_t>(state)) ++count;
  }
  return count;
}

// wait_for_pauses() waits until every signalled thread has paused, or `deadline`.
void wait_for_pauses(const StoppedWorld& world, uint64_t deadline) {
  for (;;) {
    uint32_t waiting = count_in_state(world, PausedState::kSignalled);
    uint64_t now = sys::monotonic_ns();
    if (waiting == 0 || now >= deadline) return;
    int paused = __atomic_load_n(&g_paused, __ATOMIC_ACQUIRE);
    uint64_t step = deadline - now < 10'000'000 ? deadline - now : 10'000'000;
    sys::futex_wait(&g_paused, paused, step);
  }
}


// count_threads() is the number of threads /proc/self/task lists now, or -1.
int count_threads() {
  int count = 0;
  return list_threads([&](pid_t) { ++count; }) ? count : -1;
}

// waiting_stack_pointer() reads the stack pointer of thread `tid` from the kernel, which gives it
// while the thread is in a system call ("NR ARGS... SP PC", or "-1 SP PC" when blocked elsewhere);
// 0 while it runs.
uintptr_t waiting_stack_pointer(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
  char text[256];
  long length = sys::read_small_file(path, text, sizeof(text));
  if (length <= 0 || strncmp(text, "running", 7) == 0) return 0;
  const char* fields[16];  // the last two are SP and PC
  int count = 0;
  for (long i = 0; i < length && count < 16; ++i) {
    if (text[i] != ' ' && text[i] != '\n' && (i == 0 || text[i - 1] == ' ')) fields[count++] = text + i;
  }
  if (count < 3 || strncmp(fields[count - 2], "0x", 2) != 0) return 0;
  uintptr_t value = 0;
  for (const char* c = fields[count - 2] + 2; *c != ' ' && *c != '\0' && *c != '\n'; ++c) {
    int digit = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
    if (digit < 0) return 0;
    value = value << 4 | static_cast<uintptr_t>(digit);
  }
  return value;
}

}  // namespace

bool world_stop(int signal_number, pid_t also_running, StoppedWorld* world) {
  *world = StoppedWorld{};
  // Room for the threads there are and for many more started before their creators pause.
  int threads_now = count_threads();
  if (threads_now < 0) return false;
  uint64_t capacity = 2 * static_cast<uint64_t>(threads_now) + 1024;
  if (capacity > kMaxPausedThreads) capacity = kMaxPausedThreads;
  world->mapped_bytes = capacity * sizeof(PausedThread);
  world->threads = static_cast<PausedThread*>(sys::map_anonymous(world->mapped_bytes));
  if (world->threads == nullptr) return false;
  if (!g_handler_installed || signal_number != g_stop_signal) {
    if (g_handler_installed) sys::set_signal_action(g_stop_signal, g_previous_action);
    if (sys::install_signal_handler(signal_number, on_stop_signal, &g_previous_action) != 0) {
      g_handler_installed = false;
      sys::unmap(world->threads, world->mapped_bytes);
      world->threads = nullptr;
      return false;
    }
    g_handler_installed = true;
    g_stop_signal = signal_number;
  }
  __atomic_store_n(&g_paused, 0, __ATOMIC_RELEASE);
  g_capacity.store(static_cast<uint32_t>(capacity), std::memory_order_relaxed);
  g_threads.store(world->threads, std::memory_order_release);
  __atomic_add_fetch(&g_generation, 1, __ATOMIC_ACQ_REL);

  pid_t self = sys::get_tid();
  uint64_t start = sys::monotonic_ns();
  uint32_t unlisted = 0;
  for (int listing = 0; listing < kMaxListings; ++listing) {
    unlisted = 0;
    int found = signal_new_threads(world, self, also_running, static_cast<uint32_t>(capacity), &unlisted);
    if (found <= 0) break;
    wait_for_pauses(*world, sys::monotonic_ns() + kListingWaitNs);
  }
  wait_for_pauses(*world, start + kTotalWaitNs);
  for (uint32_t i = 0; i < world->count; ++i) {
    PausedThread& thread = world->threads[i];
    if (__atomic_load_n(&thread.state, __ATOMIC_ACQUIRE) != static_cast<uint32_t>(PausedState::kSignalled)) continue;
    if (sys::signal_thread(thread.tid, 0) == -ESRCH) {
      thread.state = static_cast<uint32_t>(PausedState::kGone);  // it exited before taking the signal
    } else {
      ++world->missed;
      thread.waiting_stack_pointer = waiting_stack_pointer(thread.tid);
    }
  }
  world->missed += unlisted;
  world->paused = count_in_state(*world, PausedState::kPaused);
  world->stopped_at_ns = start;
  return true;
}

void world_resume(StoppedWorld* world) {
  if (world->threads == nullptr) return;
  // A thread that pauses after the count was taken is released with the others.
  g_threads.store(nullptr, std::memory_order_release);
  __atomic_store_n(&g_released, __atomic_load_n(&g_generation, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
  sys::futex_wake(&g_released);
  // A thread that never paused may still take the signal and read the list: both stay.
  if (count_in_state(*world, PausedState::kSignalled) == 0) {
    if (g_handler_installed) sys::set_signal_action(g_stop_signal, g_previous_action);
    g_handler_installed = false;
    sys::unmap(world->threads, world->mapped_bytes);
  }
  *world = StoppedWorld{};
}

}  // namespace leakscope::internal
