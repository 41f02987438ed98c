#include "core/parked_blocks.h"

#include <atomic>

#include "core/internal_alloc.h"
#include "core/spin_lock.h"

namespace leakscope::internal {
namespace {

constexpr int kCapacityBits = 17;
constexpr size_t kCapacity = size_t{1} << kCapacityBits;
constexpr size_t kMaxCount = kCapacity / 8 * 7;  // linear probing stays short below 7/8
// How long the snapshot writer waits for the lock before leaving the blocks to a later snapshot:
// a snapshot written from a signal handler may have interrupted the lock's holder.
constexpr int kTakeAttempts = 1000;

struct ParkedSet {
  SpinLock lock;
  ParkedBlock* slots = nullptr;  // block 0: empty
  std::atomic<size_t> count{0};  // changed under the lock (no read-modify-write needed); read without it for INFO
  std::atomic<ParkedInUse> in_use{nullptr};
};

ParkedSet g_parked;

size_t home_of(uintptr_t block) { return static_cast<size_t>(((block >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - kCapacityBits)); }

// find() is the slot holding `block`, or the empty slot that ends its probe.
size_t find(uintptr_t block) {
  size_t at = home_of(block);
  while (g_parked.slots[at].block != 0 && g_parked.slots[at].block != block) at = (at + 1) & (kCapacity - 1);
  return at;
}

// erase() empties slot `at` and moves back into it the entries of its probe run that may no
// longer be found past the gap (backward-shift deletion: no tombstones to fill the table).
void erase(size_t at) {
  ParkedBlock* slots = g_parked.slots;
  size_t gap = at;
  for (size_t next = (gap + 1) & (kCapacity - 1); slots[next].block != 0; next = (next + 1) & (kCapacity - 1)) {
    size_t home = home_of(slots[next].block);
    // The entry may fill the gap when its home is not cyclically within (gap, next].
    bool stays = gap <= next ? (home > gap && home <= next) : (home > gap || home <= next);
    if (stays) continue;
    slots[gap] = slots[next];
    gap = next;
  }
  slots[gap] = ParkedBlock{0, TripleId::kNone, TripleId::kNone};
  g_parked.count.store(g_parked.count.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

}  // namespace

void parked_blocks_enable(ParkedInUse in_use) { g_parked.in_use.store(in_use, std::memory_order_release); }

bool parked_blocks_enabled() { return g_parked.in_use.load(std::memory_order_relaxed) != nullptr; }

bool parked_blocks_add(const ParkedBlock& parked) {
  if (parked.block == 0 || !parked_blocks_enabled()) return false;
  SpinLockGuard guard(g_parked.lock);
  if (g_parked.slots == nullptr) {
    g_parked.slots = static_cast<ParkedBlock*>(internal_alloc(kCapacity * sizeof(ParkedBlock)));
    if (g_parked.slots == nullptr) return false;
  }
  size_t at = find(parked.block);
  if (g_parked.slots[at].block == 0) {
    size_t count = g_parked.count.load(std::memory_order_relaxed);
    if (count >= kMaxCount) return false;
    g_parked.count.store(count + 1, std::memory_order_relaxed);
  }
  g_parked.slots[at] = parked;
  return true;
}

void parked_blocks_remove(uintptr_t block) {
  SpinLockGuard guard(g_parked.lock);
  if (g_parked.slots == nullptr || g_parked.count.load(std::memory_order_relaxed) == 0) return;
  size_t at = find(block);
  if (g_parked.slots[at].block == block) erase(at);
}

size_t parked_blocks_count() { return g_parked.count.load(std::memory_order_relaxed); }

size_t parked_blocks_take_in_use(ParkedBlock* out, size_t capacity) {
  ParkedInUse in_use = g_parked.in_use.load(std::memory_order_acquire);
  if (in_use == nullptr || !g_parked.lock.try_lock_for(kTakeAttempts)) return 0;
  size_t taken = 0;
  if (g_parked.slots != nullptr) {
    for (size_t at = 0; at < kCapacity && taken < capacity && g_parked.count.load(std::memory_order_relaxed) != 0;) {
      const ParkedBlock& parked = g_parked.slots[at];
      if (parked.block == 0 || !in_use(parked.block)) {
        ++at;
        continue;
      }
      out[taken++] = parked;
      erase(at);  // an entry from further on may now sit at `at`: look at it again
    }
  }
  g_parked.lock.unlock();
  return taken;
}

void parked_blocks_before_fork() { g_parked.lock.lock(); }

void parked_blocks_after_fork_parent() { g_parked.lock.unlock(); }

void parked_blocks_after_fork_child() { g_parked.lock.reset_after_fork(); }

}  // namespace leakscope::internal
