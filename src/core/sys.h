// File: sys.h
//
// The runtime's one OS seam: raw system calls that never enter the hooked malloc or mmap.
// Everything here is thread-safe, async-signal-safe and allocation-free. Failures return -errno
// (or nullptr for mappings) instead of touching errno's users.
#ifndef LEAKSCOPE_CORE_SYS_H_
#define LEAKSCOPE_CORE_SYS_H_

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

namespace leakscope::internal::sys {

// map_anonymous() returns `size` bytes of zeroed private memory, or nullptr. With `populate` the
// kernel maps every page in at once, rather than at each page's first touch.
void* map_anonymous(size_t size, bool populate = false);
// unmap() releases memory from map_anonymous().
void unmap(void* address, size_t size);

int open_file(const char* path, int flags, int mode);
int close_file(int fd);
// read_some() returns bytes read, 0 at end of file, or -errno.
long read_some(int fd, void* buffer, size_t size);
// write_all() writes every byte (retrying on EINTR and short writes); returns 0 or -errno.
int write_all(int fd, const void* data, size_t size);
// read_at() is pread(2): up to `size` bytes from `offset`; returns bytes read, or -errno.
long read_at(int fd, void* buffer, size_t size, uint64_t offset);
// read_small_file() reads up to size-1 bytes of `path` and NUL-terminates; returns length or -errno.
long read_small_file(const char* path, char* buffer, size_t size);
// read_link() is readlink(2) with NUL termination; returns length or -errno.
long read_link(const char* path, char* buffer, size_t size);

// current_directory() is getcwd(2) without the libc wrapper (which may allocate); returns the
// length of the NUL-terminated path, or -errno.
long current_directory(char* buffer, size_t size);

// move_fd_high() duplicates `fd` to the lowest free descriptor >= 900 (close-on-exec), closes the
// original and returns the new one; programs that close or reuse low descriptors then leave it
// alone. Returns `fd` unchanged when no high descriptor is free.
int move_fd_high(int fd);

// chmod_file() sets the mode of the file behind `fd` (fchmod). lock_file() takes an exclusive
// advisory lock on it (flock LOCK_EX | LOCK_NB), held until every descriptor of it is closed.
int chmod_file(int fd, int mode);
int lock_file(int fd);

// file_identity() reads the device and inode behind `fd`; false when fd is not open.
bool file_identity(int fd, uint64_t* device, uint64_t* inode);

pid_t get_pid();
pid_t get_ppid();
pid_t get_tid();
int signal_thread(pid_t tid, int signal_number);
// unblock_signal() takes `signal_number` out of the calling thread's blocked set (rt_sigprocmask).
int unblock_signal(int signal_number);
// reset_signal_to_default() sets the disposition of `signal_number` to SIG_DFL (rt_sigaction).
int reset_signal_to_default(int signal_number);

// A signal disposition as the kernel holds it (rt_sigaction), so that one can be saved and put
// back exactly, and a handler installed without libc's sigaction, which the preload stands in for.
struct KernelSignalAction {
  void* handler;
  unsigned long flags;
  void* restorer;
  uint64_t mask;
};
int get_signal_action(int signal_number, KernelSignalAction* action);
int set_signal_action(int signal_number, const KernelSignalAction& action);
// install_signal_handler() installs `handler` (SA_SIGINFO | SA_RESTART, every other signal blocked
// while it runs) and saves the disposition it replaces in *previous.
int install_signal_handler(int signal_number, void (*handler)(int, siginfo_t*, void*), KernelSignalAction* previous);
// queue_signal() sends `signal_number` to thread `tid` of this process with `value` in si_value
// (rt_tgsigqueueinfo, si_code SI_QUEUE).
int queue_signal(pid_t tid, int signal_number, uint64_t value);

// read_directory_entries() is getdents64(2): the entries of the open directory `fd` into `buffer`;
// returns the bytes filled, 0 at the end, or -errno.
long read_directory_entries(int fd, void* buffer, size_t size);

uint64_t monotonic_ns();
uint64_t realtime_ns();

// futex_wait() sleeps while *word == expected, at most timeout_ns. futex_wake() wakes all.
void futex_wait(int* word, int expected, uint64_t timeout_ns);
void futex_wake(int* word);

// write_stderr() writes a NUL-terminated string to fd 2, ignoring errors.
void write_stderr(const char* text);

// page_size() is the system page size, read once from the auxiliary vector.
size_t page_size();

}  // namespace leakscope::internal::sys

#endif  // LEAKSCOPE_CORE_SYS_H_
