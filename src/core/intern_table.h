// File: intern_table.h
//
// InternTable<Entry>: turns a key into a small dense id, once, for the life of the process.
// The stack depot, the site and triple registries and the task registry are built on it.
//
// Lookups are lock-free (chained buckets of immutable entries, published with release stores),
// so the hot path that finds an existing stack or triple never waits. Inserts, which happen once
// per distinct key, take one lock per table. Entries are never removed. Ids are dense from 1;
// get(id) is a two-level directory read; end_id() only advances after an entry is published, so
// a reader that sees end_id() == n can read every id < n.
//
// Entry must have the fields `Entry* next; uint64_t hash; uint32_t id;`.
#ifndef LEAKSCOPE_CORE_INTERN_TABLE_H_
#define LEAKSCOPE_CORE_INTERN_TABLE_H_

#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include "core/internal_alloc.h"
#include "core/spin_lock.h"

namespace leakscope::internal {

template <typename Entry>
class InternTable {
 public:
  static constexpr uint32_t kChunkShift = 12;
  static constexpr uint32_t kChunkEntries = 1u << kChunkShift;
  static constexpr uint32_t kMaxChunks = 1u << 14;  // 64 M ids

  constexpr InternTable() = default;

  // init() allocates 2^bucket_shift buckets. Not thread-safe; called once by runtime init.
  bool init(uint32_t bucket_shift) {
    size_t count = size_t{1} << bucket_shift;
    buckets_ = static_cast<std::atomic<Entry*>*>(internal_alloc(count * sizeof(std::atomic<Entry*>)));
    if (buckets_ == nullptr) return false;
    mask_ = count - 1;
    return true;
  }

  bool ready() const { return buckets_ != nullptr; }

  // find() returns the entry with `hash` for which match(entry) holds, or nullptr. Lock-free.
  template <typename Match>
  Entry* find(uint64_t hash, Match&& match) const {
    for (Entry* entry = buckets_[hash & mask_].load(std::memory_order_acquire); entry != nullptr;
         entry = entry->next) {
      if (entry->hash == hash && match(entry)) return entry;
    }
    return nullptr;
  }

  // find_or_insert() returns the existing entry or one made by make() (which returns an Entry
  // from internal memory with its key filled in, or nullptr). Returns nullptr only when memory
  // or ids are exhausted. Thread-safe.
  template <typename Match, typename Make>
  Entry* find_or_insert(uint64_t hash, Match&& match, Make&& make) {
    if (Entry* found = find(hash, match)) return found;
    SpinLockGuard guard(insert_lock_);
    if (Entry* found = find(hash, match)) return found;
    uint32_t id = end_id_.load(std::memory_order_relaxed);
    uint32_t chunk = id >> kChunkShift;
    if (chunk >= kMaxChunks) return nullptr;
    if (chunks_[chunk].load(std::memory_order_relaxed) == nullptr) {
      auto* fresh = static_cast<std::atomic<Entry*>*>(
          internal_alloc(kChunkEntries * sizeof(std::atomic<Entry*>)));
      if (fresh == nullptr) return nullptr;
      chunks_[chunk].store(fresh, std::memory_order_release);
    }
    Entry* entry = make();
    if (entry == nullptr) return nullptr;
    std::atomic<Entry*>& bucket = buckets_[hash & mask_];
    entry->hash = hash;
    entry->id = id;
    entry->next = bucket.load(std::memory_order_relaxed);
    chunks_[chunk].load(std::memory_order_relaxed)[id & (kChunkEntries - 1)].store(
        entry, std::memory_order_release);
    bucket.store(entry, std::memory_order_release);
    end_id_.store(id + 1, std::memory_order_release);
    return entry;
  }

  // get() returns the entry with `id`, or nullptr for 0 or an id not yet published. Lock-free.
  Entry* get(uint32_t id) const {
    if (id == 0 || id >= end_id_.load(std::memory_order_acquire)) return nullptr;
    std::atomic<Entry*>* chunk = chunks_[id >> kChunkShift].load(std::memory_order_acquire);
    return chunk[id & (kChunkEntries - 1)].load(std::memory_order_acquire);
  }

  // end_id() is one past the largest published id (ids start at 1).
  uint32_t end_id() const { return end_id_.load(std::memory_order_acquire); }

  void before_fork() { insert_lock_.lock(); }
  void after_fork_parent() { insert_lock_.unlock(); }
  void after_fork_child() { insert_lock_.reset_after_fork(); }

 private:
  std::atomic<Entry*>* buckets_ = nullptr;
  size_t mask_ = 0;
  std::atomic<uint32_t> end_id_{1};
  SpinLock insert_lock_;
  std::atomic<std::atomic<Entry*>*> chunks_[kMaxChunks] = {};
};

// hash_mix() is a strong 64-bit finalizer (from splitmix64) for building table hashes.
inline uint64_t hash_mix(uint64_t value) {
  value ^= value >> 30;
  value *= 0xbf58476d1ce4e5b9ull;
  value ^= value >> 27;
  value *= 0x94d049bb133111ebull;
  value ^= value >> 31;
  return value;
}

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_INTERN_TABLE_H_
