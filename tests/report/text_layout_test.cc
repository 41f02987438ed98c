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

}  // namespace
}  // namespace leakscope::report
