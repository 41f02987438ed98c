#include "core/thread_list.h"

#include <stdlib.h>
#include <string.h>

namespace leakscope::internal {
namespace {

// The fields of /proc/PID/stat after the command name, which may hold spaces and parentheses:
// "S ppid pgrp ... num_threads ...", the state first.
struct StatFields {
  char state = 0;
  long threads = -1;
};

constexpr int kThreadsField = 17;  // num_threads, counted from the state's 0

StatFields parse_stat(const char* text) {
  StatFields fields;
  const char* cursor = strrchr(text, ')');
  if (cursor == nullptr || cursor[1] != ' ') return fields;
  cursor += 2;
  fields.state = *cursor;
  for (int field = 0; field < kThreadsField && cursor != nullptr; ++field) {
    cursor = strchr(cursor, ' ');
    if (cursor != nullptr) ++cursor;
  }
  if (cursor != nullptr) fields.threads = strtol(cursor, nullptr, 10);
  return fields;
}

bool is_zombie(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

}  // namespace

bool main_thread_has_ended() {
  char text[512];
  if (sys::read_small_file("/proc/self/stat", text, sizeof(text)) <= 0) return false;
  return is_zombie(parse_stat(text).state);
}

void LastThreadWatch::start() {
  if (fd_ >= 0) return;
  int fd = sys::open_file("/proc/self/stat", O_RDONLY, 0);
  if (fd < 0) return;
  fd = sys::move_fd_high(fd);
  if (!sys::file_identity(fd, &device_, &inode_)) {
    sys::close_file(fd);
    return;
  }
  fd_ = fd;
}

bool LastThreadWatch::still_ours() const {
  uint64_t device = 0, inode = 0;
  return fd_ >= 0 && sys::file_identity(fd_, &device, &inode) && device == device_ && inode == inode_;
}

bool LastThreadWatch::opened() {
  if (still_ours()) return true;
  fd_ = -1;  // closed by the program, its number maybe reused: never read, nor closed, again
  start();
  return fd_ >= 0;
}

void LastThreadWatch::after_fork_child() {
  if (still_ours()) sys::close_file(fd_);
  fd_ = -1;
}

bool LastThreadWatch::only_left(int own_threads) {
  if (!opened()) return false;
  char text[512];
  long length = sys::read_at(fd_, text, sizeof(text) - 1, 0);
  if (length <= 0) return false;
  text[length] = '\0';
  StatFields fields = parse_stat(text);
  return is_zombie(fields.state) && fields.threads == 1 + own_threads;
}

}  // namespace leakscope::internal
