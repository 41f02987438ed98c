// `leakscope dump --top N --min-bytes B`: only the largest sites, the totals still of all of them.
#include <gtest/gtest.h>

#include <algorithm>

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

// A budget for a quarter of the stream's live sites at a time, at least one: it is read in more
// than four parts, as it defines more stacks than it has live sites.
std::string quarter_of(const nlohmann::json& one_read) {
  size_t live = one_read["sites"].size() + one_read["sites_left_out"].get<size_t>();
  return std::to_string(std::max<size_t>(live / 4, 1) * 400);  // report/dump_passes.h: kDumpBytesPerSite
}

TEST(Dump, AStreamWithMoreSitesThanItsSiteMemoryIsReadInPartsAndShowsWhatOneReadShows) {
  std::string directory = scratch_dir();
  // A forking server scanned for lost blocks (its child's stream takes what the parent had
  // defined from the parent's), and a Python program (its code objects' frames, thousands of sites).
  Outcome server = leakscope({"run", "-o", directory + "/server.lsc", "--", fixture("forked_child_leak")},
                             {{"LEAKSCOPE_OPTIONS", "leak_check=1"}});
  ASSERT_EQ(server.exit_code, 0) << server.err;
  Outcome python = leakscope({"run", "-o", directory + "/python.lsc", "--", "/usr/bin/python3", "-c",
                              "import json\nkept = [json.dumps({'n': n}) for n in range(5000)]"});
  ASSERT_EQ(python.exit_code, 0) << python.err;
  std::vector<std::string> files = files_in(directory);
  ASSERT_EQ(files.size(), 3u);
  for (const std::string& name : files) {
    SCOPED_TRACE(name);
    std::string file = directory + "/" + name;
    nlohmann::json one_read = dump(file, {"--top", "5", "--site-memory", "0"});
    if (name == "python.lsc") ASSERT_GE(one_read["sites_left_out"].get<size_t>(), 500u);
    std::string budget = quarter_of(one_read);
    EXPECT_EQ(dump(file, {"--top", "5", "--site-memory", budget}), one_read);
    Outcome text = leakscope({"dump", "--top", "5", "--site-memory", "0", file});
    Outcome text_in_parts = leakscope({"dump", "--top", "5", "--site-memory", budget, file});
    ASSERT_EQ(text_in_parts.exit_code, 0) << text_in_parts.err;
    EXPECT_EQ(text_in_parts.out, text.out);
  }
  Outcome bad = leakscope({"dump", "--top", "5", "--site-memory", "a little", directory + "/server.lsc"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--site-memory: not a size"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace leakscope::testing
