// The GoogleTest leak listener (leakscope_gtest) in a real test binary: under leakscope it fails
// the tests that leave memory live, by their own limits; without the preload it does nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"

namespace leakscope::testing {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(GTestListener, FailsTheTestsThatLeaveMemoryLiveAndOnlyThem) {
  std::string file = scratch_dir() + "/tests.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("gtest_suite")});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;  // gtest's status: tests failed
  EXPECT_TRUE(has(run.out, "[       OK ] Parser.ParsesAndFreesItsRecords")) << run.out;
  EXPECT_TRUE(has(run.out, "[  FAILED  ] Parser.KeepsARegisteredRecord")) << run.out;
  EXPECT_TRUE(has(run.out, "leakscope: the test left 4096 bytes live, over its limit of 0")) << run.out;
  EXPECT_TRUE(has(run.out, "what it allocated on its own thread has the task \"Parser.KeepsARegisteredRecord\"")) << run.out;
  EXPECT_TRUE(has(run.out, "leakscope: the test left 1000 bytes live, over its limit of 0")) << run.out;
  // Reported at the test's own line, not the listener's.
  std::string source = read_file(fixture_source("gtest_suite.cc"));
  int line = 1 + static_cast<int>(std::count(source.begin(), source.begin() + source.find("TEST(Parser, KeepsARegisteredRecord)"), '\n'));
  EXPECT_TRUE(has(run.out, "gtest_suite.cc:" + std::to_string(line) + ": Failure")) << run.out;
  EXPECT_TRUE(has(run.out, "[       OK ] Cache.WarmsWithinItsDeclaredLimit")) << run.out;
  EXPECT_TRUE(has(run.out, "[  FAILED  ] Worker.KeepsABufferFromAnotherThread")) << run.out;
  EXPECT_TRUE(has(run.out, "[       OK ] Worker.JoinsAndFreesEverything")) << run.out;
  EXPECT_TRUE(has(run.out, "2 FAILED TESTS")) << run.out;

  // The leaking test's allocation carries its name as the task.
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  bool tagged = false;
  nlohmann::json document = nlohmann::json::parse(report.out);
  for (const auto& site : document["sites"]) {
    for (const auto& task : site["tasks"]) {
      if (task["name"] == "Parser.KeepsARegisteredRecord" && site["live_bytes"] == 4096) tagged = true;
    }
  }
  EXPECT_TRUE(tagged);
}

TEST(GTestListener, ADefaultLimitFromTheEnvironmentAndABadOne) {
  Outcome loose = leakscope({"run", "-o", scratch_dir() + "/tests.lsc", "--", fixture("gtest_suite")},
                            {{"LEAKSCOPE_GTEST_MAX_LEAKED", "8KiB"}});
  EXPECT_EQ(loose.exit_code, 0) << loose.out << loose.err;
  EXPECT_TRUE(has(loose.out, "[  PASSED  ] 5 tests.")) << loose.out;

  Outcome bad = run_program({fixture("gtest_suite")}, {{"LEAKSCOPE_GTEST_MAX_LEAKED", "lots"}});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "leakscope: error: LEAKSCOPE_GTEST_MAX_LEAKED: not a size (such as 512, 64KiB, 1MiB): lots\n");
}

// The last test's fixture lets go of what it collected just before main returns. The listener
// passes the test, and the whole-run gate agrees: that was the test's own cleanup, not a shutdown
// that freed a leak.
TEST(GTestListener, LastTestsFixtureCleanupIsNotALeakOfTheWholeRun) {
  Outcome run = leakscope({"run", "-o", scratch_dir() + "/tests.lsc", "--check", "--", fixture("gtest_fixture_teardown")});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(has(run.out, "[  PASSED  ] 1 test.")) << run.out;
  EXPECT_TRUE(has(run.out, "PASS max-leaked: 0 B leaked in 0 groups")) << run.out;
}

TEST(GTestListener, WithoutThePreloadEveryTestPasses) {
  Outcome plain = run_program({fixture("gtest_suite")}, {{"LD_PRELOAD", ""}});
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_TRUE(has(plain.out, "[  PASSED  ] 5 tests.")) << plain.out;
  EXPECT_FALSE(has(plain.out, "leakscope:")) << plain.out;
}

}  // namespace
}  // namespace leakscope::testing
