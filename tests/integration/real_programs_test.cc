// Programs nobody here wrote, the shipped demo, and how the stream grows.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "harness.h"

namespace leakscope::testing {
namespace {

const char* const kPython = "/usr/bin/python3";

TEST(RealPrograms, PythonStillInstallsItsOwnSigintHandler) {
  Outcome outcome = leakscope({"run", "-o", scratch_dir() + "/py.lsc", "--", kPython, "-c",
                               "import signal; print(signal.getsignal(signal.SIGINT))"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("default_int_handler"), std::string::npos) << outcome.out;
}

TEST(RealPrograms, PythonWithThreadsForkAndSubprocessRunsAndIsTraced) {
  const char* script = R"(
import os, subprocess, threading
def work():
    data = [dict(a=i, b=str(i) * 10) for i in range(20000)]
    return len(data)
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
pid = os.fork()
if pid == 0:
    work()
    os._exit(0)
os.waitpid(pid, 0)
subprocess.run(["true"], check=True)
kept = [bytearray(4096) for _ in range(100)]
print("ok", len(kept))
)";
  std::string directory = scratch_dir();
  Outcome outcome = leakscope({"run", "-o", directory + "/py.lsc", "--", kPython, "-c", script});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "ok 100\n");
  std::vector<std::string> files = files_in(directory);
  EXPECT_GE(files.size(), 3u) << "python, its forked child and the exec'd 'true' each get a file";
  int underscore_exits = 0;
  for (const std::string& file : files) {
    nlohmann::json document = dump(directory + "/" + file);
    EXPECT_GE(document["snapshots"].get<int>(), 1) << file;
    std::string ended_by = document["ended_by"];
    EXPECT_TRUE(ended_by == "exit" || ended_by == "_exit") << file << ": " << ended_by;
    underscore_exits += ended_by == "_exit";
  }
  EXPECT_EQ(underscore_exits, 1) << "the forked child leaves by os._exit";
  nlohmann::json root = dump(directory + "/py.lsc");
  EXPECT_GT(root["live_bytes_by_domain"]["heap"].get<int64_t>(), 100 * 4096);
}

TEST(RealPrograms, DemoServiceShowsWeightsTheLeakAndNoTemporaries) {
  std::string file = scratch_dir() + "/demo.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "500ms", "--", LEAKSCOPE_DEMO, "--seconds", "2"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json document = dump(file);
  auto site_named = [&](const std::string& prefix) {
    for (const auto& site : document["sites"]) {
      const auto& function = site["frames"][0]["function"];
      if (function.is_string() && function.get<std::string>().find(prefix) != std::string::npos) return site;
    }
    return nlohmann::json();
  };
  nlohmann::json weights = site_named("load_model_weights");
  ASSERT_FALSE(weights.is_null());
  EXPECT_EQ(weights["live_bytes"], 6 * 4 * 1024 * 1024);
  EXPECT_EQ(weights["tasks"][0]["name"], "startup");
  nlohmann::json leak = site_named("format_debug_trace");
  ASSERT_FALSE(leak.is_null());
  EXPECT_EQ(leak["live_bytes"].get<int64_t>(), leak["live_blocks"].get<int64_t>() * 8192);
  EXPECT_GT(leak["live_blocks"].get<int64_t>(), 10);
  EXPECT_EQ(leak["tasks"].size(), 1u);
  EXPECT_EQ(leak["tasks"][0]["name"], "request");
  EXPECT_EQ(leak["threads"].size(), 2u);
  EXPECT_TRUE(site_named("run_inference").is_null()) << "request temporaries reported live";
  EXPECT_TRUE(site_named("tokenize").is_null()) << "request temporaries reported live";
}

// Frame payload sizes of a stream, in file order (the first is the process frame).
std::vector<uint32_t> frame_sizes(const std::string& path) {
  std::string bytes = read_file(path);
  std::vector<uint32_t> sizes;
  for (size_t at = 16; at + 16 <= bytes.size();) {
    uint32_t size = 0;
    for (int i = 0; i < 4; ++i) size |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 8 + i])) << (8 * i);
    sizes.push_back(size);
    at += 16 + size;
  }
  return sizes;
}

TEST(StreamGrowth, SnapshotsWithNothingNewStaySmall) {
  std::string file = scratch_dir() + "/steady.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "20ms", "--", fixture("lifecycle"), "steady"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  std::vector<uint32_t> sizes = frame_sizes(file);
  ASSERT_GE(sizes.size(), 20u);
  uint32_t first_snapshot = sizes[1];
  std::vector<uint32_t> later(sizes.begin() + 3, sizes.end() - 1);
  std::sort(later.begin(), later.end());
  uint32_t median = later[later.size() / 2];
  EXPECT_GT(first_snapshot, 1000u) << "the first snapshot carries modules and stacks";
  EXPECT_LT(median * 8, first_snapshot) << "a snapshot where only one site's counters moved must be small";
  EXPECT_LT(median, 160u);
}

TEST(OutputNames, ExecutableNamePatternIsExpanded) {
  std::string directory = scratch_dir();
  Outcome outcome = leakscope({"run", "-o", directory + "/%e.lsc", "--", fixture("lifecycle"), "exec_child"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(files_in(directory), (std::vector<std::string>{"lifecycle.lsc"}));
}

TEST(RuntimeOptions, HelpListsEveryOptionAndTrackingGoesOn) {
  std::string directory = scratch_dir();
  Outcome outcome = run_program({fixture("alloc_patterns"), "malloc"},
                                {{"LD_PRELOAD", preload_library()},
                                 {"LEAKSCOPE_OPTIONS", "help=1,output=" + directory + "/x.lsc"}});
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_NE(outcome.err.find("  interval=1s"), std::string::npos) << outcome.err;
  EXPECT_NE(outcome.err.find("  follow_exec=1"), std::string::npos) << outcome.err;
  EXPECT_NE(outcome.out.find("live_delta=100000 "), std::string::npos) << outcome.out;
  EXPECT_TRUE(std::filesystem::exists(directory + "/x.lsc"));
}

}  // namespace
}  // namespace leakscope::testing
