#include "core/stack_depot.h"

#include <string.h>

#include "core/intern_table.h"

namespace leakscope::internal {
namespace {

constinit InternTable<StackEntry> g_stacks;
constinit InternTable<StackTail> g_tails;

// One multiply-add per frame keeps the dependency chain short on the hot path; the finalizer
// then spreads the result over the bucket bits. Equal hashes are still compared frame by frame.
uint64_t hash_frames(const uintptr_t* frames, uint32_t depth) {
  uint64_t hash = depth;
  for (uint32_t i = 0; i < depth; ++i) hash = (hash ^ frames[i]) * 0x9e3779b97f4a7c15ull;
  return hash_mix(hash);
}

bool same_frames(const uintptr_t* stored, const uintptr_t* frames, uint32_t count) {
  return memcmp(stored, frames, count * sizeof(uintptr_t)) == 0;
}

// intern_tail() is called with g_stacks' insert lock held; g_tails' lock nests inside it (the
// fork handlers take them in the same order).
const StackTail* intern_tail(const uintptr_t* frames, uint32_t depth) {
  return g_tails.find_or_insert(
      hash_frames(frames, depth),
      [&](const StackTail* tail) { return tail->depth == depth && same_frames(tail->frames, frames, depth); },
      [&]() -> StackTail* {
        auto* made = static_cast<StackTail*>(internal_alloc_permanent(sizeof(StackTail) + depth * sizeof(uintptr_t)));
        if (made == nullptr) return nullptr;
        made->depth = depth;
        memcpy(made->frames, frames, depth * sizeof(uintptr_t));
        return made;
      });
}

}  // namespace

bool depot_init() { return g_stacks.init(12) && g_tails.init(10); }

// StackMatch tells whether an entry holds exactly `frames[0..depth)`.
struct StackMatch {
  const uintptr_t* frames;
  uint32_t depth;
  uint32_t head_depth;
  uint32_t tail_depth;

  StackMatch(const uintptr_t* stack_frames, uint32_t stack_depth)
      : frames(stack_frames),
        depth(stack_depth),
        head_depth(stack_depth < kStackHeadFrames ? stack_depth : kStackHeadFrames),
        tail_depth(stack_depth - head_depth) {}

  bool operator()(const StackEntry* candidate) const {
    return candidate->depth == depth && same_frames(candidate->head, frames, head_depth) &&
           (tail_depth == 0 || same_frames(candidate->tail->frames, frames + head_depth, tail_depth));
  }
};

StackId depot_find(const uintptr_t* frames, int depth) {
  if (depth <= 0) return StackId::kNone;
  StackMatch match(frames, static_cast<uint32_t>(depth));
  const StackEntry* entry = g_stacks.find(hash_frames(frames, match.depth), match);
  return entry == nullptr ? StackId::kNone : static_cast<StackId>(entry->id);
}

StackId depot_intern(const uintptr_t* frames, int signed_depth) {
  if (signed_depth <= 0) return StackId::kNone;
  StackMatch match(frames, static_cast<uint32_t>(signed_depth));
  uint32_t depth = match.depth, head_depth = match.head_depth, tail_depth = match.tail_depth;
  StackEntry* entry = g_stacks.find_or_insert(
      hash_frames(frames, depth), match,
      [&]() -> StackEntry* {  // stacks are never freed: no size-class rounding
        const StackTail* tail = nullptr;
        if (tail_depth != 0 && (tail = intern_tail(frames + head_depth, tail_depth)) == nullptr) return nullptr;
        auto* made =
            static_cast<StackEntry*>(internal_alloc_permanent(sizeof(StackEntry) + head_depth * sizeof(uintptr_t)));
        if (made == nullptr) return nullptr;
        made->depth = depth;
        made->tail = tail;
        memcpy(made->head, frames, head_depth * sizeof(uintptr_t));
        return made;
      });
  return entry == nullptr ? StackId::kNone : static_cast<StackId>(entry->id);
}

const StackEntry* depot_get(StackId id) { return g_stacks.get(raw(id)); }

uint32_t depot_end_id() { return g_stacks.end_id(); }

void depot_before_fork() {
  g_stacks.before_fork();
  g_tails.before_fork();
}
void depot_after_fork_parent() {
  g_tails.after_fork_parent();
  g_stacks.after_fork_parent();
}
void depot_after_fork_child() {
  g_tails.after_fork_child();
  g_stacks.after_fork_child();
}

}  // namespace leakscope::internal
