// File: thread_list.h
//
// The process's threads as the kernel lists them in /proc/self/task, read with raw system calls
// (no allocation): for pausing them (world_stop.cc) and for knowing when only the runtime's own
// thread is left (runtime.cc).
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

// other_threads_running() is whether a thread other than `self` still runs. A main thread that
// ended by pthread_exit() stays listed, as a zombie, until the whole process ends; it does not
// count. True when the list cannot be read, as nothing can then be known to have ended.
bool other_threads_running(pid_t self);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_THREAD_LIST_H_
