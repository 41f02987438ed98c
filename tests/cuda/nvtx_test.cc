// NVTX ranges as tasks, end to end with the real NVTX v3 headers (tests/cuda/fixtures/
// nvtx_workers.cc): leakscope is NVTX's injection, the innermost push/pop range on each thread
// tags the thread's allocations, domains' ranges and registered names included, and the C API's
// explicit task comes first.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "harness.h"

namespace leakscope::testing {
namespace {

struct TaskFigures {
  int64_t bytes = 0;
  int64_t blocks = 0;
};

// task_figures() sums each task's live bytes and blocks over every site of the fixture's keep().
std::map<std::string, TaskFigures> task_figures(const nlohmann::json& document) {
  std::map<std::string, TaskFigures> figures;
  for (const auto& site : document["sites"]) {
    const nlohmann::json& innermost = site["frames"].at(0)["function"];
    if (!innermost.is_string() || innermost.get<std::string>().find("::keep(") == std::string::npos) continue;
    for (const auto& task : site["tasks"]) {
      TaskFigures& entry = figures[task["name"].is_string() ? task["name"].get<std::string>() : ""];
      entry.bytes += task["live_bytes"].get<int64_t>();
      entry.blocks += task["live_blocks"].get<int64_t>();
    }
  }
  return figures;
}

void expect_nvtx_tasks(const std::vector<std::string>& flags) {
  std::string file = scratch_dir() + "/nvtx.lsc";
  std::vector<std::string> args{"run", "-o", file};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", fixture("nvtx_workers")});
  Outcome run = leakscope(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "kept 31 31 5\n");
  nlohmann::json document = dump(file);
  std::map<std::string, TaskFigures> tasks = task_figures(document);
  EXPECT_EQ(tasks["request"].bytes, 2 * 10 * (1000 + 24));  // both workers, around "decode"
  EXPECT_EQ(tasks["request"].blocks, 2 * 10 * 2);
  EXPECT_EQ(tasks["decode"].bytes, 2 * 10 * 500);
  EXPECT_EQ(tasks["decode"].blocks, 2 * 10);
  EXPECT_EQ(tasks["tokenize"].bytes, 5 * 300);  // a domain's range, named by a registered string
  EXPECT_EQ(tasks[""].bytes, 2 * 7);            // no range open
  EXPECT_EQ(tasks.count("inside-warmup"), 0u);
  bool warmup = false;
  for (const auto& site : document["sites"]) {
    for (const auto& task : site["tasks"]) {
      if (task["name"] == "warmup") warmup = site["live_bytes"] == 4000 && task["live_bytes"] == 4000;
      EXPECT_NE(task["name"], "inside-warmup") << "the C API's task comes before NVTX's range";
    }
  }
  EXPECT_TRUE(warmup);
}

TEST(Nvtx, TheInnermostRangeOnEachThreadIsTheTaskOfItsAllocations) { expect_nvtx_tasks({"--nvtx"}); }

TEST(Nvtx, CudaAndNvtxWorkTogether) { expect_nvtx_tasks({"--cuda", "--nvtx"}); }

TEST(Nvtx, WithoutTheOptionRangesNameNoTask) {
  std::string file = scratch_dir() + "/plain.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("nvtx_workers")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::map<std::string, TaskFigures> tasks = task_figures(dump(file));
  EXPECT_EQ(tasks.count("request"), 0u);
  EXPECT_EQ(tasks[""].bytes, 2 * (10 * 1524 + 7) + 5 * 300);
}

}  // namespace
}  // namespace leakscope::testing
