// The report side on a stream of hundreds of thousands of live sites: each site costs a fixed
// record, not its symbolized frames, names and series, so report, its JSON (every part of a
// group listed), the gate, the exports and diff stay within a bound per site, and dump --top
// within a bound of its own. A bound on memory only: how fast is
// measured in bench/ and docs/PERFORMANCE.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness.h"

namespace leakscope::testing {
namespace {

constexpr int kLevels = 18;  // 262144 operators, each registered along a call path of its own
constexpr long kSites = long{1} << kLevels;
// 1 KiB a site, all told: the stream's state, the judged sites, the process itself. About 700
// bytes were measured (docs/PERFORMANCE.md); 2.7 KiB before sites were kept as fixed records.
constexpr long kMaxRssKib = kSites;

TEST(ReportMemory, HundredsOfThousandsOfLiveSitesCostUnderAKibibyteEach) {
  std::string file = scratch_dir() + "/registry.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("operator_registry"), std::to_string(kLevels)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.out, "operators=262144\n");

  Outcome text = leakscope({"report", file});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("in 262144 blocks of 262144 sites"), std::string::npos) << text.out;
  EXPECT_LE(text.max_rss_kib, kMaxRssKib);

  Outcome json = leakscope({"report", "--format", "json", file});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_LE(json.max_rss_kib, kMaxRssKib);
  nlohmann::json document = nlohmann::json::parse(json.out);
  size_t parts = 0;
  for (const auto& group : document["groups"]) parts += group["parts"].size();
  EXPECT_GE(parts, static_cast<size_t>(kSites)) << "every site, as a part of its group";

  // Whether the registry is judged a leak depends on how the run's few snapshots fell: either
  // way the gate judges it.
  Outcome gate = leakscope({"check", file});
  EXPECT_TRUE(gate.exit_code == 0 || gate.exit_code == 1) << gate.err;
  EXPECT_NE(gate.out.find("max-leaked"), std::string::npos) << gate.out;
  EXPECT_LE(gate.max_rss_kib, kMaxRssKib);

  // The exports write as they go, keeping stacks as name ids: 0.5-0.9 KiB a site measured
  // (3.2 KiB for folded stacks when each stack was a string).
  for (const char* format : {"--folded", "--pprof", "--html"}) {
    SCOPED_TRACE(format);
    std::string out = scratch_dir() + "/registry.export";
    Outcome exported = leakscope({"export", file, format, out});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    EXPECT_LE(exported.max_rss_kib, kMaxRssKib);
    EXPECT_GT(std::filesystem::file_size(out), static_cast<uintmax_t>(kSites) / 4);
  }

  // dump --top reads the stream in parts, 32 MiB of sites at a time by default (report/dump_passes.h):
  // 61 MiB measured, against 114 MiB read at once; what it shows is what one read shows.
  Outcome top = leakscope({"dump", "--top", "10", "--format", "json", file});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_LE(top.max_rss_kib, 84 * 1024);
  Outcome one_read = leakscope({"dump", "--top", "10", "--format", "json", "--site-memory", "0", file});
  ASSERT_EQ(one_read.exit_code, 0) << one_read.err;
  EXPECT_GT(one_read.max_rss_kib, top.max_rss_kib);
  EXPECT_EQ(top.out, one_read.out);

  // The registry is one group: read in parts it is summed over reads that each hold a share of its
  // sites (report/group_sums.h), within the budget: 79 MiB measured at 16 MiB, 130 MiB at once.
  Outcome summed = leakscope({"report", "--site-memory", "16MiB", file});
  ASSERT_EQ(summed.exit_code, 0) << summed.err;
  EXPECT_EQ(summed.out, text.out);
  EXPECT_LE(summed.max_rss_kib, 96 * 1024);

