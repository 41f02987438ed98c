#include "core/stack_node_tree.h"

#include "core/intern_table.h"

namespace leakscope::internal {
namespace {

uint64_t node_hash(uint32_t parent, uint64_t frame) { return hash_mix(frame * 0x9e3779b97f4a7c15ull + parent); }

}  // namespace

uint32_t StackNodeTree::node_for(const uintptr_t* frames, uint32_t depth) {
  uint32_t node = 0;
  for (uint32_t i = depth; i > 0; --i) {
    node = find_or_add(node, frames[i - 1]);
    if (node == 0) return 0;
  }
  return node;
}

uint32_t StackNodeTree::find_or_add(uint32_t parent, uint64_t frame) {
  if (nodes_.size() == 0 && !nodes_.resize(1)) return 0;
  if ((nodes_.size() + 1) * 2 > index_.size() && !grow_index()) return 0;
  size_t mask = index_.size() - 1;
  for (size_t slot = node_hash(parent, frame) & mask;; slot = (slot + 1) & mask) {
    uint32_t id = index_[slot];
    if (id == 0) {
      id = static_cast<uint32_t>(nodes_.size());
      if (!nodes_.push_back(Node{frame, parent})) return 0;
      index_[slot] = id;
      return id;
    }
    if (nodes_[id].frame == frame && nodes_[id].parent == parent) return id;
  }
}

bool StackNodeTree::grow_index() {
  InternalArray<uint32_t> grown;
  if (!grown.resize(index_.size() == 0 ? 1024 : index_.size() * 2)) return false;
  size_t mask = grown.size() - 1;
  for (uint32_t id = 1; id < nodes_.size(); ++id) {
    size_t slot = node_hash(nodes_[id].parent, nodes_[id].frame) & mask;
    while (grown[slot] != 0) slot = (slot + 1) & mask;
    grown[slot] = id;
  }
  index_.swap(grown);
  grown.release();
  return true;
}

}  // namespace leakscope::internal
