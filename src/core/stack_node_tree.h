// File: stack_node_tree.h
//
// StackNodeTree: the outer frames of stacks as a tree of nodes, each one frame and the node of its
// caller, for the stream (STACK_NODES, docs/FORMAT.md). Thousands of distinct stacks share their
// outer frames; as nodes those frames are written once instead of once per stack (a python3
// importing torch: 600 k stacks, 30 M frames, 1.6 M nodes). Used by the snapshot writer only,
// under its lock: not thread-safe. Memory is internal (never the program's malloc).
#ifndef LEAKSCOPE_CORE_STACK_NODE_TREE_H_
#define LEAKSCOPE_CORE_STACK_NODE_TREE_H_

#include <stdint.h>

#include "core/internal_alloc.h"

namespace leakscope::internal {

class StackNodeTree {
 public:
  struct Node {
    uint64_t frame;
    uint32_t parent;  // 0: the outermost frame
  };

  // node_for() returns the node of the innermost of `frames[0..depth)` (innermost first), adding
  // the nodes it lacks; 0 when memory is exhausted (the nodes added so far stay valid).
  uint32_t node_for(const uintptr_t* frames, uint32_t depth);

  // Nodes are dense from 1 in the order they were added; a parent is always older than its child.
  uint32_t end_id() const { return nodes_.size() == 0 ? 1 : static_cast<uint32_t>(nodes_.size()); }
  const Node& node(uint32_t id) const { return nodes_[id]; }

 private:
  uint32_t find_or_add(uint32_t parent, uint64_t frame);
  bool grow_index();

  InternalArray<Node> nodes_;       // by id; index 0 unused
  InternalArray<uint32_t> index_;   // open addressing over node ids, 0 = empty; at most half full
};

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_STACK_NODE_TREE_H_
