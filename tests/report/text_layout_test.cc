#include "report/text_layout.h"

#include <gtest/gtest.h>

namespace leakscope::report {
namespace {

// Names come from the program (NVTX ranges, thread names, tasks): one may hold a line break or a
// terminal escape, which a report line must show, not obey.
TEST(TextLayout, ANamesControlCharactersAreShownAsEscapes) {
  EXPECT_EQ(one_line("decode"), "decode");
  EXPECT_EQ(one_line("load\nmodel\tv2\r"), "load\\nmodel\\tv2\\r");
  EXPECT_EQ(one_line("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(one_line(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(one_line("del\x7f"), "del\\x7f");
  EXPECT_EQ(one_line("zwölf"), "zwölf") << "UTF-8 passes as it is";
}

TEST(TextLayout, ASizeIsNeverWrappedAwayFromItsUnit) {
  // Each number just fits the line: its unit would begin the next.
  auto columns = [](size_t count) { return std::string(count, 'x'); };
  EXPECT_EQ(wrap(columns(93) + " 250.00 MiB at 0.0 s", "      ", ""), columns(93) + "\n      250.00 MiB at 0.0 s\n");
  EXPECT_EQ(wrap(columns(94) + " +2.66 MiB/min", "  ", ""), columns(94) + "\n  +2.66 MiB/min\n");
  EXPECT_EQ(wrap(columns(96) + " 104 B (startup)", "  ", ""), columns(96) + "\n  104 B (startup)\n");
  // Numbers that are not sizes break as any word does.
  EXPECT_EQ(wrap(columns(96) + " 12 blocks", "  ", ""), columns(96) + " 12\n  blocks\n");
  EXPECT_EQ(wrap(columns(96) + " 3 Bees", "  ", ""), columns(96) + " 3\n  Bees\n");
  EXPECT_EQ(wrap(columns(97) + " .. B", "  ", ""), columns(97) + " ..\n  B\n");
}

}  // namespace
}  // namespace leakscope::report
