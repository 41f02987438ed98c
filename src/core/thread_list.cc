#include "core/thread_list.h"

#include <stdio.h>
#include <string.h>

namespace leakscope::internal {
namespace {

// thread_has_ended() is whether /proc says thread `tid` is a zombie or dead ("TID (NAME) S ...";
// the name may hold spaces and parentheses, the state follows the last ')'), or is gone.
bool thread_has_ended(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
  char text[512];
  if (sys::read_small_file(path, text, sizeof(text)) <= 0) return true;
  const char* name_end = strrchr(text, ')');
  if (name_end == nullptr || name_end[1] != ' ') return false;
  char state = name_end[2];
  return state == 'Z' || state == 'X' || state == 'x';
}

}  // namespace

bool other_threads_running(pid_t self) {
  bool running = false;
  bool listed = list_threads([&](pid_t tid) {
    if (!running && tid != self && !thread_has_ended(tid)) running = true;
  });
  return running || !listed;
}

}  // namespace leakscope::internal
