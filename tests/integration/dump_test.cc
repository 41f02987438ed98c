// `leakscope dump --top N --min-bytes B`: only the largest sites, the totals still of all of them.
#include <gtest/gtest.h>

#include "harness.h"

namespace leakscope::testing {
namespace {

TEST(Dump, TopAndMinBytesKeepOnlyTheLargestSites) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("alloc_patterns"), "malloc"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json all = dump(file);
  ASSERT_GE(all["sites"].size(), 3u);
  nlohmann::json top = dump(file, {"--top", "2"});
  ASSERT_EQ(top["sites"].size(), 2u);
  EXPECT_EQ(top["sites"][0], all["sites"][0]);
  EXPECT_EQ(top["sites"][1], all["sites"][1]);
  EXPECT_EQ(top["live_bytes_by_domain"], all["live_bytes_by_domain"]) << "totals count every site";
  EXPECT_EQ(all["sites_left_out"], 0);
  EXPECT_EQ(top["sites_left_out"], all["sites"].size() - 2);
  Outcome text = leakscope({"dump", "--top", "2", file});
  EXPECT_NE(text.out.find("sites: the 2 largest shown, " + std::to_string(all["sites"].size() - 2) + " more left out"),
            std::string::npos)
      << text.out;

  int64_t second = all["sites"][1]["live_bytes"].get<int64_t>();
  size_t at_least_second = 0;
  for (const auto& site : all["sites"]) at_least_second += site["live_bytes"].get<int64_t>() >= second;
  nlohmann::json large = dump(file, {"--min-bytes", std::to_string(second)});
  EXPECT_EQ(large["sites"].size(), at_least_second);
  for (const auto& site : large["sites"]) EXPECT_GE(site["live_bytes"].get<int64_t>(), second);

  Outcome bad = leakscope({"dump", "--min-bytes", "lots", file});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--min-bytes: not a size"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace leakscope::testing
