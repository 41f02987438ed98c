#include "core/stack_depot.h"

#include <string.h>

#include "core/intern_table.h"

namespace leakscope::internal {
namespace {

constinit InternTable<StackEntry> g_stacks;

// One multiply-add per frame keeps the dependency chain short on the hot path; the finalizer
// then spreads the result over the bucket bits. Equal hashes are still compared frame by frame.
uint64_t hash_frames(const uintptr_t* frames, int depth) {
  uint64_t hash = static_cast<uint64_t>(depth);
  for (int i = 0; i < depth; ++i) hash = (hash ^ frames[i]) * 0x9e3779b97f4a7c15ull;
  return hash_mix(hash);
}

}  // namespace

bool depot_init() { return g_stacks.init(18); }

StackId depot_intern(const uintptr_t* frames, int depth) {
  if (depth <= 0) return StackId::kNone;
  size_t frame_bytes = static_cast<size_t>(depth) * sizeof(uintptr_t);
  StackEntry* entry = g_stacks.find_or_insert(
      hash_frames(frames, depth),
      [&](const StackEntry* candidate) {
        return candidate->depth == static_cast<uint32_t>(depth) &&
               memcmp(candidate->frames, frames, frame_bytes) == 0;
      },
      [&]() -> StackEntry* {  // stacks are never freed: no size-class rounding
        auto* made = static_cast<StackEntry*>(internal_alloc_permanent(sizeof(StackEntry) + frame_bytes));
        if (made == nullptr) return nullptr;
        made->depth = static_cast<uint32_t>(depth);
        memcpy(made->frames, frames, frame_bytes);
        return made;
      });
  return entry == nullptr ? StackId::kNone : static_cast<StackId>(entry->id);
}

const StackEntry* depot_get(StackId id) { return g_stacks.get(raw(id)); }

uint32_t depot_end_id() { return g_stacks.end_id(); }

void depot_before_fork() { g_stacks.before_fork(); }
void depot_after_fork_parent() { g_stacks.after_fork_parent(); }
void depot_after_fork_child() { g_stacks.after_fork_child(); }

}  // namespace leakscope::internal
