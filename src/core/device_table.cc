#include "core/device_table.h"

#include "core/internal_alloc.h"
#include "core/spin_lock.h"

namespace leakscope::internal {
namespace {

constexpr uint32_t kInitialSlots = 256;

SpinLock g_lock;
constinit DeviceBlock* g_slots = nullptr;  // open addressing, linear probing; kind kEmpty = free
constinit uint32_t g_capacity = 0;         // a power of two
constinit uint32_t g_count = 0;

uint32_t home_of(DeviceKey kind, uint64_t key) {
  uint64_t mixed = (key ^ static_cast<uint64_t>(kind) << 59) * 0x9e3779b97f4a7c15ull;
  return static_cast<uint32_t>(mixed >> 32) & (g_capacity - 1);
}

// find_slot() is the slot holding (kind, key), or the free slot where it would go.
uint32_t find_slot(DeviceKey kind, uint64_t key) {
  uint32_t index = home_of(kind, key);
  while (g_slots[index].kind != DeviceKey::kEmpty && (g_slots[index].kind != kind || g_slots[index].key != key)) {
    index = (index + 1) & (g_capacity - 1);
  }
  return index;
}

bool grow() {
  uint32_t capacity = g_capacity == 0 ? kInitialSlots : g_capacity * 2;
  auto* slots = static_cast<DeviceBlock*>(internal_alloc(capacity * sizeof(DeviceBlock)));
  if (slots == nullptr) return false;
  DeviceBlock* old_slots = g_slots;
  uint32_t old_capacity = g_capacity;
  g_slots = slots;
  g_capacity = capacity;
  for (uint32_t i = 0; i < old_capacity; ++i) {
    if (old_slots[i].kind != DeviceKey::kEmpty) g_slots[find_slot(old_slots[i].kind, old_slots[i].key)] = old_slots[i];
  }
  if (old_slots != nullptr) internal_free(old_slots, old_capacity * sizeof(DeviceBlock));
  return true;
}

// erase_at() empties a slot and shifts later members of its probe run back, so that lookups need
// no tombstones.
void erase_at(uint32_t index) {
  uint32_t mask = g_capacity - 1;
  uint32_t hole = index;
  for (uint32_t next = (hole + 1) & mask; g_slots[next].kind != DeviceKey::kEmpty; next = (next + 1) & mask) {
    uint32_t home = home_of(g_slots[next].kind, g_slots[next].key);
    // The member at `next` may move to the hole when its home is not in (hole, next].
    bool stays = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
    if (stays) continue;
    g_slots[hole] = g_slots[next];
    hole = next;
  }
  g_slots[hole].kind = DeviceKey::kEmpty;
  --g_count;
}

// remove_matching() takes out every block `selects` takes, calling on_removed for each (under the
// lock). A removal shifts later members back, around the end of the array too, so passes repeat
// until one finds nothing (contexts are destroyed, and mappings unmapped, rarely).
template <typename Selects>
int remove_matching(Selects selects, void (*on_removed)(const DeviceBlock&, void*), void* data) {
  int removed = 0;
  for (bool found = true; found;) {
    found = false;
    for (uint32_t index = 0; index < g_capacity;) {
      DeviceBlock& block = g_slots[index];
      if (block.kind == DeviceKey::kEmpty || !selects(block)) {
        ++index;
        continue;
      }
      DeviceBlock gone = block;
      erase_at(index);  // a later member may have moved here: look at this slot again
      on_removed(gone, data);
      ++removed;
      found = true;
    }
  }
  return removed;
}

}  // namespace

bool device_table_insert(const DeviceBlock& block, DeviceBlock* replaced) {
  SpinLockGuard guard(g_lock);
  if ((g_count + 1) * 4 > g_capacity * 3 && !grow()) return false;
  uint32_t index = find_slot(block.kind, block.key);
  bool was_there = g_slots[index].kind != DeviceKey::kEmpty;
  if (was_there) {
    *replaced = g_slots[index];
  } else {
    ++g_count;
  }
  g_slots[index] = block;
  return was_there;
}

bool device_table_remove(DeviceKey kind, uint64_t key, DeviceBlock* removed) {
  SpinLockGuard guard(g_lock);
  if (g_count == 0) return false;
  uint32_t index = find_slot(kind, key);
  if (g_slots[index].kind == DeviceKey::kEmpty) return false;
  *removed = g_slots[index];
  erase_at(index);
  return true;
}

int device_table_remove_context(uint64_t context, void (*on_removed)(const DeviceBlock&, void*), void* data) {
  if (context == 0) return 0;
  SpinLockGuard guard(g_lock);
  // A VMM handle outlives the context it was made in until released; reservations too.
  return remove_matching([context](const DeviceBlock& block) {
    return block.context == context && block.kind != DeviceKey::kDriverHandle && block.kind != DeviceKey::kReservedRange;
  }, on_removed, data);
}

int device_table_remove_all(void (*on_removed)(const DeviceBlock&, void*), void* data) {
  SpinLockGuard guard(g_lock);
  return remove_matching([](const DeviceBlock&) { return true; }, on_removed, data);
}

bool device_table_release(uint64_t handle, DeviceBlock* removed) {
  SpinLockGuard guard(g_lock);
  if (g_count == 0) return false;
  uint32_t index = find_slot(DeviceKey::kDriverHandle, handle);
  if (g_slots[index].kind == DeviceKey::kEmpty) return false;
  if (g_slots[index].begin != 0) {
    g_slots[index].released = true;
    return false;
  }
  *removed = g_slots[index];
  erase_at(index);
  return true;
}

void device_table_map(uint64_t handle, uintptr_t begin) {
  SpinLockGuard guard(g_lock);
  if (g_count == 0) return;
  uint32_t index = find_slot(DeviceKey::kDriverHandle, handle);
  if (g_slots[index].kind != DeviceKey::kEmpty && g_slots[index].begin == 0) g_slots[index].begin = begin;
}

void device_table_unmap(uintptr_t begin, uint64_t size, void (*on_removed)(const DeviceBlock&, void*), void* data) {
  SpinLockGuard guard(g_lock);
  auto mapped_here = [begin, size](const DeviceBlock& block) {
    return block.kind == DeviceKey::kDriverHandle && block.begin >= begin && block.begin < begin + size;
  };
  remove_matching([&](const DeviceBlock& block) { return mapped_here(block) && block.released; }, on_removed, data);
  for (uint32_t index = 0; index < g_capacity; ++index) {
    if (mapped_here(g_slots[index])) g_slots[index].begin = 0;
  }
}

void device_table_visit(void (*visit)(const DeviceBlock* blocks, uint32_t count, void* data), void* data) {
  SpinLockGuard guard(g_lock);
  // Runs of occupied slots are handed over as they lie.
  uint32_t run = 0;
  for (uint32_t index = 0; index <= g_capacity; ++index) {
    if (index < g_capacity && g_slots[index].kind != DeviceKey::kEmpty) continue;
    if (index > run) visit(g_slots + run, index - run, data);
    run = index + 1;
  }
}

void device_table_before_fork() { g_lock.lock(); }
void device_table_after_fork_parent() { g_lock.unlock(); }
void device_table_after_fork_child() { g_lock.reset_after_fork(); }

}  // namespace leakscope::internal
