// How frames are named in a line of text: a function without its parameter list, and leakscope's
// markers whole.
#include "report/site_format.h"

#include <gtest/gtest.h>

namespace leakscope::report {
namespace {

TEST(FrameName, AFunctionIsNamedWithoutItsParametersAndWithItsLine) {
  SymbolizedFrame frame;
  frame.function = "(anonymous namespace)::parse_record(char const*, unsigned long)";
  frame.file = "/src/steady_leak_ci.c";
  frame.line = 17;
  EXPECT_EQ(frame_name(frame, 60), "parse_record (steady_leak_ci.c:17)");
}

TEST(FrameName, AMarkersWordsInParenthesesAreKept) {
  SymbolizedFrame frame;
  frame.function = "[import; frames in between left out (startup_depth)]";
  EXPECT_EQ(frame_name(frame, 60), "[import; frames in between left out (startup_depth)]");
  EXPECT_EQ(function_text(frame, 100), "[import; frames in between left out (startup_depth)]");
}

}  // namespace
}  // namespace leakscope::report
