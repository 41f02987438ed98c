// c10 attribution on the real PyTorch of this machine (Debian's libtorch-dev and python3-torch):
// exact tensor-storage counts in C++ and in Python, a tensor-level leak called a leak and named at
// the program's function once framework frames are folded, steady inference that is clean, the
// real growth of torch.jit.script's compilation unit, and repeated torch::jit::load that is not a
// leak.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <set>

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

// c10_sites() lists the live c10_cpu sites with a frame whose function name contains `function`.
std::vector<nlohmann::json> c10_sites(const nlohmann::json& document, const std::string& function) {
  std::vector<nlohmann::json> found;
  for (const auto& site : document["sites"]) {
    if (site["domain"] != "c10_cpu") continue;
    for (const auto& frame : site["frames"]) {
      if (frame["function"].is_string() && frame["function"].get<std::string>().find(function) != std::string::npos) {
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

// libtorch loads libraries built without frame pointers whose static initializers leave garbage
// in the frame-pointer register: the walk must stop there, never crash the program.
TEST(Torch, FramePointerUnwindingIsSafeThroughLibtorch) {
  REQUIRE_LIBTORCH();
  Outcome outcome = leakscope({"run", "--option", "unwind=fp", "-o", scratch_dir() + "/fp.lsc", "--",
                               fixture("torch_tensors"), "exact", "50"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "c10_cpu_delta=204800\n");
}

TEST(Torch, CppTensorLeakIsALeakNamedAtTheProgramsFunction) {
  REQUIRE_LIBTORCH();
  std::string file = scratch_dir() + "/run.lsc";
  // libtorch brings some 170 000 stacks, so each snapshot takes a while: 6 s leave enough of them
  // to judge even on a loaded machine.
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "200ms", "--", fixture("torch_tensors"), "leak", "6"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json document = report_json(file);
  std::vector<nlohmann::json> leaking = c10_sites(document, "remember_batch");
  ASSERT_EQ(leaking.size(), 1u);
  EXPECT_EQ(leaking[0]["verdict"], "leak") << leaking[0].dump(1) << " after " << document["snapshots"] << " snapshots";
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

TEST(Torch, ACleanTorchServicePassesRunCheckAndWhatItLosesIsTheRuntimes) {
  REQUIRE_PYTHON_TORCH();
  std::string file = scratch_dir() + "/service.lsc";
  Outcome gated = leakscope({"run", "--check", "", "-o", file, "--", kPython,
                             fixture_source("torch_model_service.py"), "2"});
  EXPECT_EQ(gated.exit_code, 0) << gated.out << gated.err;
  nlohmann::json document = dump(file);
  ASSERT_TRUE(document["leak_check"]["scanned"]);
  EXPECT_EQ(document["leak_check"]["threads_missed"], 0);
  Outcome report = leakscope({"report", "--format", "json", "--top", "100000", "--min-bytes", "0", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  // `import torch` leaves CPython's and torch's own unreleased objects; nothing the script made.
  for (const nlohmann::json& group : nlohmann::json::parse(report.out)["groups"]) {
    if (group["lost_bytes"] == 0 && group["indirectly_lost_bytes"] == 0) continue;
    EXPECT_FALSE(group["lost_runtime"].is_null()) << group.dump(1);
  }
}

TEST(Torch, PythonListOfTensorsIsALeakAndSteadyInferenceIsNot) {
  REQUIRE_PYTHON_TORCH();
  const char* growing = R"(
import time, torch
history = []
model = torch.nn.Linear(64, 64)
for _ in range(500):  # 10 s of growth: enough snapshots after a slow import on a loaded machine
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
for _ in range(1000):
    with torch.no_grad():
        model(torch.rand(8, 64)).sum()
    time.sleep(0.005)
import os
os._exit(0)
)";
  std::string directory = scratch_dir();
  // Each run imports torch in exact mode and is read back: side by side, they take half the time.
  auto traced = [&directory](const std::string& name, const char* program) {
    return std::async(std::launch::async, [&directory, name, program] {
      std::string file = directory + "/" + name + ".lsc";
      Outcome run = leakscope({"run", "-o", file, "--interval", "100ms", "--", kPython, "-c", program});
      EXPECT_EQ(run.exit_code, 0) << run.err;
      return run.exit_code == 0 ? report_json(file) : nlohmann::json::object();
    });
  };
  std::future<nlohmann::json> growing_run = traced("growing", growing);
  std::future<nlohmann::json> steady_run = traced("steady", steady);
  nlohmann::json growing_report = growing_run.get();
  nlohmann::json steady_report = steady_run.get();
  int growing_leaks = 0;
  for (const auto& site : growing_report["sites"]) {
    if (site["domain"] == "c10_cpu" && site["verdict"] == "leak") {
      ++growing_leaks;
      EXPECT_EQ(site["live_blocks"].get<int64_t>(), 500);  // os._exit writes the final snapshot
    }
  }
  EXPECT_EQ(growing_leaks, 1) << growing_report["live_bytes_by_domain"].dump() << " after "
                              << growing_report["snapshots"] << " snapshots";
  for (const auto& site : steady_report["sites"]) {
    EXPECT_FALSE(site["domain"] == "c10_cpu" && site["verdict"] == "leak") << site.dump(1);
  }
}

TEST(Torch, TorchDemoServiceLeaksTensorsInOneFunctionAndCachesTheRest) {
  REQUIRE_LIBTORCH();
  std::string file = scratch_dir() + "/demo.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "250ms", "--", LEAKSCOPE_DEMO_TORCH, "--seconds", "6"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  Outcome everything = leakscope({"report", "--format", "json", "--top", "1000", "--fold", "torch", file});
  ASSERT_EQ(everything.exit_code, 0) << everything.err;
  nlohmann::json all_sites = nlohmann::json::parse(everything.out);
  // The session history: one 2 KiB tensor (512 floats) per streaming request, a leak in c10_cpu
  // made inside the task "request" on both workers.
  std::vector<nlohmann::json> leaking = c10_sites(all_sites, "remember_session_state");
  ASSERT_EQ(leaking.size(), 1u);
  const nlohmann::json& leak = leaking[0];
  EXPECT_EQ(leak["verdict"], "leak") << leak.dump(1);
  EXPECT_EQ(leak["live_bytes"].get<int64_t>(), leak["live_blocks"].get<int64_t>() * 512 * 4);
  EXPECT_GT(leak["live_blocks"].get<int64_t>(), 20);
  ASSERT_EQ(leak["tasks"].size(), 1u);
  EXPECT_EQ(leak["tasks"][0]["name"], "request");
  EXPECT_EQ(leak["threads"].size(), 2u);
  // The weights: 4 layers of 512 x 512 floats and 512 biases, made in the task "startup".
  std::vector<nlohmann::json> weights = c10_sites(all_sites, "load_model_weights");
  int64_t weight_bytes = 0;
  for (const auto& site : weights) {
    EXPECT_NE(site["verdict"], "leak") << site.dump(1);
    weight_bytes += site["live_bytes"].get<int64_t>();
  }
  EXPECT_EQ(weight_bytes, 4 * (512 * 512 + 512) * 4);
  // The output cache: 64 entries of 8 x 512 floats per worker, bounded.
  std::vector<nlohmann::json> cached = c10_sites(all_sites, "OutputCache::store");
  ASSERT_EQ(cached.size(), 1u);
  EXPECT_EQ(cached[0]["live_blocks"], 2 * 64);
  EXPECT_NE(cached[0]["verdict"], "leak");
  // Activations are freed with their request: at most those of requests in flight are live.
  for (const auto& site : c10_sites(all_sites, "run_forward")) EXPECT_NE(site["verdict"], "leak") << site.dump(1);
  // Every leak, in any domain (the tensor's heap-allocated TensorImpl too), is the session history.
  for (const auto& site : all_sites["sites"]) {
    if (site["verdict"] != "leak") continue;
    bool in_history = false;
    for (const auto& frame : site["frames"]) {
      in_history |= frame["function"].is_string() &&
                    frame["function"].get<std::string>().find("remember_session_state") != std::string::npos;
    }
    EXPECT_TRUE(in_history) << site.dump(1);
  }
  // One bug, one entry: the leak's storage, TensorImpl and other blocks are one group, named by
  // the demo's function, and the only leak; the text the demo script prints fits 100 columns.
  int leak_groups = 0;
  for (const auto& group : all_sites["groups"]) {
    if (group["verdict"] != "leak") continue;
    ++leak_groups;
    ASSERT_TRUE(group["first_user_frame"].is_object()) << group.dump(1);
    EXPECT_NE(group["first_user_frame"]["function"].get<std::string>().find("remember_session_state"), std::string::npos);
    int64_t parts = 0;
    std::set<std::string> domains;
    for (const auto& part : group["parts"]) {
      parts += part["live_bytes"].get<int64_t>();
      domains.insert(part["domain"].get<std::string>());
    }
    EXPECT_EQ(group["live_bytes"].get<int64_t>(), parts);
    EXPECT_EQ(domains, (std::set<std::string>{"c10_cpu", "heap"}));
  }
  EXPECT_EQ(leak_groups, 1);
  Outcome text = leakscope({"report", "--fold", "torch", file});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  size_t leaks = text.out.find("Leak suspects: 1\n");
  ASSERT_NE(leaks, std::string::npos) << text.out;
  EXPECT_NE(text.out.find("in remember_session_state", leaks), std::string::npos) << text.out;
  for (const std::string& line : lines_wider_than(text.out, 100)) ADD_FAILURE() << "wider than 100 columns: " << line;
}

bool has_frame_containing(const nlohmann::json& site, const std::string& text, size_t within) {
  const nlohmann::json& frames = site["frames"];
  for (size_t i = 0; i < frames.size() && i < within; ++i) {
    if (frames[i]["function"].is_string() && frames[i]["function"].get<std::string>().find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(Torch, JitScriptInALoopIsALeakInTheCompilationUnit) {
  REQUIRE_PYTHON_TORCH();
  std::string file = scratch_dir() + "/jit.lsc";
  // 12 s of compiling after the import: a loaded machine, where the import and each snapshot take
  // several times longer, still has the growth over enough snapshots to judge.
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "200ms", "--", kPython,
                               fixture_source("jit_script_loop.py"), "100", "12"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  ASSERT_EQ(outcome.out.rfind("functions=", 0), 0u) << outcome.out;
  int64_t functions = std::stoll(outcome.out.substr(10));
  ASSERT_GE(functions, 100);
  // Sites of one block per function hold 200-450 bytes per function.
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", "--min-bytes", "16KiB", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json document = nlohmann::json::parse(report.out);
  // Every compiled function leaves blocks behind at the same native sites (the Python call path is
  // the same each time), so those sites hold exactly one block per function and grow with them.
  // (The loop's own exec() and linecache entries keep Python objects too: heap leaks of the
  // interpreter's, also on the main thread.)
  int one_block_per_function = 0;
  for (const auto& site : document["sites"]) {
    if (site["verdict"] != "leak") continue;
    EXPECT_EQ(site["domain"], "heap") << site.dump(1);
    ASSERT_EQ(site["threads"].size(), 1u);
    EXPECT_EQ(site["threads"][0]["name"], "MainThread");
    one_block_per_function += site["live_blocks"] == functions && has_frame_containing(site, "torch::jit::", 8);
  }
  EXPECT_GE(one_block_per_function, 3) << functions << " functions";
  EXPECT_TRUE(document["findings"].empty()) << "leakscope's own memory is not unexplained growth: "
                                            << document["findings"].dump(1);
}

TEST(Torch, RepeatedJitLoadIsWarmUpNotALeak) {
  REQUIRE_LIBTORCH();
  REQUIRE_PYTHON_TORCH();
  std::string directory = scratch_dir();
  std::string model = directory + "/model.pt";
  Outcome made = run_program({kPython, fixture_source("make_torchscript_model.py"), model}, {{"LD_PRELOAD", ""}});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string file = directory + "/load.lsc";
  // A count, not a time: a loaded machine makes each load slower, never fewer.
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "200ms", "--", fixture("torch_jit_load"), model, "50"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  ASSERT_EQ(outcome.out, "loads=50\n");
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", "--min-bytes", "16KiB", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json document = nlohmann::json::parse(report.out);
  int judged_warm_up = 0;
  for (const auto& site : document["sites"]) {
    EXPECT_NE(site["verdict"], "leak") << site.dump(1);
    judged_warm_up += site["verdict"] == "startup" || site["verdict"] == "cache";
  }
  EXPECT_GT(judged_warm_up, 0) << "the warm-up growth is classified";
  EXPECT_TRUE(document["findings"].empty()) << document["findings"].dump(1);
}

// Exact mode with the defaults on the processes that make the most distinct stacks: a Python
// service that imports torch and serves a model, and the libtorch demo service (whose static
// registrations make about 560 000 stacks). leakscope's own memory, its stream and the report's
// memory stay within fixed bounds, a bound and not a timing (docs/PERFORMANCE.md has the measured
// figures); the runs stay within the default memory budget, so no stack is cut.
TEST(Torch, TracerMemoryStreamAndReportStayWithinBoundsOnTorchServices) {
  REQUIRE_PYTHON_TORCH();
  struct Case {
    std::vector<std::string> command;
    int64_t max_stream_bytes;
  };
  std::vector<Case> cases = {{{kPython, fixture_source("torch_model_service.py"), "4"}, 16'000'000}};
  if (LEAKSCOPE_HAVE_LIBTORCH) cases.push_back({{LEAKSCOPE_DEMO_TORCH, "--seconds", "4"}, 4'000'000});
  for (const Case& each : cases) {
    SCOPED_TRACE(each.command[0]);
    std::string file = scratch_dir() + "/service.lsc";
    std::vector<std::string> args{"run", "-o", file, "--"};
    args.insert(args.end(), each.command.begin(), each.command.end());
    Outcome run = leakscope(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.err.find("max_memory"), std::string::npos) << run.err;
    EXPECT_LE(static_cast<int64_t>(std::filesystem::file_size(file)), each.max_stream_bytes);
    nlohmann::json state = dump(file, {"--at", "end", "--top", "1"});
    EXPECT_LE(state["peak_overhead_bytes"].get<int64_t>(), int64_t{64} << 20);
    EXPECT_GT(state["startup_stacks"]["stacks"].get<int64_t>(), 1000) << "start-up stacks cut";
    Outcome report = leakscope({"report", file});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    EXPECT_LE(report.max_rss_kib, 256 * 1024);
  }
}

}  // namespace
}  // namespace leakscope::testing
