// An analysis read in parts (report/report_passes.h) against a hand-built stream of many call
// paths, each a group of its own: the groups it keeps are those a report shows, ranked as one read
// ranks them, and it counts every group of the stream, in a bounded number of reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/gate_format.h"
#include "report/leak_gate.h"
#include "report/report_format.h"
#include "report/report_passes.h"
#include "support/stream_builder.h"

namespace leakscope::report {
namespace {

using namespace leakscope::testing;

class ReportPasses : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("leakscope-report-passes-" + std::to_string(getpid()) + ".lsc")).string();
    std::ofstream(path_, std::ios::binary) << many_paths(200);
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // The live bytes of the first `count` groups of `analysis`, in its order.
  static std::vector<int64_t> first_groups(const RunAnalysis& analysis, size_t count) {
    std::vector<int64_t> bytes;
    for (size_t g = 0; g < analysis.groups.size() && g < count; ++g) bytes.push_back(analysis.groups[g].live_bytes);
    return bytes;
  }

  std::string path_;
};

TEST_F(ReportPasses, KeepsTheGroupsShownAndCountsThemAll) {
  std::unique_ptr<RunAnalysis> one_read = analyze_run(path_, AnalysisOptions{.top = 3});
  std::unique_ptr<RunAnalysis> in_parts = analyze_run(path_, AnalysisOptions{.site_memory = 1, .top = 3});
  EXPECT_EQ(one_read->parts_read, 0u);
  EXPECT_FALSE(one_read->read_in_parts);
  // A budget of one site is raised to a bounded number of parts: two rounds of reads of them, and
  // the first read and the last besides.
  EXPECT_EQ(in_parts->parts_read, kMaxReportParts);
  ASSERT_TRUE(in_parts->read_in_parts);

  // One snapshot is too short to judge: every group is in the "Not judged" section.
  ASSERT_EQ(one_read->groups.size(), 200u);
  EXPECT_EQ(in_parts->read_in_parts->sections[static_cast<size_t>(ReportSection::kNotJudged)].groups, 200u);
  EXPECT_EQ(in_parts->read_in_parts->sections[static_cast<size_t>(ReportSection::kLeaks)].groups, 0u);
  // The top three of the section, and the peak's five largest holders besides.
  EXPECT_EQ(in_parts->groups.size(), kPeakHoldersShown);
  EXPECT_EQ(first_groups(*in_parts, 3), (std::vector<int64_t>{20000, 19900, 19800}));
  EXPECT_EQ(first_groups(*in_parts, kPeakHoldersShown), first_groups(*one_read, kPeakHoldersShown));
  ASSERT_GE(in_parts->peak.holders.size(), kPeakHoldersShown);
  for (size_t i = 0; i < kPeakHoldersShown; ++i) EXPECT_EQ(in_parts->peak.holders[i].bytes, one_read->peak.holders[i].bytes);

  // What is counted over every site is the whole stream's.
  EXPECT_EQ(in_parts->live_bytes_by_domain, one_read->live_bytes_by_domain);
  ASSERT_EQ(in_parts->by_task.size(), 1u);
  EXPECT_EQ(in_parts->by_task[0].name, "request");
  EXPECT_EQ(in_parts->by_task[0].live_bytes, 100 * 200 * 201 / 2);
  EXPECT_EQ(in_parts->by_thread[0].live_bytes, one_read->by_thread[0].live_bytes);
}

