#include "core/startup_phase.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/stream_format.h"

namespace leakscope::internal {
namespace {

std::vector<uintptr_t> cut(std::vector<uintptr_t> frames, int kept, uint64_t marker, int from, int end, int max_depth) {
  frames.resize(frames.size() + 1);  // room for the marker, as the recorder's buffer has
  int depth = startup_stack_cut(frames.data(), static_cast<int>(frames.size()) - 1, kept, marker, from, end, max_depth);
  frames.resize(static_cast<size_t>(depth));
  return frames;
}

TEST(StartupStackCut, KeepsTheInnermostFramesTheMarkerAndTheCallers) {
  EXPECT_EQ(cut({10, 11, 12, 13, 14, 15}, 1, kImportFrame, 4, 6, 64),
            (std::vector<uintptr_t>{10, kImportFrame, 14, 15}));
  // Without callers: the innermost frames and the marker only.
  EXPECT_EQ(cut({10, 11}, 1, kBeforeMainFrame, 1, 1, 64), (std::vector<uintptr_t>{10, kBeforeMainFrame}));
  // Callers right after the frames kept move up by one.
  EXPECT_EQ(cut({10, 11, 12}, 1, kLibraryLoadFrame, 1, 3, 64), (std::vector<uintptr_t>{10, kLibraryLoadFrame, 11, 12}));
  // A stack shorter than the frames to keep keeps them all.
  EXPECT_EQ(cut({10}, 2, kBeforeMainFrame, 2, 1, 64), (std::vector<uintptr_t>{10, kBeforeMainFrame}));
}

TEST(StartupStackCut, NeverExceedsTheDepthAndDropsTheOutermostFirst) {
  EXPECT_EQ(cut({10, 11, 12, 13, 14, 15}, 1, kImportFrame, 2, 6, 4), (std::vector<uintptr_t>{10, kImportFrame, 12, 13}));
  // As many frames kept as the depth: no room for the marker, the stack stays as deep as allowed.
  EXPECT_EQ(cut({10, 11, 12}, 2, kImportFrame, 2, 3, 2), (std::vector<uintptr_t>{10, 11}));
}

TEST(StartupPhase, DlopenNestsAndOutranksBeforeMain) {
  uint64_t outside = startup_phase_marker();
  StartupScope before_main = startup_phase_scope();
  EXPECT_NE(before_main.id, 0u);
  startup_phase_library_load_begins(0x1000);
  StartupScope load = startup_phase_scope();
  startup_phase_library_load_begins(0x2000);  // an initializer that runs code that loads another
  StartupScope nested = startup_phase_scope();
  EXPECT_EQ(startup_phase_marker(), kLibraryLoadFrame);
  startup_phase_library_load_ends();
  StartupScope resumed = startup_phase_scope();
  EXPECT_EQ(startup_phase_marker(), kLibraryLoadFrame);
  startup_phase_library_load_ends();
  EXPECT_EQ(startup_phase_marker(), outside);
  EXPECT_EQ(startup_phase_scope().id, before_main.id);
  // Each load is a scope of its own, and so is what is left of the outer one after a nested one:
  // what its stacks keep past the innermost frame differs in each. The outer one goes on under the
  // frame it began with, not the one the nested load was called from.
  EXPECT_NE(load.id, before_main.id);
  EXPECT_NE(nested.id, load.id);
  EXPECT_NE(resumed.id, load.id);
  EXPECT_NE(resumed.id, nested.id);
  EXPECT_EQ(load.interpreter_frame, 0x1000u);
  EXPECT_EQ(nested.interpreter_frame, 0x2000u);
  EXPECT_EQ(resumed.interpreter_frame, 0x1000u);
  startup_phase_main_begins();
  EXPECT_EQ(startup_phase_marker(), 0u);
  EXPECT_EQ(startup_phase_scope().id, 0u);
  startup_phase_library_load_begins(0x1000);
  StartupScope after_main = startup_phase_scope();
  startup_phase_library_load_ends();
  EXPECT_NE(after_main.id, 0u);
  EXPECT_NE(after_main.id, load.id);
  EXPECT_EQ(startup_phase_scope().id, 0u);
  // A load no interpreted code called is no scope: the native frames past its marker are unwound to.
  startup_phase_library_load_begins(0);
  EXPECT_EQ(startup_phase_marker(), kLibraryLoadFrame);
  EXPECT_EQ(startup_phase_scope().id, 0u);
  startup_phase_library_load_ends();
}

}  // namespace
}  // namespace leakscope::internal
