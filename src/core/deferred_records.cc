#include "core/deferred_records.h"

#include <atomic>

#include "core/internal_alloc.h"
#include "core/probed_slots.h"
#include "core/spin_lock.h"
#include "core/sys.h"

namespace leakscope::internal {
namespace {

// 2 MiB of records: the queue fills only when the writer gets no core for a while, and the
// appending thread then settles it itself.
constexpr uint64_t kQueueCapacity = uint64_t{1} << 16;
static_assert(kQueueCapacity >= 4 * kDeferredKnockAt, "the writer is knocked well before the queue fills");

// Ranges are found by the MiB of address space they touch. An arena of pymalloc is 1 MiB, so a
// MiB meets at most two of them; smaller ranges of older allocators fit up to four. A range that
// would make a fifth is not added (its blocks are recorded at once).
constexpr int kChunkShift = 20;
constexpr int kRangesPerChunk = 4;

struct Range {
  uintptr_t begin = 0;  // 0: unused
  uintptr_t end = 0;
};

struct Chunk {
  uint64_t key = 0;  // address >> kChunkShift; 0: empty (no range lies in the first MiB)
  Range ranges[kRangesPerChunk];
};

struct ChunkKeys {
  static uint64_t key(const Chunk& chunk) { return chunk.key; }
  static uint64_t hash(uint64_t key) { return key * 0x9e3779b97f4a7c15ull; }
};

// ChunkTable: the MiBs that ranges touch. A few hundred for a process with gigabytes of Python
// objects.
class ChunkTable {
 public:
  bool covers(uintptr_t pointer) const {
    const Chunk* chunk = find(pointer >> kChunkShift);
    if (chunk == nullptr) return false;
    for (const Range& range : chunk->ranges) {
      if (pointer >= range.begin && pointer < range.end) return true;
    }
    return false;
  }

  bool add(uintptr_t begin, uintptr_t end) {
    uint64_t first = begin >> kChunkShift, last = (end - 1) >> kChunkShift;
    for (uint64_t key = first; key <= last; ++key) {
      if (!add_to_chunk(key, Range{begin, end})) {
        for (uint64_t added = first; added < key; ++added) remove_from_chunk(added, begin);
        return false;
      }
    }
    return true;
  }

  void remove(uintptr_t begin, uintptr_t end) {
    uint64_t first = begin >> kChunkShift, last = (end - 1) >> kChunkShift;
    for (uint64_t key = first; key <= last; ++key) remove_from_chunk(key, begin);
  }

 private:
  Chunk* find(uint64_t key) const {
    if (slots_.count == 0) return nullptr;
    Chunk& chunk = slots_.slots[slots_.find(key, ChunkKeys::hash(key))];
    return chunk.key == key ? &chunk : nullptr;
  }

  bool add_to_chunk(uint64_t key, Range range) {
    if (Chunk* known = find(key)) {
      for (Range& place : known->ranges) {
        if (place.begin == 0) {
          place = range;
          return true;
        }
      }
      return false;
    }
    if (!slots_.make_room()) return false;
    Chunk& chunk = slots_.slots[slots_.find(key, ChunkKeys::hash(key))];
    chunk.key = key;
    chunk.ranges[0] = range;
    ++slots_.count;
    return true;
  }

  void remove_from_chunk(uint64_t key, uintptr_t begin) {
    Chunk* chunk = find(key);
    if (chunk == nullptr) return;
    bool empty = true;
    for (Range& range : chunk->ranges) {
      if (range.begin == begin) range = Range{};
      if (range.begin != 0) empty = false;
    }
    if (empty) slots_.erase(static_cast<uint32_t>(chunk - slots_.slots));
  }

