// File: leakscope/gtest.h
//
// A GoogleTest listener that fails the test that leaves memory live. Under leakscope
// (`leakscope run -- ./unit_tests`) it measures, for each test, the heap, mmap and tensor bytes
// allocated while the test ran and still live when it ends, and fails the test when they exceed
// its limit; each test's allocations on its thread carry the test's name as their task, so
// `leakscope report` names them. Without the preload it does nothing.
//
//   Link leakscope_gtest_main (it installs the listener), or leakscope_gtest and call
//     ::testing::UnitTest::GetInstance()->listeners().Append(leakscope::leak_listener());
//   after ::testing::InitGoogleTest().
//
//   The default limit is 0 bytes; LEAKSCOPE_GTEST_MAX_LEAKED=SIZE (512, 64KiB, 1MiB) sets
//   another; LEAKSCOPE_ALLOW_LEAKED(bytes) inside a test sets that test's own.
#ifndef LEAKSCOPE_GTEST_H_
#define LEAKSCOPE_GTEST_H_

#include <cstdint>

namespace testing {
class TestEventListener;
}

namespace leakscope {

// leak_listener() makes the listener (owned by GoogleTest once appended). Reads
// LEAKSCOPE_GTEST_MAX_LEAKED; a value that is not a size ends the program with a one-line error.
::testing::TestEventListener* leak_listener();

// allow_leaked() lets the running test leave `bytes` live (LEAKSCOPE_ALLOW_LEAKED).
void allow_leaked(int64_t bytes);

}  // namespace leakscope

#define LEAKSCOPE_ALLOW_LEAKED(bytes) ::leakscope::allow_leaked(bytes)

#endif  // LEAKSCOPE_GTEST_H_
