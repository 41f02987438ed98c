// The pytest plugin (`pytest -p leakscope`) on a real test suite under Debian's python3 and
// pytest: the test that leaves memory live beyond its limit fails, naming the Python line.
#include <gtest/gtest.h>

#include <fstream>

#include "harness.h"

namespace leakscope::testing {
namespace {

const char* const kPython = "/usr/bin/python3";

std::vector<std::string> pytest_args(const std::vector<std::string>& extra) {
  std::vector<std::string> args{kPython, "-m", "pytest", "-p", "leakscope", "-p", "no:cacheprovider", "-q",
                                fixture_source("pytest_suite")};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(PytestPlugin, AMarkedTestThatKeepsItsResponsesFailsAtTheLineThatAllocatedThem) {
  std::vector<std::string> run{"run", "-o", scratch_dir() + "/tests.lsc", "--"};
  for (const std::string& arg : pytest_args({})) run.push_back(arg);
  Outcome outcome = leakscope(run);
  EXPECT_EQ(outcome.exit_code, 1) << outcome.out << outcome.err;  // pytest's status: tests failed
  int line = marker_line("pytest_suite/test_responses.py", "remember");
  EXPECT_TRUE(has(outcome.out, "FAILED")) << outcome.out;
  EXPECT_TRUE(has(outcome.out, "test_responses.py::test_keeps_every_response")) << outcome.out;
  EXPECT_TRUE(has(outcome.out, "over its limit of 64.00 KiB; the most of it allocated at remember_response "
                               "(test_responses.py:" + std::to_string(line) + ")"))
      << outcome.out;
  EXPECT_TRUE(has(outcome.out, "1 failed, 3 passed")) << outcome.out;
  EXPECT_FALSE(has(outcome.out, "Warning")) << outcome.out;
  EXPECT_FALSE(has(outcome.err, "more stream")) << outcome.err;  // the plugin's own read of the stream is untraced
}

TEST(PytestPlugin, ADefaultLimitChecksEveryTestAndABadOneIsAUsageError) {
  std::vector<std::string> run{"run", "-o", scratch_dir() + "/tests.lsc", "--"};
  for (const std::string& arg : pytest_args({"--leakscope-max-leaked=64KiB"})) run.push_back(arg);
  Outcome outcome = leakscope(run);
  EXPECT_EQ(outcome.exit_code, 1) << outcome.out << outcome.err;
  EXPECT_TRUE(has(outcome.out, "test_responses.py::test_keeps_one_large_response")) << outcome.out;
  EXPECT_TRUE(has(outcome.out, "2 failed, 2 passed")) << outcome.out;

  Outcome bad = run_program(pytest_args({"--leakscope-max-leaked=lots"}),
                            {{"PYTHONPATH", std::string(LEAKSCOPE_BUILD_DIR) + "/share/leakscope/python"}});
  EXPECT_EQ(bad.exit_code, 4) << bad.out << bad.err;  // pytest's usage error
  EXPECT_TRUE(has(bad.err, "--leakscope-max-leaked: not a size (such as 512, 64KiB, 1MiB): 'lots'")) << bad.err;
}

// A marker whose limit is not a size fails its test with one message.
TEST(PytestPlugin, AMarkerWithABadLimitFailsItsTestWithOneMessage) {
  std::string directory = scratch_dir();
  std::ofstream(directory + "/test_bad_marker.py") << "import pytest\n\n\n@pytest.mark.leakscope(max_leaked=\"lots\")\n"
                                                      "def test_marked():\n    pass\n";
  Outcome outcome = leakscope({"run", "-o", directory + "/tests.lsc", "--", kPython, "-m", "pytest", "-p", "leakscope", "-p",
                               "no:cacheprovider", "-q", directory + "/test_bad_marker.py"});
  EXPECT_EQ(outcome.exit_code, 1) << outcome.out << outcome.err;
  EXPECT_TRUE(has(outcome.out, "@pytest.mark.leakscope(max_leaked=...): not a size (such as 512, 64KiB, 1MiB): 'lots'"))
      << outcome.out;
  EXPECT_FALSE(has(outcome.out, "During handling of the above exception")) << outcome.out;
  EXPECT_TRUE(has(outcome.out, "1 failed")) << outcome.out;
}

TEST(PytestPlugin, WithoutThePreloadEveryTestPasses) {
  Outcome plain = run_program(pytest_args({"--leakscope-max-leaked=0"}),
                              {{"PYTHONPATH", std::string(LEAKSCOPE_BUILD_DIR) + "/share/leakscope/python"}});
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_TRUE(has(plain.out, "4 passed")) << plain.out;
}

}  // namespace
}  // namespace leakscope::testing
