// File: process_maps.h
//
// The process's mappings as /proc/thread-self/maps lists them, read with raw system calls into
// memory of its own (never the hooked malloc), so that it can be read while the program's threads
// are paused inside a leak check: what may be read, and what is anonymous memory the program wrote.
#ifndef LEAKSCOPE_CORE_PROCESS_MAPS_H_
#define LEAKSCOPE_CORE_PROCESS_MAPS_H_

#include <stddef.h>
#include <stdint.h>

namespace leakscope::internal {

struct Mapping {
  uintptr_t begin;
  uintptr_t end;  // exclusive
  bool readable;
  bool writable;
  bool anonymous;  // no file, not a kernel region ([vvar], [vsyscall]...): heap, stacks, mmap'd memory
};

class ProcessMaps {
 public:
  ProcessMaps() = default;
  ~ProcessMaps() { release(); }
  ProcessMaps(const ProcessMaps&) = delete;
  ProcessMaps& operator=(const ProcessMaps&) = delete;

  // read() lists the mappings now, in address order; false when the maps cannot be read or
  // memory for it cannot be mapped.
  bool read();
  void release();

  const Mapping* begin() const { return mappings_; }
  const Mapping* end() const { return mappings_ + count_; }
  size_t count() const { return count_; }
  // find() is the mapping holding `address`, or nullptr; first_ending_after() the first mapping
  // that ends above `address` (the one holding it, or else the next one), or end().
  const Mapping* find(uintptr_t address) const;
  const Mapping* first_ending_after(uintptr_t address) const;
  // mapped_bytes() is the memory this list took.
  size_t mapped_bytes() const { return text_capacity_ + capacity_ * sizeof(Mapping); }

 private:
  char* text_ = nullptr;
  size_t text_capacity_ = 0;
  Mapping* mappings_ = nullptr;
  size_t count_ = 0;
  size_t capacity_ = 0;
};

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_PROCESS_MAPS_H_
