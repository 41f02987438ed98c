// c10 attribution on the real PyTorch of this machine (Debian's libtorch-dev and python3-torch):
// exact tensor-storage counts in C++ and in Python, a tensor-level leak called a leak and named at
// the program's function once framework frames are folded, and steady inference that is clean.
#include <gtest/gtest.h>

#include "harness.h"

namespace leakscope::testing {
namespace {

const char* const kPython = "/usr/bin/python3";

bool python_has_torch() {
  static const bool has = run_program({kPython, "-c", "import torch"}, {{"LD_PRELOAD", ""}}).exit_code == 0;
  return has;
}

#define REQUIRE_LIBTORCH() \
  if (!LEAKSCOPE_HAVE_LIBTORCH) GTEST_SKIP() << "libtorch is not installed (scripts/install_deps.sh installs it)"
#define REQUIRE_PYTHON_TORCH() \
  if (!python_has_torch()) GTEST_SKIP() << "python3-torch is not installed (scripts/install_deps.sh installs it)"

// c10_sites() lists the live c10_cpu sites that have `function` among their frames.
std::vector<nlohmann::json> c10_sites(const nlohmann::json& document, const std::string& function) {
  std::vector<nlohmann::json> found;
  for (const auto& site : document["sites"]) {
    if (site["domain"] != "c10_cpu") continue;
    for (const auto& frame : site["frames"]) {
      if (frame["function"].is_string() && frame["function"].get<std::string>().rfind(function, 0) == 0) {
        found.push_back(site);
        break;
      }
    }
  }
  return found;
}

// Python and libtorch make hundreds of thousands of small sites; the report leaves those out.
nlohmann::json report_json(const std::string& file) {
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", "--min-bytes", "64KiB", "--fold",
                              "torch,python", file});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  return nlohmann::json::parse(report.out);
}

TEST(Torch, CppTensorStorageIsCountedExactly) {
  REQUIRE_LIBTORCH();
  std::string file = scratch_dir() + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--", fixture("torch_tensors"), "exact", "50"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "c10_cpu_delta=204800\n");
  std::vector<nlohmann::json> sites = c10_sites(report_json(file), "keep_tensor");
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0]["live_bytes"], 50 * 4096);
  EXPECT_EQ(sites[0]["live_blocks"], 50);
}

TEST(Torch, CppTensorLeakIsALeakNamedAtTheProgramsFunction) {
  REQUIRE_LIBTORCH();
  std::string file = scratch_dir() + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "100ms", "--", fixture("torch_tensors"), "leak", "3"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json document = report_json(file);
  std::vector<nlohmann::json> leaking = c10_sites(document, "remember_batch");
  ASSERT_EQ(leaking.size(), 1u);
  EXPECT_EQ(leaking[0]["verdict"], "leak");
  // Folded: the allocator and ATen collapse into one frame; the program's function follows within
  // two frames (ATen's inline wrappers, such as at::ones, are compiled into the program).
  const nlohmann::json& frames = leaking[0]["frames"];
  ASSERT_GE(frames.size(), 3u);
  EXPECT_GT(frames[0].value("folded", 0), 0);
  bool named = false;
  for (size_t i = 1; i <= 2; ++i) named |= frames[i]["function"].get<std::string>().rfind("remember_batch", 0) == 0;
  EXPECT_TRUE(named) << frames.dump(1);
  EXPECT_TRUE(c10_sites(document, "score_batch").empty()) << "the freed path is clean";
}

TEST(Torch, PythonTensorStorageIsCountedExactly) {
  REQUIRE_PYTHON_TORCH();
  const char* script = R"(
import ctypes, torch
live = ctypes.CDLL(None).leakscope_live_bytes
live.restype, live.argtypes = ctypes.c_int64, [ctypes.c_int]
torch.empty(1)
kept = []
before = live(3)
for _ in range(50):
    kept.append(torch.empty(1024))
print("c10_cpu_delta=%d" % (live(3) - before))
)";
  Outcome outcome = leakscope({"run", "-o", scratch_dir() + "/py.lsc", "--", kPython, "-c", script});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "c10_cpu_delta=204800\n");
}

TEST(Torch, PythonListOfTensorsIsALeakAndSteadyInferenceIsNot) {
  REQUIRE_PYTHON_TORCH();
  const char* growing = R"(
import time, torch
history = []
model = torch.nn.Linear(64, 64)
start = time.time()
while time.time() - start < 3:
    history.append(torch.ones(4096))
    with torch.no_grad():
        model(torch.rand(8, 64)).sum()
    time.sleep(0.02)
import os
os._exit(0)  # as a killed service: the interpreter's teardown would free the list first
)";
  const char* steady = R"(
import time, torch
model = torch.nn.Linear(64, 64)
start = time.time()
while time.time() - start < 3:
    with torch.no_grad():
        model(torch.rand(8, 64)).sum()
    time.sleep(0.005)
import os
os._exit(0)
)";
  std::string directory = scratch_dir();
  ASSERT_EQ(leakscope({"run", "-o", directory + "/growing.lsc", "--interval", "100ms", "--", kPython, "-c", growing}).exit_code, 0);
  ASSERT_EQ(leakscope({"run", "-o", directory + "/steady.lsc", "--interval", "100ms", "--", kPython, "-c", steady}).exit_code, 0);
  int growing_leaks = 0;
  nlohmann::json growing_report = report_json(directory + "/growing.lsc");
  for (const auto& site : growing_report["sites"]) {
    if (site["domain"] == "c10_cpu" && site["verdict"] == "leak") {
      ++growing_leaks;
      EXPECT_GE(site["live_blocks"].get<int64_t>(), 50);
    }
  }
  EXPECT_EQ(growing_leaks, 1) << growing_report["live_bytes_by_domain"].dump() << " after "
                              << growing_report["snapshots"] << " snapshots";
  for (const auto& site : report_json(directory + "/steady.lsc")["sites"]) {
    EXPECT_FALSE(site["domain"] == "c10_cpu" && site["verdict"] == "leak") << site.dump(1);
  }
}

}  // namespace
}  // namespace leakscope::testing
