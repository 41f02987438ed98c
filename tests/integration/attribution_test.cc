// Thread and task attribution: a leak made only by one named thread, or only inside one task.
#include <gtest/gtest.h>

#include "harness.h"

namespace leakscope::testing {
namespace {

nlohmann::json run_attribution(const std::string& mode) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--", fixture("attribution"), mode});
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  return dump(file);
}

TEST(Attribution, LeakOnOneNamedThreadIsOwnedByThatThreadOnly) {
  nlohmann::json document = run_attribution("thread");
  nlohmann::json site = site_at(document, "thread_leaks");
  EXPECT_EQ(site["live_bytes"], 50 * 1000);
  EXPECT_EQ(site["live_blocks"], 50);
  ASSERT_EQ(site["threads"].size(), 1u);
  EXPECT_EQ(site["threads"][0]["name"], "leaker");
  EXPECT_EQ(site["threads"][0]["live_bytes"], 50 * 1000);
  EXPECT_TRUE(sites_at(document, "thread_churns").empty());
}

TEST(Attribution, LeakInsideOneTaskIsOwnedByThatTaskName) {
  nlohmann::json document = run_attribution("task");
  nlohmann::json site = site_at(document, "thread_leaks");
  EXPECT_EQ(site["live_bytes"], 40 * 512);
  EXPECT_EQ(site["live_blocks"], 40);
  ASSERT_EQ(site["tasks"].size(), 1u);  // 40 request ids, one name
  EXPECT_EQ(site["tasks"][0]["name"], "bad_task");
  EXPECT_EQ(site["tasks"][0]["live_bytes"], 40 * 512);
  EXPECT_TRUE(sites_at(document, "thread_churns").empty());
}

TEST(Attribution, InnermostNestedTaskTagsTheAllocation) {
  nlohmann::json document = run_attribution("nested");
  std::vector<nlohmann::json> sites = sites_at(document, "thread_leaks");
  ASSERT_EQ(sites.size(), 2u);
  std::map<std::string, int64_t> by_task;
  for (const auto& site : sites) {
    ASSERT_EQ(site["tasks"].size(), 1u);
    by_task[site["tasks"][0]["name"].get<std::string>()] = site["live_bytes"].get<int64_t>();
  }
  EXPECT_EQ(by_task["inner"], 10 * 100);
  EXPECT_EQ(by_task["outer"], 5 * 100);
}

TEST(Attribution, ThirtyTwoThreadsFreeingEachOthersBlocksLeaveNoFalseLeak) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--", fixture("cross_thread_churn")});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json document = dump(file, {"--at", "end"});  // after every thread was joined
  EXPECT_TRUE(sites_at(document, "churn_allocate").empty()) << "cross-thread frees were missed";
  nlohmann::json kept = site_at(document, "keep_three");
  EXPECT_EQ(kept["live_bytes"], 32 * 3 * 100);
  EXPECT_EQ(kept["live_blocks"], 32 * 3);
  ASSERT_EQ(kept["threads"].size(), 32u);
  for (const auto& thread : kept["threads"]) EXPECT_EQ(thread["live_bytes"], 300);
}

}  // namespace
}  // namespace leakscope::testing
