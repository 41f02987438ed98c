// A dump read in parts (report/dump_passes.h) against hand-built streams of many call paths: what
// it shows is what one read shows, in a bounded number of reads whatever its budget.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/stream_format.h"
#include "report/dump_passes.h"
#include "report/snapshot_choice.h"
#include "report/stream_reader.h"
#include "support/stream_builder.h"

namespace leakscope::report {
namespace {

using namespace leakscope::internal;
using namespace leakscope::testing;

// The sites a dump of `path` shows, as (site id, live bytes), and how many reads it took.
std::pair<std::vector<std::pair<uint32_t, int64_t>>, size_t> dumped(const std::string& path, const DumpSelection& selection) {
  StreamReader reader(path);
  ChosenSnapshot at = choose_snapshot(SnapshotChoice{}, reader.skim_snapshots(), path);
  DumpRead read(reader, at, selection);
  std::vector<std::pair<uint32_t, int64_t>> shown;
  NextDumpSite next = read.sites();
  for (DumpSite site; next(&site);) shown.emplace_back(site.summary.site, site.summary.live_bytes);
  return {shown, read.passes()};
}

TEST(DumpPasses, ATinyBudgetStillReadsTheStreamInABoundedNumberOfParts) {
  std::string path = (std::filesystem::temp_directory_path() / ("leakscope-dump-passes-" + std::to_string(getpid()) + ".lsc")).string();
  std::ofstream(path, std::ios::binary) << many_paths(200);
  auto [one_read, one_pass] = dumped(path, DumpSelection{.top = 3});
  auto [in_parts, passes] = dumped(path, DumpSelection{.top = 3, .site_memory = 1});
  std::filesystem::remove(path);
  EXPECT_EQ(one_pass, 1u);
  ASSERT_EQ(one_read, (std::vector<std::pair<uint32_t, int64_t>>{{200, 20000}, {199, 19900}, {198, 19800}}));
  EXPECT_EQ(in_parts, one_read);
  // The pass that counts the stacks, then one per part: a budget of one site would have been 201.
  EXPECT_EQ(passes, 1 + kMaxDumpParts);
}

}  // namespace
}  // namespace leakscope::report
