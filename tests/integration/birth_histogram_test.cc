// The birth histogram a stream carries must add up to each site's live bytes at every snapshot,
// and put each block at the time it was born, whichever of its cells the writer recomputed.
#include <gtest/gtest.h>

#include "harness.h"

namespace leakscope::testing {
namespace {

int64_t births_sum(const nlohmann::json& site) {
  int64_t sum = 0;
  for (const auto& birth : site["live_bytes_by_birth"]) sum += birth["bytes"].get<int64_t>();
  return sum;
}

TEST(BirthHistogram, AddsUpToLiveBytesAtEverySnapshotAndDatesEachBlock) {
  constexpr int kRounds = 12;  // enough emptied cells (500 a round) for the writer to compact its map
  std::string file = scratch_dir() + "/births.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "10m", "--", fixture("birth_ages"), std::to_string(kRounds)});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json last = dump(file);
  int snapshots = last["snapshots"].get<int>();
  ASSERT_GE(snapshots, kRounds + 1);

  for (int at = 1; at <= snapshots; ++at) {
    nlohmann::json document = dump(file, {"--at", std::to_string(at)});
    for (const auto& site : document["sites"]) {
      EXPECT_EQ(births_sum(site), site["live_bytes"].get<int64_t>())
          << "snapshot " << at << ", site " << site["frames"][0]["function"];
    }
    // Snapshot 1 follows startup; snapshot 1 + k follows round k, in which the pool lost 5 blocks.
    int rounds_done = std::min(at - 1, kRounds);
    EXPECT_EQ(site_at(document, "pooled_blocks")["live_bytes"], (100 - 5 * rounds_done) * 500) << "snapshot " << at;
  }

  // Startup blocks and what is left of the pool were all born in the first epoch, at time 0.
  for (const char* function : {"startup_blocks", "pooled_blocks"}) {
    nlohmann::json site = site_at(last, function);
    ASSERT_EQ(site["live_bytes_by_birth"].size(), 1u) << function << ": " << site["live_bytes_by_birth"].dump();
    EXPECT_EQ(site["live_bytes_by_birth"][0]["birth_s"].get<double>(), 0.0) << function;
  }
  EXPECT_EQ(site_at(last, "startup_blocks")["live_bytes"], 300 * 1000);
  EXPECT_EQ(site_at(last, "pooled_blocks")["live_bytes"], (100 - 5 * kRounds) * 500);

  // The leak is 1000 bytes from each round, each round in an epoch (and a bin) of its own.
  nlohmann::json leak = site_at(last, "round_leak");
  EXPECT_EQ(leak["live_bytes"], kRounds * 1000);
  ASSERT_EQ(leak["live_bytes_by_birth"].size(), static_cast<size_t>(kRounds)) << leak["live_bytes_by_birth"].dump();
  double previous = -1;  // round 1 is born when snapshot 1 closed startup, which can be within the first bin
  for (const auto& birth : leak["live_bytes_by_birth"]) {
    EXPECT_EQ(birth["bytes"], 1000);
    EXPECT_GT(birth["birth_s"].get<double>(), previous);
    previous = birth["birth_s"].get<double>();
  }
  EXPECT_TRUE(sites_at(last, "churn").empty());
  std::vector<nlohmann::json> short_lived = sites_at(last, "short_lived");
  EXPECT_EQ(short_lived.size(), 500u);
  for (const auto& site : short_lived) EXPECT_EQ(site["live_bytes"], 32);
}

}  // namespace
}  // namespace leakscope::testing