  ProbedSlots<Chunk, ChunkKeys, 64> slots_;
};

// The queue: appended to under g_append_lock, applied under g_settle_lock, which is taken after
// g_append_lock when both are (a full queue settles from inside an append).
constinit SpinLock g_append_lock;
constinit SpinLock g_settle_lock;
constinit ChunkTable g_ranges;  // under g_append_lock
// Set once, under g_append_lock; read without it too (whether there is a queue at all), hence atomic.
constinit std::atomic<DeferredRecord*> g_queue{nullptr};
ApplyDeferred g_apply = nullptr;
void (*g_knock)() = nullptr;
// Every record queued (deferred_records_queue_all()): wanted from the start, begun at the
// kAloneAfterAllocations-th allocation (or at once when the queue is there already), both cleared
// under g_append_lock when a second thread comes, once what was queued is applied.
constexpr uint64_t kAloneAfterAllocations = 8192;
constinit std::atomic<bool> g_alone_wanted{false};
constinit std::atomic<bool> g_alone{false};
constinit std::atomic<uint64_t> g_allocations_before_alone{0};
// When every record is queued and the queue is found full twice within this, the writer does not
// keep up (under g_append_lock: when it was last found full).
constexpr uint64_t kWriterBehindNs = 100'000'000;
uint64_t g_last_full_ns = 0;
alignas(64) constinit std::atomic<uint64_t> g_tail{0};  // next place appended to
alignas(64) constinit std::atomic<uint64_t> g_head{0};  // next record applied

// settle_held() applies what is queued, in the order it was appended, up to place `until` and at
// most `most` records; true when it reached `until`. The caller holds g_settle_lock.
bool settle_held(uint64_t until, uint64_t most) {
  uint64_t head = g_head.load(std::memory_order_relaxed);
  if (head >= until) return true;  // another thread applied them
  uint64_t end = until - head > most ? head + most : until;
  while (head < end) {
    uint64_t place = head & (kQueueCapacity - 1);
    uint64_t run = end - head < kQueueCapacity - place ? end - head : kQueueCapacity - place;
    g_apply(&g_queue.load(std::memory_order_relaxed)[place], run);
    head += run;
    g_head.store(head, std::memory_order_release);
  }
  return head >= until;
}

// settle_all_held() applies everything queued; the caller holds g_settle_lock.
void settle_all_held() { settle_held(g_tail.load(std::memory_order_acquire), UINT64_MAX); }

// append_held() queues `record`, settling a full queue first; the caller holds g_append_lock.
// True when the writer should be knocked.
bool append_held(const DeferredRecord& record) {
  uint64_t tail = g_tail.load(std::memory_order_relaxed);
  if (tail - g_head.load(std::memory_order_acquire) == kQueueCapacity) {
    SpinLockGuard settling(g_settle_lock);
    settle_all_held();
  }
  g_queue.load(std::memory_order_relaxed)[tail & (kQueueCapacity - 1)] = record;
  g_tail.store(tail + 1, std::memory_order_release);
  return tail + 1 - g_head.load(std::memory_order_relaxed) == kDeferredKnockAt;
}

// end_alone_held() stops queuing every record, applying what is queued first; the caller holds
// g_append_lock.
void end_alone_held() {
  g_alone_wanted.store(false, std::memory_order_relaxed);
  if (!g_alone.load(std::memory_order_relaxed)) return;
  {
    SpinLockGuard settling(g_settle_lock);
    settle_all_held();
  }
  // Cleared last: a thread that reads it cleared records at once, after all that was queued.
  g_alone.store(false, std::memory_order_release);
}

// map_queue() maps the queue; the caller holds g_append_lock.
bool map_queue() {
  auto* queue = static_cast<DeferredRecord*>(internal_alloc_permanent(kQueueCapacity * sizeof(DeferredRecord)));
  g_queue.store(queue, std::memory_order_release);
  return queue != nullptr;
}

}  // namespace

bool deferred_records_init(ApplyDeferred apply, void (*knock)()) {
  SpinLockGuard guard(g_append_lock);
  if (g_queue.load(std::memory_order_relaxed) != nullptr) return true;
  g_apply = apply;
  g_knock = knock;
  return map_queue();
}

void deferred_records_queue_all(ApplyDeferred apply, void (*knock)()) {
  SpinLockGuard guard(g_append_lock);
  if (g_apply == nullptr) {
    g_apply = apply;
    g_knock = knock;
  }
  g_alone_wanted.store(true, std::memory_order_release);
}

bool deferred_records_alone() { return g_alone.load(std::memory_order_relaxed); }

bool deferred_records_append_alone(const DeferredRecord& record) {
  if (!g_alone_wanted.load(std::memory_order_relaxed)) return false;
  if (!g_alone.load(std::memory_order_relaxed)) {
    // A program that makes few blocks is not worth the queue's memory.
    if (g_queue.load(std::memory_order_relaxed) == nullptr &&
        g_allocations_before_alone.fetch_add(1, std::memory_order_relaxed) + 1 < kAloneAfterAllocations) {
      return false;
    }
    SpinLockGuard guard(g_append_lock);
    if (!g_alone_wanted.load(std::memory_order_relaxed)) return false;  // a second thread came meanwhile
    if (g_queue.load(std::memory_order_relaxed) == nullptr) {
      if (!map_queue()) {
        g_alone_wanted.store(false, std::memory_order_relaxed);
        return false;
      }
    }
    g_alone.store(true, std::memory_order_relaxed);
  }
  return deferred_records_append(record);
}

void deferred_records_end_alone() {
  if (!g_alone_wanted.load(std::memory_order_acquire)) return;
  SpinLockGuard guard(g_append_lock);
  end_alone_held();
}

bool deferred_records_add_range(uintptr_t begin, size_t length) {
  if (g_queue.load(std::memory_order_acquire) == nullptr || length == 0 || begin >> kChunkShift == 0) return false;
  SpinLockGuard guard(g_append_lock);
  return g_ranges.add(begin, begin + length);
}

void deferred_records_remove_range(uintptr_t begin, size_t length) {
  if (g_queue.load(std::memory_order_acquire) == nullptr || length == 0) return;
  SpinLockGuard guard(g_append_lock);
  {
    SpinLockGuard settling(g_settle_lock);
    settle_all_held();
  }
  g_ranges.remove(begin, begin + length);
}

bool deferred_records_append(const DeferredRecord& record) {
  if (g_queue.load(std::memory_order_acquire) == nullptr) return false;
  bool knock;
  {
    SpinLockGuard guard(g_append_lock);
    bool alone = g_alone.load(std::memory_order_relaxed);
    if (alone && g_tail.load(std::memory_order_relaxed) - g_head.load(std::memory_order_acquire) == kQueueCapacity) {
      // Full: the thread applies it itself (append_held()), as when the writer was busy or got no
      // core for a while. Full again soon after, the writer does not keep up (a program that does
      // little but allocate), and the thread would wait for it at every record: records are made
      // at once from now on, once these are applied.
      uint64_t now = sys::monotonic_ns();
      if (g_last_full_ns != 0 && now - g_last_full_ns < kWriterBehindNs) {
        end_alone_held();
        alone = false;
      }
      g_last_full_ns = now;
    }
    if (record.kind != DeferredKind::kTakeEnd && !alone && !g_ranges.covers(record.pointer)) return false;
    knock = append_held(record);
  }
  if (knock) g_knock();
  return true;
}

uint64_t deferred_records_pending() {
  return g_tail.load(std::memory_order_relaxed) - g_head.load(std::memory_order_relaxed);
}

void deferred_records_settle() {
  if (g_queue.load(std::memory_order_acquire) == nullptr || deferred_records_pending() == 0) return;
  // In runs, the lock let go between them: a thread that finds the queue full waits for one run,
  // not for all that was queued.
  constexpr uint64_t kRun = 4096;
  uint64_t until = g_tail.load(std::memory_order_acquire);
  for (;;) {
    SpinLockGuard settling(g_settle_lock);
    if (settle_held(until, kRun)) return;
  }
}

bool deferred_records_try_settle() {
  if (g_queue.load(std::memory_order_acquire) == nullptr || deferred_records_pending() == 0) return true;
  if (!g_settle_lock.try_lock_for(100)) return false;
  settle_all_held();
  g_settle_lock.unlock();
  return true;
}

void deferred_records_visit_pending(void (*visit)(const DeferredRecord& record, void* context), void* context) {
  const DeferredRecord* queue = g_queue.load(std::memory_order_acquire);
  if (queue == nullptr) return;
  uint64_t tail = g_tail.load(std::memory_order_acquire);
  for (uint64_t place = g_head.load(std::memory_order_acquire); place != tail; ++place) {
    visit(queue[place & (kQueueCapacity - 1)], context);
  }
}

void deferred_records_before_fork() {
  g_append_lock.lock();
  g_settle_lock.lock();
}

void deferred_records_after_fork_parent() {
  g_settle_lock.unlock();
  g_append_lock.unlock();
}

void deferred_records_after_fork_child() {
  g_settle_lock.reset_after_fork();
  g_append_lock.reset_after_fork();
}

}  // namespace leakscope::internal