// The JSON lists the top groups and sites of each verdict, names groups and sites by the stream's
// ids and counts every verdict: read in parts, it is the JSON of one read.
TEST_F(ReportPasses, TheJsonReadInPartsIsTheJsonOfOneRead) {
  for (size_t top : {1, 3, 10}) {
    for (int64_t min_bytes : {0, 15000}) {
      SCOPED_TRACE(::testing::Message() << "top " << top << ", min_bytes " << min_bytes);
      ReportOptions shown{.top = top, .min_bytes = min_bytes};
      std::unique_ptr<RunAnalysis> one_read = analyze_run(path_, AnalysisOptions{.top = top, .min_bytes = min_bytes});
      std::unique_ptr<RunAnalysis> in_parts = analyze_run(path_, AnalysisOptions{.site_memory = 1, .top = top, .min_bytes = min_bytes});
      ASSERT_TRUE(in_parts->read_in_parts);
      nlohmann::json whole = report_json(*one_read, shown);
      EXPECT_EQ(whole["sites"].size(), std::min<size_t>(top, min_bytes == 0 ? 200 : 51));
      EXPECT_EQ(whole["totals"]["groups"]["unknown"], 200);
      EXPECT_EQ(report_json(*in_parts, shown), whole);
      EXPECT_EQ(report_text(*in_parts, shown), report_text(*one_read, shown));
    }
  }
}

// The gate keeps every leak group and the largest of those it could not judge, and counts them all:
// its text read in parts is that of one read.
TEST_F(ReportPasses, TheGateReadInPartsIsTheGateOfOneRead) {
  AnalysisOptions gated{.top = kUnjudgedNamed, .every_leak = true};
  std::unique_ptr<RunAnalysis> one_read = analyze_run(path_, gated);
  gated.site_memory = 1;
  std::unique_ptr<RunAnalysis> in_parts = analyze_run(path_, gated);
  ASSERT_TRUE(in_parts->read_in_parts);
  GateResult whole = evaluate_gate(*one_read, GateOptions{});
  GateResult parts = evaluate_gate(*in_parts, GateOptions{});
  EXPECT_EQ(parts.unjudged_groups, 200u);
  EXPECT_EQ(parts.unjudged_bytes, whole.unjudged_bytes);
  std::string text = gate_text(*one_read, whole, path_);
  EXPECT_NE(text.find("note: 200 groups (1.92 MiB) could not be judged"), std::string::npos) << text;
  EXPECT_EQ(gate_text(*in_parts, parts, path_), text);
}

// Parts bring an owner's shares of the leaks' growth in another order than one read: their sum
// must not depend on it (a double's would, in its last digits, and the JSON prints them all).
TEST(OwnerGrowth, IsTheSameInWhateverOrderItsSharesCome) {
  std::vector<double> shares;
  for (int i = 1; i <= 40; ++i) shares.push_back(i % 2 == 1 ? i * 791234.56789 / 3 : i / 7.0);
  double forward_double = 0, backward_double = 0;
  OwnerSums::Rate forward, backward;
  for (double share : shares) {
    forward_double += share;
    forward.add(share);
  }
  for (auto share = shares.rbegin(); share != shares.rend(); ++share) {
    backward_double += *share;
    backward.add(*share);
  }
  ASSERT_NE(forward_double, backward_double) << "shares whose order shows in a double's sum";
  EXPECT_EQ(forward.bytes_per_min(), backward.bytes_per_min());
  EXPECT_NEAR(forward.bytes_per_min(), forward_double, 0.05);
}

TEST_F(ReportPasses, AStreamWhoseSitesFitIsReadOnce) {
  std::unique_ptr<RunAnalysis> analysis = analyze_run(path_, AnalysisOptions{.site_memory = 201 * kReportBytesPerSite, .top = 3});
  EXPECT_EQ(analysis->parts_read, 0u);
  EXPECT_FALSE(analysis->read_in_parts);
  EXPECT_EQ(analysis->groups.size(), 200u);
}

// Parts keep about --top groups and sites in each of their lists: when that is as many as the
// stream has, it is read at once, which costs no more.
TEST_F(ReportPasses, AStreamNoLargerThanWhatPartsWouldKeepIsReadOnce) {
  std::unique_ptr<RunAnalysis> analysis = analyze_run(path_, AnalysisOptions{.site_memory = 1, .top = 20});
  EXPECT_EQ(analysis->parts_read, 0u);
  EXPECT_FALSE(analysis->read_in_parts);
  EXPECT_EQ(analysis->groups.size(), 200u);
}

}  // namespace
}  // namespace leakscope::report
