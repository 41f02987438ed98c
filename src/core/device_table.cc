#include "core/device_table.h"

#include "core/intern_table.h"
#include "core/probed_slots.h"
#include "core/spin_lock.h"

namespace leakscope::internal {
namespace {

// A block is found by its kind and key together: a handle and an address may hold the same number.
struct BlockKey {
  DeviceKey kind;
  uint64_t key;
  bool operator==(const BlockKey&) const = default;
};

struct BlockKeys {
  static BlockKey key(const DeviceBlock& block) { return BlockKey{block.kind, block.key}; }
  // Mixed whole: device blocks are aligned to 2 MiB or more, and the home slot is read from the
  // hash's middle bits.
  static uint64_t hash(const BlockKey& key) { return hash_mix(key.key ^ static_cast<uint64_t>(key.kind) << 59); }
};

SpinLock g_lock;
constinit ProbedSlots<DeviceBlock, BlockKeys, 256> g_blocks;  // an empty slot's kind is kEmpty

// find_slot() is the slot holding (kind, key), or the free slot where it would go.
uint32_t find_slot(DeviceKey kind, uint64_t key) {
  BlockKey wanted{kind, key};
  return g_blocks.find(wanted, BlockKeys::hash(wanted));
}

// remove_matching() takes out every block `selects` takes, calling on_removed for each (under the
// lock). A removal shifts later members back, around the end of the array too, so passes repeat
// until one finds nothing (contexts are destroyed, and mappings unmapped, rarely).
template <typename Selects>
int remove_matching(Selects selects, void (*on_removed)(const DeviceBlock&, void*), void* data) {
  int removed = 0;
  for (bool found = true; found;) {
    found = false;
    for (uint32_t index = 0; index < g_blocks.capacity;) {
      DeviceBlock& block = g_blocks.slots[index];
      if (block.kind == DeviceKey::kEmpty || !selects(block)) {
        ++index;
        continue;
      }
      DeviceBlock gone = block;
      g_blocks.erase(index);  // a later member may have moved here: look at this slot again
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
  if (!g_blocks.make_room()) return false;
  uint32_t index = find_slot(block.kind, block.key);
  bool was_there = g_blocks.slots[index].kind != DeviceKey::kEmpty;
  if (was_there) {
    *replaced = g_blocks.slots[index];
  } else {
    ++g_blocks.count;
  }
  g_blocks.slots[index] = block;
  return was_there;
}

bool device_table_remove(DeviceKey kind, uint64_t key, DeviceBlock* removed) {
  SpinLockGuard guard(g_lock);
  if (g_blocks.count == 0) return false;
  uint32_t index = find_slot(kind, key);
  if (g_blocks.slots[index].kind == DeviceKey::kEmpty) return false;
  *removed = g_blocks.slots[index];
  g_blocks.erase(index);
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
  if (g_blocks.count == 0) return false;
  DeviceBlock& block = g_blocks.slots[find_slot(DeviceKey::kDriverHandle, handle)];
  if (block.kind == DeviceKey::kEmpty) return false;
  if (block.begin != 0) {
    block.released = true;
    return false;
  }
  *removed = block;
  g_blocks.erase(static_cast<uint32_t>(&block - g_blocks.slots));
  return true;
}

void device_table_map(uint64_t handle, uintptr_t begin) {
  SpinLockGuard guard(g_lock);
  if (g_blocks.count == 0) return;
  DeviceBlock& block = g_blocks.slots[find_slot(DeviceKey::kDriverHandle, handle)];
  if (block.kind != DeviceKey::kEmpty && block.begin == 0) block.begin = begin;
}

void device_table_unmap(uintptr_t begin, uint64_t size, void (*on_removed)(const DeviceBlock&, void*), void* data) {
  SpinLockGuard guard(g_lock);
  auto mapped_here = [begin, size](const DeviceBlock& block) {
    return block.kind == DeviceKey::kDriverHandle && block.begin >= begin && block.begin < begin + size;
  };
  remove_matching([&](const DeviceBlock& block) { return mapped_here(block) && block.released; }, on_removed, data);
  for (uint32_t index = 0; index < g_blocks.capacity; ++index) {
    if (mapped_here(g_blocks.slots[index])) g_blocks.slots[index].begin = 0;
  }
}

void device_table_visit(void (*visit)(const DeviceBlock* blocks, uint32_t count, void* data), void* data) {
  SpinLockGuard guard(g_lock);
  // Runs of occupied slots are handed over as they lie.
  uint32_t run = 0;
  for (uint32_t index = 0; index <= g_blocks.capacity; ++index) {
    if (index < g_blocks.capacity && g_blocks.slots[index].kind != DeviceKey::kEmpty) continue;
    if (index > run) visit(g_blocks.slots + run, index - run, data);
    run = index + 1;
  }
}

void device_table_before_fork() { g_lock.lock(); }
void device_table_after_fork_parent() { g_lock.unlock(); }
void device_table_after_fork_child() { g_lock.reset_after_fork(); }

}  // namespace leakscope::internal
