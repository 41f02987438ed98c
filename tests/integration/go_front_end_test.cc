// A Go front end calling a C library through cgo, as inference services' Go front ends call their
// C++ runtimes: the C side's leak, named at its function with the Go runtime's frames read from
// Go's own debug information.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"
#include "support/unwrapped.h"

namespace leakscope::testing {
namespace {

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

TEST(GoFrontEnd, LeakInTheCLibraryIsALeakAndGoFramesHaveTheirOwnFilesAndLines) {
  if (!std::filesystem::exists(fixture("go_cgo_service"))) {
    GTEST_SKIP() << "Go is not installed (scripts/install_deps.sh installs golang-go)";
  }
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("go_cgo_service"), "6000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.out, "served 6000\n");
  // Go leaves through its own exit system call, past every library: run says so, as the stream
  // ends without a final snapshot.
  EXPECT_NE(run.err.find("leakscope: note: the program exited (status 0) without leakscope seeing its exit"), std::string::npos)
      << run.err;
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json document = nlohmann::json::parse(report.out);
  int leaks = 0;
  for (const auto& group : document["groups"]) {
    if (group["verdict"] != "leak" || !group["runtime"].is_null()) continue;
    ++leaks;
    EXPECT_EQ(group["first_user_frame"]["function"], "audit_request") << group.dump();
    EXPECT_EQ(group["first_user_frame"]["line"], 21);
    // 128-byte records; Go leaves through its own exit system call, which no library sees, so the
    // requests of the last snapshot interval are not in the stream.
    int64_t blocks = group["live_blocks"];
    EXPECT_EQ(group["live_bytes"], 128 * blocks);
    EXPECT_GE(blocks, 6000 * 2 / 3);
    EXPECT_LE(blocks, 6000);
  }
  EXPECT_EQ(leaks, 1);
  // Go's runtime functions are Go and assembly, never the C file of cgo's mmap wrapper that the
  // C units' address table once led every Go address to.
  int go_frames = 0;
  for (const auto& site : document["sites"]) {
    for (const auto& frame : site["frames"]) {
      if (!frame["function"].is_string() || frame["function"].get<std::string>().rfind("runtime.", 0) != 0) continue;
      ++go_frames;
      std::string source = frame["file"].is_string() ? frame["file"].get<std::string>() : "";
      EXPECT_TRUE(ends_with(source, ".go") || ends_with(source, ".s")) << frame.dump();
      if (frame["function"] == "runtime.asmcgocall.abi0") EXPECT_TRUE(ends_with(source, "/asm_amd64.s")) << frame.dump();
    }
  }
  EXPECT_GT(go_frames, 0);
}

// A Go side that keeps every response grows the Go heap, which Go maps through cgo's mmap wrapper
// and never unmaps: the Go runtime's own mappings, said so, and not a leak of the C code at
// x_cgo_mmap that fails the gate.
TEST(GoFrontEnd, GoHeapGrowthIsTheGoRuntimesMappingsNotALeakOfTheCSide) {
  if (!std::filesystem::exists(fixture("go_cgo_service"))) {
    GTEST_SKIP() << "Go is not installed (scripts/install_deps.sh installs golang-go)";
  }
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("go_cgo_service"), "6000", "go-leak"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json document = nlohmann::json::parse(report.out);
  int64_t go_mapped = 0;
  for (const auto& group : document["groups"]) {
    bool go_runtime = group["first_user_frame"]["function"] == "x_cgo_mmap";
    if (go_runtime) {
      ASSERT_TRUE(group["runtime"].is_string()) << group.dump();
      EXPECT_EQ(group["runtime"].get<std::string>().rfind("the Go runtime's mappings", 0), 0u) << group.dump();
      go_mapped += group["live_bytes"].get<int64_t>();
    }
    EXPECT_FALSE(group["verdict"] == "leak" && group["runtime"].is_null()) << group.dump();
  }
  // The responses kept by the last snapshot (Go's exit is unseen: the last interval is not in the
  // stream) are 4 KiB each, in the Go heap's mappings.
  EXPECT_GE(go_mapped, 3000 * 4096);

  std::string text = unwrapped(leakscope({"report", file}).out);
  EXPECT_NE(text.find("\nLeak suspects: 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Go's heap profile names their code"), std::string::npos) << text;
  Outcome check = leakscope({"check", file});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("not gated, leak x_cgo_mmap"), std::string::npos) << check.out;
}

}  // namespace
}  // namespace leakscope::testing
