#include "core/process_maps.h"

#include <fcntl.h>

#include "core/sys.h"

namespace leakscope::internal {
namespace {

bool parse_hex(const char** cursor, const char* end, uintptr_t* value) {
  uintptr_t result = 0;
  const char* start = *cursor;
  for (; *cursor < end; ++*cursor) {
    char c = **cursor;
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) break;
    result = result << 4 | static_cast<uintptr_t>(digit);
  }
  *value = result;
  return *cursor > start;
}

// parse_line() reads "begin-end perms offset dev inode [path]".
bool parse_line(const char* line, const char* end, Mapping* mapping) {
  const char* cursor = line;
  if (!parse_hex(&cursor, end, &mapping->begin) || cursor >= end || *cursor++ != '-') return false;
  if (!parse_hex(&cursor, end, &mapping->end) || end - cursor < 5) return false;
  mapping->readable = cursor[1] == 'r';
  mapping->writable = cursor[2] == 'w';
  // From the permissions on, the path is the fifth field; fields are separated by runs of spaces.
  int field = 1;
  for (const char* c = cursor; c < end && field < 5; ++c) {
    if (*c == ' ' && c + 1 < end && c[1] != ' ') {
      ++field;
      if (field == 5) cursor = c + 1;
    }
  }
  mapping->anonymous = field < 5 || (*cursor != '/' && *cursor != '[') ||
                       (end - cursor >= 6 && __builtin_memcmp(cursor, "[heap]", 6) == 0) ||
                       (end - cursor >= 7 && __builtin_memcmp(cursor, "[stack", 6) == 0);
  return mapping->end > mapping->begin;
}

}  // namespace

bool ProcessMaps::read() {
  release();
  // A large program has thousands of mappings; the text is read whole, the buffer doubling until
  // one read fits.
  for (size_t capacity = size_t{1} << 20; capacity <= size_t{1} << 30; capacity *= 2) {
    text_ = static_cast<char*>(sys::map_anonymous(capacity));
    if (text_ == nullptr) return false;
    text_capacity_ = capacity;
    // thread-self: /proc/self/maps is empty once the main thread has ended by pthread_exit().
    int fd = sys::open_file("/proc/thread-self/maps", O_RDONLY, 0);
    if (fd < 0) {
      release();
      return false;
    }
    size_t used = 0;
    long got = 0;
    while (used < capacity && (got = sys::read_some(fd, text_ + used, capacity - used)) > 0) used += static_cast<size_t>(got);
    sys::close_file(fd);
    if (got < 0) {
      release();
      return false;
    }
    if (used == capacity) {
      release();
      continue;
    }
    size_t lines = 0;
    for (size_t i = 0; i < used; ++i) lines += text_[i] == '\n';
    capacity_ = lines + 1;
    mappings_ = static_cast<Mapping*>(sys::map_anonymous(capacity_ * sizeof(Mapping)));
    if (mappings_ == nullptr) {
      release();
      return false;
    }
    const char* line = text_;
    const char* text_end = text_ + used;
    while (line < text_end) {
      const char* newline = line;
      while (newline < text_end && *newline != '\n') ++newline;
      if (count_ < capacity_ && parse_line(line, newline, &mappings_[count_])) ++count_;
      line = newline + 1;
    }
    return true;
  }
  return false;
}

void ProcessMaps::release() {
  if (text_ != nullptr) sys::unmap(text_, text_capacity_);
  if (mappings_ != nullptr) sys::unmap(mappings_, capacity_ * sizeof(Mapping));
  text_ = nullptr;
  mappings_ = nullptr;
  text_capacity_ = capacity_ = count_ = 0;
}

const Mapping* ProcessMaps::first_ending_after(uintptr_t address) const {
  size_t low = 0, high = count_;
  while (low < high) {
    size_t middle = (low + high) / 2;
    if (mappings_[middle].end <= address) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return mappings_ + low;
}

const Mapping* ProcessMaps::find(uintptr_t address) const {
  const Mapping* mapping = first_ending_after(address);
  return mapping != end() && mapping->begin <= address ? mapping : nullptr;
}

}  // namespace leakscope::internal
