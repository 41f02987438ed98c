// main() for GoogleTest binaries that link leakscope_gtest_main: gtest_main's, with the leak
// listener installed.
#include <gtest/gtest.h>

#include "leakscope/gtest.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(leakscope::leak_listener());
  return RUN_ALL_TESTS();
}
