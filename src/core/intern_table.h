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
// The bucket array grows fourfold when entries outnumber buckets, so chains stay short in a
// process with a million distinct stacks and the array stays small in one with a hundred. Growing
// relinks entries into the new array while readers may walk the old one: a reader can then be led
// from an old chain into a new one and miss its entry, but never loops (every chain, old or new,
// ends in null at every moment) and never matches a wrong entry. find() may therefore miss an
// entry during a grow; find_or_insert() looks again under the lock, so it never does, and callers
// of find() fall back to it. Old arrays are kept (readers may still be on them): a third of the
// live array's size in total.
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

  // init() allocates 2^bucket_shift buckets to begin with. Not thread-safe; called once by
  // runtime init.
  bool init(uint32_t bucket_shift) {
    Buckets* buckets = make_buckets(size_t{1} << bucket_shift);
    if (buckets == nullptr) return false;
    buckets_.store(buckets, std::memory_order_release);
    return true;
  }

  bool ready() const { return buckets_.load(std::memory_order_acquire) != nullptr; }

  // find() returns the entry with `hash` for which match(entry) holds, or nullptr (which, while
  // another thread grows the table, can also mean "not seen": see above). Lock-free.
  template <typename Match>
  Entry* find(uint64_t hash, Match&& match) const {
    const Buckets* buckets = buckets_.load(std::memory_order_acquire);
    for (Entry* entry = buckets->heads[hash & buckets->mask].load(std::memory_order_acquire); entry != nullptr;
         entry = next_of(entry).load(std::memory_order_acquire)) {
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
    if (Entry* found = find(hash, match)) return found;  // no grow can run now: exact
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
    Buckets* buckets = buckets_.load(std::memory_order_relaxed);
    std::atomic<Entry*>& bucket = buckets->heads[hash & buckets->mask];
    entry->hash = hash;
    entry->id = id;
    next_of(entry).store(bucket.load(std::memory_order_relaxed), std::memory_order_relaxed);
    chunks_[chunk].load(std::memory_order_relaxed)[id & (kChunkEntries - 1)].store(
        entry, std::memory_order_release);
    bucket.store(entry, std::memory_order_release);
    end_id_.store(id + 1, std::memory_order_release);
    if (id > buckets->mask) grow(buckets);  // more entries than buckets; a failed grow is harmless
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

  // bucket_count() is the size of the current bucket array (for tests).
  size_t bucket_count() const { return buckets_.load(std::memory_order_acquire)->mask + 1; }

  void before_fork() { insert_lock_.lock(); }
  void after_fork_parent() { insert_lock_.unlock(); }
  void after_fork_child() { insert_lock_.reset_after_fork(); }

 private:
  struct Buckets {
    size_t mask;
    std::atomic<Entry*> heads[];
  };

  static std::atomic_ref<Entry*> next_of(Entry* entry) { return std::atomic_ref<Entry*>(entry->next); }

  static Buckets* make_buckets(size_t count) {
    auto* buckets = static_cast<Buckets*>(internal_alloc_populated(sizeof(Buckets) + count * sizeof(std::atomic<Entry*>)));
    if (buckets != nullptr) buckets->mask = count - 1;
    return buckets;
  }

  // grow() relinks every entry into an array four times larger and publishes it. Called with the
  // insert lock held.
  void grow(Buckets* old) {
    Buckets* grown = make_buckets((old->mask + 1) * 4);
    if (grown == nullptr) return;
    for (size_t i = 0; i <= old->mask; ++i) {
      for (Entry* entry = old->heads[i].load(std::memory_order_relaxed); entry != nullptr;) {
        Entry* following = next_of(entry).load(std::memory_order_relaxed);
        std::atomic<Entry*>& head = grown->heads[entry->hash & grown->mask];
        next_of(entry).store(head.load(std::memory_order_relaxed), std::memory_order_release);
        head.store(entry, std::memory_order_relaxed);
        entry = following;
      }
    }
    buckets_.store(grown, std::memory_order_release);
  }

  std::atomic<Buckets*> buckets_{nullptr};
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