  // diff holds two runs, matching sites by interned names (1.7 GiB when it keyed each by a string).
  Outcome diff = leakscope({"diff", file, file});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_NE(diff.out.find("\n0 sites changed, 0 changed verdict\n"), std::string::npos) << diff.out;
  EXPECT_LE(diff.max_rss_kib, 2 * kMaxRssKib);
}

// A Python service with 20 000 generated route handlers, each holding its cached response: as many
// groups, each named by its handler's line. Its report, text or JSON, and its gate, read in parts
// that hold whole groups (--site-memory), are those of one read, in about half the memory.
// recorded_service() runs the Python fixture `script` with `arguments` under leakscope into the
// scratch file `name`, whose output begins with `begins`, and returns the stream's path.
std::string recorded_service(const std::string& name, const std::string& script, const std::vector<std::string>& arguments,
                             const std::string& begins) {
  std::string file = scratch_dir() + "/" + name;
  std::vector<std::string> command = {"run", "-o", file, "--", "/usr/bin/python3", fixture_source(script)};
  command.insert(command.end(), arguments.begin(), arguments.end());
  Outcome run = leakscope(command);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.rfind(begins, 0), 0u) << run.out;
  return file;
}

// report_at_once() is the report of `file` read at once, which names one leak, in `where`.
Outcome report_at_once(const std::string& file, const std::string& where) {
  Outcome one_read = leakscope({"report", "--site-memory", "0", file});
  EXPECT_EQ(one_read.exit_code, 0) << one_read.err;
  EXPECT_NE(one_read.out.find("Leak suspects: 1\n"), std::string::npos) << one_read.out;
  EXPECT_NE(one_read.out.find("in " + where), std::string::npos) << one_read.out;
  return one_read;
}

TEST(ReportMemory, ManyGroupsAreReadInPartsThatEachHoldWholeGroups) {
  std::string file = recorded_service("routes.lsc", "route_table_service.py", {"20000", "1.5"}, "routes=20000 served=");
  Outcome one_read = report_at_once(file, "keep_request (generated_routes.py:4)");
  EXPECT_NE(one_read.out.find("Startup residents (born early, flat): "), std::string::npos) << one_read.out;

  // 2 MiB holds about 4 000 sites: the stream's 80 000 are read in some twenty parts.
  Outcome parts = leakscope({"report", "--site-memory", "2MiB", file});
  ASSERT_EQ(parts.exit_code, 0) << parts.err;
  EXPECT_EQ(parts.out, one_read.out);
  EXPECT_LT(parts.max_rss_kib * 4, one_read.max_rss_kib * 3) << "parts " << parts.max_rss_kib << " KiB, one read " << one_read.max_rss_kib;

  // What a section shows and counts, and the peak's holders, do not depend on where the parts fell.
  for (const char* top : {"1", "3"}) {
    SCOPED_TRACE(top);
    Outcome whole = leakscope({"report", "--top", top, "--min-bytes", "200", "--site-memory", "0", file});
    Outcome read_in_parts = leakscope({"report", "--top", top, "--min-bytes", "200", "--site-memory", "1MiB", file});
    ASSERT_EQ(read_in_parts.exit_code, 0) << read_in_parts.err;
    EXPECT_EQ(read_in_parts.out, whole.out);
  }
  // The JSON's lists of each verdict too, with the stream's ids for groups and sites.
  Outcome json_at_once = leakscope({"report", "--format", "json", "--top", "5", "--site-memory", "0", file});
  Outcome json_in_parts = leakscope({"report", "--format", "json", "--top", "5", "--site-memory", "1MiB", file});
  ASSERT_EQ(json_in_parts.exit_code, 0) << json_in_parts.err;
  EXPECT_EQ(json_in_parts.out, json_at_once.out);
  EXPECT_LT(json_in_parts.max_rss_kib * 4, json_at_once.max_rss_kib * 3)
      << "parts " << json_in_parts.max_rss_kib << " KiB, one read " << json_at_once.max_rss_kib;
  nlohmann::json document = nlohmann::json::parse(json_in_parts.out);
  EXPECT_GE(document["totals"]["groups"]["startup"].get<int>(), 20000);
  EXPECT_EQ(document["groups"][0]["verdict"], "leak");
  EXPECT_EQ(document["groups"][0]["id"], document["groups"][0]["parts"][0]["site"]);

  // And the gate, which keeps every leak group besides.
  Outcome gate_at_once = leakscope({"check", "--site-memory", "0", file});
  Outcome gate_in_parts = leakscope({"check", "--site-memory", "1MiB", file});
  EXPECT_EQ(gate_in_parts.exit_code, 1) << gate_in_parts.err;
  EXPECT_EQ(gate_in_parts.out, gate_at_once.out);
  EXPECT_NE(gate_in_parts.out.find("leak keep_request (generated_routes.py:4)"), std::string::npos) << gate_in_parts.out;
  EXPECT_LT(gate_in_parts.max_rss_kib * 4, gate_at_once.max_rss_kib * 3)
      << "parts " << gate_in_parts.max_rss_kib << " KiB, one read " << gate_at_once.max_rss_kib;
}

