// Sampled mode: live bytes per site within 10% of exact mode for every site above 1% of the heap.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>

#include "harness.h"
#include "support/unwrapped.h"

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
  EXPECT_EQ(site_at(exact, "blocks_near_64k")["live_blocks"], 1000);
  EXPECT_EQ(site_at(exact, "grown_buffers")["live_bytes"], 80000 * 2048);
  EXPECT_EQ(site_at(exact, "shrunk_buffers")["live_bytes"], 80000 * 2048);
  EXPECT_TRUE(sites_at(exact, "temporaries").empty());

  nlohmann::json sampled = run_sites({"--sample", "64KiB"});
  EXPECT_EQ(sampled["sample_interval_bytes"], 64 * 1024);
  // 10% is at least 3.9 standard errors for each of these sites (docs/RUNTIME.md, sampled mode: a
  // site of n blocks of s bytes rests on about n(1 - e^(-s/R)) recorded ones); the fewest, 100 000
  // blocks of 1 KiB, rest on about 1 550. The buffers resized by realloc rest on about 2 460 (80 000
  // of 2 KiB, ±2%): with 40 000 (±2.8%) two full suites each had one fall just past 10%.
  // blocks_near_64k's blocks were each counted as 1 block, not the 1.40 they stand for: 713 of 1000.
  // A buffer resized by realloc is recorded with the chance of its last size however it grew or
  // shrank (grown_buffers, shrunk_buffers): each resize is sampled afresh.
  for (const char* function :
       {"many_small_blocks", "medium_blocks", "few_big_blocks", "blocks_near_64k", "grown_buffers", "shrunk_buffers"}) {
    double truth = site_at(exact, function)["live_bytes"].get<double>();
    double estimate = site_at(sampled, function)["live_bytes"].get<double>();
    EXPECT_NEAR(estimate / truth, 1.0, 0.10) << function;
    double blocks = site_at(exact, function)["live_blocks"].get<double>();
    EXPECT_NEAR(site_at(sampled, function)["live_blocks"].get<double>() / blocks, 1.0, 0.10) << function;
  }
  // Temporaries are freed: whatever was sampled of them is gone again.
  EXPECT_TRUE(sites_at(sampled, "temporaries").empty());
}

// A sampled estimate says how many recorded allocations it rests on, and a gate on a sampled
// run says that a leak under a few intervals may not have been recorded at all.
TEST(Sampling, EstimatesSayWhatTheyRestOnAndTheGateWhatItCannotSee) {
  std::string file = scratch_dir() + "/sampled.lsc";
  ASSERT_EQ(leakscope({"run", "--sample", "64KiB", "-o", file, "--", fixture("sampling_sites")}).exit_code, 0);
  Outcome json = leakscope({"report", "--format", "json", "--at", "end", file});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json report = nlohmann::json::parse(json.out);
  std::map<std::string, nlohmann::json> groups;
  for (const auto& group : report["groups"]) {
    if (group["first_user_frame"].is_object()) groups[group["first_user_frame"]["function"]] = group;
  }
  ASSERT_TRUE(groups.count("few_big_blocks")) << json.out;
  EXPECT_EQ(groups["few_big_blocks"]["recorded_blocks"], 3) << "each 8 MiB block recorded whole";
  EXPECT_LT(groups["few_big_blocks"]["relative_error"].get<double>(), 1e-6) << "recorded whole, so exact";
  ASSERT_TRUE(groups.count("many_small_blocks")) << json.out;
  // 97.7 MiB of 1 KiB blocks rests on about one recorded block per 64 KiB: ±2.5%.
  EXPECT_NEAR(groups["many_small_blocks"]["recorded_blocks"].get<double>(), 100000.0 / 64, 150);
  EXPECT_NEAR(groups["many_small_blocks"]["relative_error"].get<double>(), 1 / std::sqrt(100000.0 / 64), 0.003);
  Outcome text = leakscope({"report", "--at", "end", file});
  EXPECT_NE(text.out.find("24.00 MiB in 3 blocks (recorded whole)"), std::string::npos) << text.out;
  // many_small_blocks: ±2.5%, one way or the other.
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(heap [0-9.]+ MiB in \d+ blocks \(±[23]%: about \d+ recorded\))"))) << text.out;
  EXPECT_NE(unwrapped(text.out).find("tracked (sampled: the largest of estimates, it may read high) at"), std::string::npos)
      << text.out;
  Outcome gate = leakscope({"check", "--max-leaked", "128KiB", "--at", "end", file});
  EXPECT_NE(gate.err.find("note: a sampled run (one allocation recorded per 64.00 KiB on average)"), std::string::npos) << gate.err;
  EXPECT_NE(gate.err.find("so limits under 256.00 KiB pass without telling"), std::string::npos) << gate.err;
}

TEST(Sampling, TheGatesLineOfASampledLeakSaysHowPreciseItIs) {
  std::string file = scratch_dir() + "/sampled_gate.lsc";
  Outcome gate = leakscope({"run", "--sample", "4KiB", "--check", "-o", file, "--", fixture("steady_leak_ci"), "250"});
  EXPECT_NE(gate.exit_code, 0) << gate.out << gate.err;
  // Leaked records of 256 bytes, about one recorded per 16: a few hundred recorded, ±5-7%.
  std::smatch found;
  std::string out = gate.out + gate.err;
  ASSERT_TRUE(std::regex_search(out, found, std::regex(R"(leak parse_record \(steady_leak_ci\.c:\d+\): [0-9.]+ [KM]iB \(±(\d+)%\))")))
      << out;
  EXPECT_GE(std::stoi(found[1]), 2);
  EXPECT_LE(std::stoi(found[1]), 15);
}

TEST(Sampling, BadSampleSizeIsRejected) {
  Outcome outcome = leakscope({"run", "--option", "sample=lots", "--", "true"});
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.err.find("sample"), std::string::npos) << outcome.err;
}

}  // namespace
}  // namespace leakscope::testing
