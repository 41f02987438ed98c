// File: internal_alloc.h
//
// The runtime's own memory, taken from the kernel with mmap and never from the hooked malloc, so
// that leakscope's bookkeeping is never recorded as the program's and never re-enters a hook.
// What it maps is reported in every snapshot as overhead.
//
// Small requests (<= 2 KiB) come from power-of-two size classes carved from 64 KiB chunks; larger
// ones are mapped directly. Memory is returned zeroed.
#ifndef LEAKSCOPE_CORE_INTERNAL_ALLOC_H_
#define LEAKSCOPE_CORE_INTERNAL_ALLOC_H_

#include <stddef.h>
#include <string.h>

#include <type_traits>

namespace leakscope::internal {

// internal_alloc() returns `size` zeroed bytes aligned to 16, or nullptr when the kernel refuses
// memory. Thread-safe, allocation-free with respect to malloc; not signal-safe (takes a lock).
void* internal_alloc(size_t size);

// internal_alloc_populated() is internal_alloc() for an array the caller is about to fill whole
// (a hash table's slots as it grows): a fresh mapping's pages come in at once. Faulted in one at a
// time, each is read first (the probe for an empty slot maps the shared zero page) and then
// written, and that second fault flushes the TLB of every CPU the program's threads run on.
void* internal_alloc_populated(size_t size);

// internal_free() returns memory from internal_alloc(); `size` must be the size asked for.
void internal_free(void* pointer, size_t size);

// internal_alloc_permanent() returns `size` zeroed bytes aligned to 16 that are never freed, cut
// from chunks without size classes: for what lives as long as the process (interned stacks), where
// rounding up to a power of two would waste close to half. Thread-safe; not signal-safe.
void* internal_alloc_permanent(size_t size);

// internal_mapped_bytes() is the memory the runtime holds from the kernel for itself.
size_t internal_mapped_bytes();

// internal_peak_mapped_bytes() is the most it has held at any moment (snapshots being built
// included), what the memory budget is measured against.
size_t internal_peak_mapped_bytes();

// Fork support: hold the allocator lock across fork() so the child never inherits it taken.
void internal_alloc_before_fork();
void internal_alloc_after_fork_parent();
void internal_alloc_after_fork_child();

// InternalArray: a growable array of trivially copyable T in internal memory.
// Not thread-safe; owners lock around it. push_back() returns false when memory is exhausted.
// It has no destructor on purpose: runtime globals must outlive every hook call made during
// exit, so memory is given back only by an explicit release().
template <typename T>
class InternalArray {
  static_assert(std::is_trivially_copyable_v<T>, "InternalArray holds plain data only");

 public:
  InternalArray() = default;
  InternalArray(const InternalArray&) = delete;
  InternalArray& operator=(const InternalArray&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return items_; }
  const T* data() const { return items_; }
  T& operator[](size_t index) { return items_[index]; }
  const T& operator[](size_t index) const { return items_[index]; }

  bool reserve(size_t wanted) {
    if (wanted <= capacity_) return true;
    size_t capacity = capacity_ == 0 ? 16 : capacity_;
    while (capacity < wanted) capacity *= 2;
    T* grown = static_cast<T*>(internal_alloc(capacity * sizeof(T)));
    if (grown == nullptr) return false;
    if (size_ != 0) memcpy(static_cast<void*>(grown), items_, size_ * sizeof(T));
    if (items_ != nullptr) internal_free(items_, capacity_ * sizeof(T));
    items_ = grown;
    capacity_ = capacity;
    return true;
  }

  // resize() grows with zeroed elements or shrinks.
  bool resize(size_t wanted) {
    if (!reserve(wanted)) return false;
    if (wanted > size_) memset(static_cast<void*>(items_ + size_), 0, (wanted - size_) * sizeof(T));
    size_ = wanted;
    return true;
  }

  // commit_size() sets the size to `size` <= capacity without touching the contents: for writers
  // that fill reserved space first and then claim it.
  void commit_size(size_t size) { size_ = size; }

  bool push_back(const T& value) {
    if (!reserve(size_ + 1)) return false;
    items_[size_++] = value;
    return true;
  }

  void clear() { size_ = 0; }

  void swap(InternalArray& other) {
    T* items = items_;
    size_t size = size_, capacity = capacity_;
    items_ = other.items_, size_ = other.size_, capacity_ = other.capacity_;
    other.items_ = items, other.size_ = size, other.capacity_ = capacity;
  }

  void release() {
    if (items_ != nullptr) internal_free(items_, capacity_ * sizeof(T));
    items_ = nullptr;
    size_ = capacity_ = 0;
  }

 private:
  T* items_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_INTERNAL_ALLOC_H_
