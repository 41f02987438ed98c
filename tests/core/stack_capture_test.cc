// Built with frame pointers (see tests/CMakeLists.txt), so the walk has a chain to follow.
#include "core/stack_capture.h"

#include <gtest/gtest.h>

#include "core/thread_registry.h"

namespace leakscope::internal {
namespace {

__attribute__((noinline)) int walk_here(ThreadState* thread, uintptr_t* frames) {
  int depth = stack_capture_frame_pointers(thread, frames, 16);
  asm volatile("" ::: "memory");  // keep this frame
  return depth;
}

__attribute__((noinline)) int walk_two_deep(ThreadState* thread, uintptr_t* frames) {
  int depth = walk_here(thread, frames);
  asm volatile("" ::: "memory");
  return depth;
}

// stack_capture_init() is not called: it would take this whole test program for leakscope's own
// code (which the walk skips), where in the preload it is only libleakscope.so.
TEST(FramePointerWalk, FollowsTheChainOfFramePointerCode) {
  ThreadState thread{};
  uintptr_t frames[16];
  int depth = walk_two_deep(&thread, frames);
  ASSERT_GE(depth, 3);
  EXPECT_NE(thread.stack_end, 0u);
  // frames[0] is in walk_here, frames[1] in walk_two_deep: both inside this test's code.
  EXPECT_GT(frames[0], reinterpret_cast<uintptr_t>(&walk_here));
  EXPECT_GT(frames[1], reinterpret_cast<uintptr_t>(&walk_two_deep));
}

TEST(FramePointerWalk, GivesUpWhenTheChainLeavesTheStack) {
  ThreadState thread{};
  thread.stack_begin = 0x1000;  // a stack range the real frames are not in
  thread.stack_end = 0x2000;
  uintptr_t frames[16];
  EXPECT_EQ(walk_two_deep(&thread, frames), 0) << "an untrusted walk must hand over to libunwind";
}

// Code without frame pointers leaves anything in the register; here a caller's saved frame
// pointer is a garbage value near 2^64, where `frame + 16` wraps around. The walk must stop, not
// read it.
__attribute__((noinline)) int walk_under_a_garbage_frame(ThreadState* thread, uintptr_t* frames) {
  auto* saved = static_cast<volatile uintptr_t*>(__builtin_frame_address(0));
  uintptr_t real = saved[0];
  saved[0] = ~uintptr_t{0} - 15;
  int depth = walk_here(thread, frames);
  asm volatile("" ::: "memory");
  saved[0] = real;
  return depth;
}

TEST(FramePointerWalk, StopsAtAGarbageFramePointerNearTheTopOfTheAddressSpace) {
  ThreadState thread{};
  uintptr_t frames[16];
  // Return addresses into walk_here, walk_under_a_garbage_frame and this test; then a stop.
  EXPECT_EQ(walk_under_a_garbage_frame(&thread, frames), 3);
}

}  // namespace
}  // namespace leakscope::internal
