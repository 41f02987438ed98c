// Sampled mode: live bytes per site within 10% of exact mode for every site above 1% of the heap.
#include <gtest/gtest.h>

#include <cmath>

#include "harness.h"

namespace leakscope::testing {
namespace {

nlohmann::json run_sites(const std::vector<std::string>& options) {
  std::string file = scratch_dir() + "/run.lsc";
  std::vector<std::string> args{"run", "-o", file};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {"--", fixture("sampling_sites")});
  Outcome outcome = leakscope(args);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  // The end: by default a site is shown at its largest since a shutdown began freeing before main
  // returned, which on a loaded machine can be a snapshot taken while one temporary was live.
  return dump(file, {"--at", "end"});
}

TEST(Sampling, LiveBytesPerSiteAreWithinTenPercentOfExactMode) {
  nlohmann::json exact = run_sites({});
  EXPECT_EQ(site_at(exact, "many_small_blocks")["live_bytes"], 100000 * 1024);
  EXPECT_EQ(site_at(exact, "medium_blocks")["live_bytes"], 200 * 256 * 1024);
  EXPECT_EQ(site_at(exact, "few_big_blocks")["live_bytes"], 3 * (8 << 20));
  EXPECT_TRUE(sites_at(exact, "temporaries").empty());

  nlohmann::json sampled = run_sites({"--sample", "64KiB"});
  EXPECT_EQ(sampled["sample_interval_bytes"], 64 * 1024);
  for (const char* function : {"many_small_blocks", "medium_blocks", "few_big_blocks"}) {
    double truth = site_at(exact, function)["live_bytes"].get<double>();
    double estimate = site_at(sampled, function)["live_bytes"].get<double>();
    EXPECT_NEAR(estimate / truth, 1.0, 0.10) << function;
    double blocks = site_at(exact, function)["live_blocks"].get<double>();
    EXPECT_NEAR(site_at(sampled, function)["live_blocks"].get<double>() / blocks, 1.0, 0.10) << function;
  }
  // Temporaries are freed: whatever was sampled of them is gone again.
  EXPECT_TRUE(sites_at(sampled, "temporaries").empty());
}

TEST(Sampling, BadSampleSizeIsRejected) {
  Outcome outcome = leakscope({"run", "--option", "sample=lots", "--", "true"});
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.err.find("sample"), std::string::npos) << outcome.err;
}

}  // namespace
}  // namespace leakscope::testing
