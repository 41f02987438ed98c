// The writer's tree of stack tails: shared callers become shared nodes, and every node's parent
// is older than it, as the stream's STACK_NODES section requires.
#include "core/stack_node_tree.h"

#include <gtest/gtest.h>

#include <vector>

namespace leakscope::internal {
namespace {

std::vector<uint64_t> frames_of(const StackNodeTree& tree, uint32_t node) {
  std::vector<uint64_t> frames;
  for (; node != 0; node = tree.node(node).parent) frames.push_back(tree.node(node).frame);
  return frames;
}

TEST(StackNodeTree, StacksSharingTheirCallersShareTheirNodes) {
  StackNodeTree tree;
  const uintptr_t first[] = {0x10, 0x20, 0x30, 0x40};
  const uintptr_t second[] = {0x11, 0x20, 0x30, 0x40};  // another allocation in the same callers
  const uintptr_t third[] = {0x12, 0x21, 0x30, 0x40};
  uint32_t a = tree.node_for(first, 4);
  EXPECT_EQ(tree.end_id(), 5u);
  uint32_t b = tree.node_for(second, 4);
  EXPECT_EQ(tree.end_id(), 6u) << "one new node: the innermost frame";
  uint32_t c = tree.node_for(third, 4);
  EXPECT_EQ(tree.end_id(), 8u);
  EXPECT_EQ(tree.node_for(first, 4), a);
  EXPECT_EQ(frames_of(tree, a), std::vector<uint64_t>(first, first + 4));
  EXPECT_EQ(frames_of(tree, b), std::vector<uint64_t>(second, second + 4));
  EXPECT_EQ(frames_of(tree, c), std::vector<uint64_t>(third, third + 4));
  EXPECT_EQ(tree.node(a).parent, tree.node(b).parent);
}

TEST(StackNodeTree, ParentsAreOlderThanTheirChildrenAcrossManyStacks) {
  StackNodeTree tree;
  std::vector<uint32_t> leaves;
  for (uintptr_t i = 0; i < 50000; ++i) {
    const uintptr_t frames[] = {0x1000 + i, 0x2000 + i % 97, 0x3000 + i % 7, 0x4000};
    leaves.push_back(tree.node_for(frames, 4));
  }
  for (uint32_t id = 1; id < tree.end_id(); ++id) EXPECT_LT(tree.node(id).parent, id);
  for (uintptr_t i = 0; i < 50000; ++i) {
    std::vector<uint64_t> expected = {0x1000 + i, 0x2000 + i % 97, 0x3000 + i % 7, 0x4000};
    ASSERT_EQ(frames_of(tree, leaves[i]), expected);
  }
  // The outer frames: 1 + 7 + (at most) 97 * 7 distinct callers, and one node per leaf.
  EXPECT_LE(tree.end_id() - 1, 50000u + 1 + 7 + 97 * 7);
}

}  // namespace
}  // namespace leakscope::internal
