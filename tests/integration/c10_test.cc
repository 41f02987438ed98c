// PyTorch c10 attribution against a stand-in libc10 (tests/integration/fixtures/fake_c10.cc) with
// the real mangled entry points: tensor storage is its own domain at the code that made it,
// never counted again as heap, CUDA caching-allocator blocks are c10_cuda, and every call still
// reaches the real c10. Also when c10 is only in an RTLD_LOCAL scope, as under Python.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"

namespace leakscope::testing {
namespace {

void expect_c10_attribution(const std::vector<std::string>& command) {
  std::string file = scratch_dir() + "/run.lsc";
  std::vector<std::string> args{"run", "-o", file, "--"};
  args.insert(args.end(), command.begin(), command.end());
  Outcome outcome = leakscope(args);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "c10 saw allocs=125 frees=100 reports=13\n");
  EXPECT_EQ(outcome.err.find("cannot find the real"), std::string::npos) << outcome.err;
  nlohmann::json document = dump(file);
  nlohmann::json storage = site_at(document, "make_tensor_storage");
  EXPECT_EQ(storage["domain"], "c10_cpu");
  EXPECT_EQ(storage["live_bytes"], 25 * 4096);
  EXPECT_EQ(storage["live_blocks"], 25);
  EXPECT_TRUE(sites_at(document, "scratch_tensors").empty());
  nlohmann::json device = site_at(document, "cuda_block_events");
  EXPECT_EQ(device["domain"], "c10_cuda");
  EXPECT_EQ(device["live_bytes"], 7 << 20);
  EXPECT_EQ(device["live_blocks"], 7);
  EXPECT_EQ(document["live_bytes_by_domain"]["c10_cpu"], 25 * 4096);
  EXPECT_EQ(document["live_bytes_by_domain"]["c10_cuda"], 7 << 20);
  // The posix_memalign inside alloc_cpu is not a second, heap-domain copy of the storage.
  for (const auto& site : document["sites"]) {
    for (const auto& frame : site["frames"]) {
      if (frame["function"].is_string()) EXPECT_NE(frame["function"].get<std::string>(), "c10::alloc_cpu(unsigned long)");
    }
  }
}

TEST(C10, TensorStorageAndCudaBlocksAreTheirOwnDomainsInALinkedProgram) {
  expect_c10_attribution({fixture("fake_torch_linked")});
}

TEST(C10, RealFunctionsAreFoundWhenC10IsLoadedRtldLocal) {
  expect_c10_attribution({fixture("fake_torch_local"), fixture("libfake_torch_extension.so")});
}

// Tensor storage is sampled like the heap: a sampled run says how precise its estimate is (it
// said nothing, and a tensor leak on two recorded tensors was judged a start-up resident).
TEST(C10, SampledTensorStorageSaysHowPreciseItIs) {
  std::string file = scratch_dir() + "/sampled.lsc";
  Outcome run = leakscope({"run", "--sample", "4KiB", "-o", file, "--", fixture("fake_torch_linked")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Outcome report = leakscope({"report", "--format", "json", "--at", "end", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json parsed = nlohmann::json::parse(report.out);
  int tensor_groups = 0;
  for (const auto& group : parsed["groups"]) {
    bool tensors = std::any_of(group["parts"].begin(), group["parts"].end(),
                               [](const nlohmann::json& part) { return part["domain"] == "c10_cpu"; });
    if (!tensors) continue;
    ++tensor_groups;
    // 25 tensors of 4 KiB, each recorded with p = 0.63 at 4 KiB.
    EXPECT_GE(group["recorded_blocks"].get<int64_t>(), 1) << group.dump();
    EXPECT_GT(group["relative_error"].get<double>(), 0.05) << group.dump();
  }
  EXPECT_GE(tensor_groups, 1) << report.out;
}

TEST(C10, WithoutThePreloadTheStandInWorksAlone) {
  Outcome outcome = run_program({fixture("fake_torch_linked")}, {{"LD_PRELOAD", ""}});
  EXPECT_EQ(outcome.out, "c10 saw allocs=125 frees=100 reports=13\n");
}

}  // namespace
}  // namespace leakscope::testing