// One leak reached along 20 000 generated call paths: one group of some 40 000 sites, more than a
// part of 1 MiB holds (about 2 000). Read in parts, its sites are summed over several reads and only
// its largest held whole; report, JSON and gate are those of one read, in about half the memory.
TEST(ReportMemory, AGroupOfMoreSitesThanAPartHoldsIsJudgedOnItsSums) {
  std::string file = recorded_service("paths.lsc", "dispatch_paths_service.py", {"20000", "3"}, "handlers=20000 served=");
  Outcome one_read = report_at_once(file, "keep (dispatch_paths_service.py:14)");
  size_t sites_at = one_read.out.find(" sites · +");
  ASSERT_NE(sites_at, std::string::npos) << one_read.out;
  long sites = std::stol(one_read.out.substr(one_read.out.rfind(' ', sites_at - 1) + 1));
  EXPECT_GT(sites, 4 * 2048) << "a group of more sites than a part holds";

  Outcome parts = leakscope({"report", "--site-memory", "1MiB", file});
  ASSERT_EQ(parts.exit_code, 0) << parts.err;
  EXPECT_EQ(parts.out, one_read.out);
  EXPECT_LT(parts.max_rss_kib * 4, one_read.max_rss_kib * 3) << "parts " << parts.max_rss_kib << " KiB, one read " << one_read.max_rss_kib;

  Outcome json_at_once = leakscope({"report", "--format", "json", "--site-memory", "0", file});
  Outcome json_in_parts = leakscope({"report", "--format", "json", "--site-memory", "1MiB", file});
  ASSERT_EQ(json_in_parts.exit_code, 0) << json_in_parts.err;
  EXPECT_EQ(json_in_parts.out, json_at_once.out);
  nlohmann::json document = nlohmann::json::parse(json_in_parts.out);
  EXPECT_EQ(document["groups"][0]["verdict"], "leak");
  EXPECT_EQ(document["groups"][0]["parts"].size(), static_cast<size_t>(sites)) << "every site, as a part of its group";

  // The gate, with a rule that leaves out some of the group's sites (the bytearrays' buffers).
  std::string rules = scratch_dir() + "/paths.supp";
  std::ofstream(rules) << "function:PyByteArray_Resize\n";
  Outcome gate_at_once = leakscope({"check", "--site-memory", "0", "--suppress", rules, file});
  Outcome gate_in_parts = leakscope({"check", "--site-memory", "1MiB", "--suppress", rules, file});
  EXPECT_EQ(gate_in_parts.exit_code, 1) << gate_in_parts.err;
  EXPECT_EQ(gate_in_parts.out, gate_at_once.out);
  EXPECT_NE(gate_in_parts.out.find("more not gated (suppressed by function:PyByteArray_Resize"), std::string::npos)
      << gate_in_parts.out;
}

}  // namespace
}  // namespace leakscope::testing
