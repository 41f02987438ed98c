// File: thread_list.h
//
// The process's threads as the kernel tells them, read with raw system calls (no allocation):
// each one in /proc/self/task, for pausing them (world_stop.cc); and whether the main thread has
// ended and how many threads are left, for ending a process whose main thread left by
// pthread_exit() once only the runtime's own thread remains (runtime.cc).
#ifndef LEAKSCOPE_CORE_THREAD_LIST_H_
#define LEAKSCOPE_CORE_THREAD_LIST_H_

#include <fcntl.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/sys.h"

namespace leakscope::internal {

// getdents64's record.
struct DirectoryEntry {
  uint64_t inode;
  int64_t next;
  uint16_t length;
  uint8_t type;
  char name[1];
};

// list_threads() calls visit(tid) for each thread /proc/self/task lists; false when it cannot
// be read.
template <typename Visit>
bool list_threads(Visit&& visit) {
  int fd = sys::open_file("/proc/self/task", O_RDONLY | O_DIRECTORY, 0);
  if (fd < 0) return false;
  alignas(8) char buffer[4096];
  long filled;
  while ((filled = sys::read_directory_entries(fd, buffer, sizeof(buffer))) > 0) {
    for (long offset = 0; offset < filled;) {
      auto* entry = reinterpret_cast<const DirectoryEntry*>(buffer + offset);
      offset += entry->length;
      pid_t tid = 0;
      bool number = entry->name[0] != '\0';
      for (const char* c = entry->name; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') number = false;
        tid = tid * 10 + (*c - '0');
      }
      if (number) visit(tid);
    }
  }
  sys::close_file(fd);
  return filled == 0;
}

// main_thread_has_ended() is whether the main thread has ended (by pthread_exit(): it stays a
// zombie until the whole process ends); false when that cannot be read.
bool main_thread_has_ended();

// LastThreadWatch tells, once the main thread has left by pthread_exit(), when no thread but the
// runtime's is left. It reads /proc/self/stat, the main thread's: its state and the kernel's
// count of the process's threads, which counts that zombie and, counted at each clone before the
// thread that cloned can end, never misses a thread that starts another as it ends. The file is
// opened by start() on the leaving main thread and kept open, high, as a program may use up its
// descriptors before its last thread ends; one the program closed is opened again.
class LastThreadWatch {
 public:
  void start();
  // only_left() is whether the main thread has ended and `own_threads` are all that remain;
  // false while that cannot be read.
  bool only_left(int own_threads);
  // after_fork_child() lets go of the parent's file: the child's main thread is the one that forked.
  void after_fork_child();

 private:
  bool still_ours() const;
  bool opened();

  int fd_ = -1;
  uint64_t device_ = 0, inode_ = 0;
};

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_THREAD_LIST_H_
