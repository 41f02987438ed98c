#include "core/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace leakscope::internal::sys {

// syscall(2) returns -1 and sets errno; these helpers turn that into -errno.
static long checked(long result) { return result == -1 ? -errno : result; }

void* map_anonymous(size_t size, bool populate) {
  long result = syscall(SYS_mmap, nullptr, size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
  return result == -1 ? nullptr : reinterpret_cast<void*>(result);
}

void unmap(void* address, size_t size) { syscall(SYS_munmap, address, size); }

int open_file(const char* path, int flags, int mode) {
  return static_cast<int>(checked(syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode)));
}

int close_file(int fd) { return static_cast<int>(checked(syscall(SYS_close, fd))); }

int chmod_file(int fd, int mode) { return static_cast<int>(checked(syscall(SYS_fchmod, fd, mode))); }

int lock_file(int fd) { return static_cast<int>(checked(syscall(SYS_flock, fd, LOCK_EX | LOCK_NB))); }

long read_some(int fd, void* buffer, size_t size) {
  for (;;) {
    long result = checked(syscall(SYS_read, fd, buffer, size));
    if (result != -EINTR) return result;
  }
}

long read_at(int fd, void* buffer, size_t size, uint64_t offset) {
  for (;;) {
    long result = checked(syscall(SYS_pread64, fd, buffer, size, offset));
    if (result != -EINTR) return result;
  }
}

int write_all(int fd, const void* data, size_t size) {
  const char* cursor = static_cast<const char*>(data);
  while (size > 0) {
    long written = checked(syscall(SYS_write, fd, cursor, size));
    if (written == -EINTR) continue;
    if (written < 0) return static_cast<int>(written);
    if (written == 0) return -EIO;
    cursor += written;
    size -= static_cast<size_t>(written);
  }
  return 0;
}

long read_small_file(const char* path, char* buffer, size_t size) {
  int fd = open_file(path, O_RDONLY, 0);
  if (fd < 0) return fd;
  size_t length = 0;
  while (length + 1 < size) {
    long got = read_some(fd, buffer + length, size - 1 - length);
    if (got < 0) {
      close_file(fd);
      return got;
    }
    if (got == 0) break;
    length += static_cast<size_t>(got);
  }
  buffer[length] = '\0';
  close_file(fd);
  return static_cast<long>(length);
}

long current_directory(char* buffer, size_t size) {
  long length = checked(syscall(SYS_getcwd, buffer, size));
  return length < 0 ? length : length - 1;  // the kernel counts the NUL
}

long read_link(const char* path, char* buffer, size_t size) {
  long length = checked(syscall(SYS_readlinkat, AT_FDCWD, path, buffer, size - 1));
  if (length >= 0) buffer[length] = '\0';
  return length;
}

int move_fd_high(int fd) {
  long high = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 900);
  if (high < 0) return fd;
  close_file(fd);
  return static_cast<int>(high);
}

bool file_identity(int fd, uint64_t* device, uint64_t* inode) {
  struct stat status;
  if (syscall(SYS_fstat, fd, &status) != 0) return false;
  *device = status.st_dev;
  *inode = status.st_ino;
  return true;
}

pid_t get_pid() { return static_cast<pid_t>(syscall(SYS_getpid)); }
pid_t get_ppid() { return static_cast<pid_t>(syscall(SYS_getppid)); }
pid_t get_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int reset_signal_to_default(int signal_number) {
  KernelSignalAction action = {};  // SIG_DFL, no flags, empty mask
  return set_signal_action(signal_number, action);
}

int get_signal_action(int signal_number, KernelSignalAction* action) {
  return static_cast<int>(checked(syscall(SYS_rt_sigaction, signal_number, nullptr, action, sizeof(action->mask))));
}

int set_signal_action(int signal_number, const KernelSignalAction& action) {
  return static_cast<int>(checked(syscall(SYS_rt_sigaction, signal_number, &action, nullptr, sizeof(action.mask))));
}

}  // namespace leakscope::internal::sys

// The return path of a handler installed by raw rt_sigaction: x86-64 needs one (SA_RESTORER),
// and libc's own is not exported.
extern "C" void leakscope_signal_return() __attribute__((visibility("hidden")));
asm(".text\n"
    ".globl leakscope_signal_return\n"
    ".hidden leakscope_signal_return\n"
    ".type leakscope_signal_return, @function\n"
    "leakscope_signal_return:\n"
    "  mov $15, %rax\n"  // rt_sigreturn
    "  syscall\n"
    ".size leakscope_signal_return, .-leakscope_signal_return\n");

namespace leakscope::internal::sys {

int install_signal_handler(int signal_number, void (*handler)(int, siginfo_t*, void*), KernelSignalAction* previous) {
  constexpr unsigned long kRestorer = 0x04000000;  // SA_RESTORER, which glibc's headers keep to themselves
  KernelSignalAction action = {};
  action.handler = reinterpret_cast<void*>(handler);
  action.flags = SA_SIGINFO | SA_RESTART | kRestorer;
  action.restorer = reinterpret_cast<void*>(leakscope_signal_return);
  action.mask = ~uint64_t{0};
  return static_cast<int>(checked(syscall(SYS_rt_sigaction, signal_number, &action, previous, sizeof(action.mask))));
}

int queue_signal(pid_t tid, int signal_number, uint64_t value) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  info.si_signo = signal_number;
  info.si_code = SI_QUEUE;
  info.si_pid = get_pid();
  info.si_uid = static_cast<uid_t>(syscall(SYS_getuid));
  info.si_value.sival_ptr = reinterpret_cast<void*>(value);
  return static_cast<int>(checked(syscall(SYS_rt_tgsigqueueinfo, get_pid(), tid, signal_number, &info)));
}

long read_directory_entries(int fd, void* buffer, size_t size) {
  return checked(syscall(SYS_getdents64, fd, buffer, size));
}

int unblock_signal(int signal_number) {
  uint64_t set = uint64_t{1} << (signal_number - 1);
  return static_cast<int>(checked(syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, nullptr, sizeof(set))));
}

int signal_thread(pid_t tid, int signal_number) {
  return static_cast<int>(checked(syscall(SYS_tgkill, get_pid(), tid, signal_number)));
}

static uint64_t clock_ns(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
uint64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

void futex_wait(int* word, int expected, uint64_t timeout_ns) {
  struct timespec timeout;
  timeout.tv_sec = static_cast<time_t>(timeout_ns / 1000000000ull);
  timeout.tv_nsec = static_cast<long>(timeout_ns % 1000000000ull);
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &timeout, nullptr, 0);
}

void futex_wake(int* word) { syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, nullptr, nullptr, 0); }

void write_stderr(const char* text) { write_all(2, text, strlen(text)); }

size_t page_size() {
  static size_t cached = 0;
  if (cached == 0) {
    unsigned long from_auxv = getauxval(AT_PAGESZ);
    cached = from_auxv != 0 ? from_auxv : 4096;
  }
  return cached;
}

}  // namespace leakscope::internal::sys
