// CUDA device memory through CUPTI, on the stand-in driver and libcupti (tests/cuda/standin), which
// drive leakscope's real callback code with the driver's own parameter structs: every memory call
// kind lands in its domain exactly, on the stack of the code that made it; failures record
// nothing; a destroyed context ends its blocks; caching-allocator blocks are found inside their
// segments; another CUPTI subscriber is named once and host tracking goes on; and a program
// without CUDA is left as it is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace leakscope::testing {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

std::vector<std::string> cuda_run(const std::string& file, const std::vector<std::string>& command,
                                  const std::vector<std::string>& flags = {"--cuda"}) {
  std::vector<std::string> args{"run", "-o", file, "--option", std::string("cupti=") + LEAKSCOPE_STANDIN_CUPTI};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

// report_between_far_snapshots() runs `command` traced with periodic snapshots 4 s apart and no
// ramp, high-water snapshots at `high_water` ("0": none), and gives its report's document.
nlohmann::json report_between_far_snapshots(const std::string& file, const std::vector<std::string>& command,
                                            const std::string& high_water) {
  Outcome run = leakscope(cuda_run(file, command, {"--cuda", "--interval", "4s", "--option", "ramp=0", "--option", "high_water=" + high_water}));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  Outcome report = leakscope({"report", "--format", "json", file});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  return nlohmann::json::parse(report.out.empty() ? "{}" : report.out);
}

// served_metrics() is what `leakscope serve FILE --prometheus` gives a scrape, on a port from
// `first_port` on told apart by the test's pid.
Outcome served_metrics(const std::string& file, int first_port) {
  int port = first_port + static_cast<int>(getpid() % 9000);
  std::string script = "\"" + std::string(LEAKSCOPE_CLI) + "\" serve " + file + " --prometheus 127.0.0.1:" +
                       std::to_string(port) + " & serve=$!; for i in $(seq 1 40); do sleep 0.25; curl -sf http://127.0.0.1:" +
                       std::to_string(port) + "/metrics && break; done; kill -TERM $serve; wait $serve";
  return run_program({"bash", "-c", script}, {}, 60);
}

// sites_holding() is every live site of `domain` with `function` among its frames (the stand-in
// driver's own bookkeeping makes heap sites on the same stacks).
std::vector<nlohmann::json> sites_holding(const nlohmann::json& document, const std::string& function,
                                          const std::string& domain) {
  std::vector<nlohmann::json> found;
  for (const auto& site : document["sites"]) {
    if (site["domain"] != domain) continue;
    for (const auto& frame : site["frames"]) {
      if (frame["function"].is_string() && frame["function"].get<std::string>().find(function) != std::string::npos) {
        found.push_back(site);
        break;
      }
    }
  }
  return found;
}

// The service (tests/cuda/fixtures/cuda_service.cc) serves 6 requests on two threads: run once.
class CudaService : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = new std::string(scratch_dir() + "/service.lsc");
    Outcome run = leakscope(cuda_run(*file_, {fixture("cuda_service"), "serve", "6"}));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(run.out, "served 6 requests, 6 KV caches kept\n");
    ASSERT_EQ(run.err.find("CUDA device memory is not tracked"), std::string::npos) << run.err;
    document_ = new nlohmann::json(dump(*file_));
  }
  static void TearDownTestSuite() {
    delete document_;
    delete file_;
  }
  static std::string* file_;
  static nlohmann::json* document_;
};
std::string* CudaService::file_ = nullptr;
nlohmann::json* CudaService::document_ = nullptr;

TEST_F(CudaService, DeviceHostAndManagedMemoryAreExactPerDomain) {
  const nlohmann::json& domains = (*document_)["live_bytes_by_domain"];
  // Weights 64 MiB, six 2 MiB KV caches, the kept expandable segment's 4 MiB of physical memory.
  EXPECT_EQ(domains["cuda"], 64 * kMiB + 6 * 2 * kMiB + 4 * kMiB);
  EXPECT_EQ(domains["cuda_host"], 4 * kMiB + 64 * 1024);  // the pinned staging buffer, the registered I/O buffer
  EXPECT_EQ(domains["cuda_managed"], 1 * kMiB);
  EXPECT_EQ((*document_)["device_tracking"], "on");
}

TEST_F(CudaService, TheKeptKvCachesAreOneSiteOnTheStackOfTheCallThatMadeThem) {
  std::vector<nlohmann::json> sites = sites_holding(*document_, "serve_request", "cuda");
  ASSERT_EQ(sites.size(), 1u) << "only the KV cache outlives its request";
  EXPECT_EQ(sites[0]["domain"], "cuda");
  EXPECT_EQ(sites[0]["live_bytes"], 6 * 2 * kMiB);
  EXPECT_EQ(sites[0]["live_blocks"], 6);
  EXPECT_EQ(sites_holding(*document_, "worker", "cuda").size(), 1u) << "the host stack runs out to the worker thread";
  EXPECT_NE(sites[0]["frames"][0]["function"].get<std::string>().find("serve_request"), std::string::npos)
      << "the driver's and CUPTI's own frames are left out";
  int64_t by_threads = 0;
  for (const auto& thread : sites[0]["threads"]) by_threads += thread["live_bytes"].get<int64_t>();
  EXPECT_EQ(by_threads, 6 * 2 * kMiB);
  EXPECT_EQ(sites[0]["threads"].size(), 2u);
}

TEST_F(CudaService, StreamOrderedPooledAndPitchedBlocksEndWithTheirFreesAndAFailedAllocationRecordsNothing) {
  // Per request: 8 MiB workspace, 1 MiB async scratch, 512 KiB from a pool, a pitched image, a
  // segment; all given back. A 100 GiB batch fails. What is live is what DeviceHostAndManaged... says.
  for (const auto& site : (*document_)["sites"]) {
    std::string domain = site["domain"];
    if (domain != "cuda" && domain != "cuda_host" && domain != "cuda_managed") continue;
    EXPECT_LT(site["live_bytes"].get<int64_t>(), 100 * 1024 * kMiB);
  }
  EXPECT_EQ(sites_holding(*document_, "load_weights", "cuda").at(0)["live_bytes"], 64 * kMiB);
  EXPECT_EQ(sites_holding(*document_, "pin_staging_buffer", "cuda_host").at(0)["live_bytes"], 4 * kMiB);
  EXPECT_EQ(sites_holding(*document_, "share_counters", "cuda_managed").at(0)["live_bytes"], 1 * kMiB);
  // The stand-in driver maps its host memory with mmap: that layer is shown on its own.
  EXPECT_EQ(sites_holding(*document_, "pin_staging_buffer", "mmap").at(0)["live_bytes"], 4 * kMiB);
}

TEST_F(CudaService, VmmMemoryIsChargedWhenCreatedAndReservedAddressSpaceIsNot) {
  std::vector<nlohmann::json> segments = sites_holding(*document_, "grow_segment", "cuda");
  ASSERT_EQ(segments.size(), 1u) << "the six per-request segments were released";
  EXPECT_EQ(segments[0]["domain"], "cuda");
  EXPECT_EQ(segments[0]["live_bytes"], 4 * kMiB);
  EXPECT_EQ(segments[0]["live_blocks"], 1);
}

TEST(Cuda, TheKvCacheLeakIsJudgedGatedAndExportedLikeAHostLeak) {
  std::string directory = scratch_dir();
  std::string file = directory + "/service.lsc";
  Outcome run = leakscope(cuda_run(file, {fixture("cuda_service"), "serve", "60"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Judged at the final snapshot: the snapshot before main's return, judged by default, may catch
  // a request in flight (its workspace and scratch live) on a loaded machine.
  Outcome report = leakscope({"report", "--at", "end", "--format", "json", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json groups = nlohmann::json::parse(report.out)["groups"];
  nlohmann::json kv;
  for (const auto& group : groups) {
    const nlohmann::json& function = group["frame"]["function"];
    if (function.is_string() && function.get<std::string>().find("serve_request") != std::string::npos &&
        group["parts"][0]["domain"] == "cuda") {
      kv = group;
    }
  }
  ASSERT_FALSE(kv.is_null()) << report.out;
  EXPECT_EQ(kv["verdict"], "leak");
  EXPECT_EQ(kv["live_bytes"], 60 * 2 * kMiB);
  Outcome gate = leakscope({"check", file, "--at", "end", "--max-leaked", "1MiB"});
  EXPECT_EQ(gate.exit_code, 1);
  EXPECT_NE(gate.out.find("(largest: serve_request"), std::string::npos) << gate.out;
  Outcome folded = leakscope({"export", file, "--at", "end", "--folded", directory + "/service.folded"});
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  int64_t kv_bytes = 0;
  std::istringstream lines(read_file(directory + "/service.folded"));
  for (std::string line; std::getline(lines, line);) {
    // The device block's stack starts at the program's call (the driver's and CUPTI's frames are
    // left out); the stand-in driver's own heap bookkeeping on that call runs on inside it.
    size_t innermost = line.rfind(';');
    if (innermost == std::string::npos || line.find("serve_request", innermost) == std::string::npos) continue;
    kv_bytes += std::stoll(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(kv_bytes, 60 * 2 * kMiB);
}

TEST(Cuda, DestroyingAContextEndsEveryBlockMadeInIt) {
  std::string file = scratch_dir() + "/context.lsc";
  Outcome run = leakscope(cuda_run(file, {fixture("cuda_service"), "context"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "in the context: cuda 3145728, cuda_host 1048576, cuda_managed 2097152\n"
            "context destroyed: cuda 0, cuda_host 0, cuda_managed 0\n");
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["live_bytes_by_domain"].value("cuda", 0), 0);
  EXPECT_EQ(document["live_bytes_by_domain"].value("cuda_host", 0), 0);
  EXPECT_EQ(document["live_bytes_by_domain"].value("cuda_managed", 0), 0);
}

// report_groups() is `leakscope report --format json`'s groups.
nlohmann::json report_groups(const std::string& file) {
  Outcome report = leakscope({"report", "--format", "json", file});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  return report.exit_code == 0 ? nlohmann::json::parse(report.out)["groups"] : nlohmann::json::array();
}

TEST(Cuda, TensorsKeptAliveAreALeakInsideTheCachingAllocatorsReserveWhichIsNot) {
  std::string file = scratch_dir() + "/keep.lsc";
  Outcome run = leakscope(cuda_run(file, {fixture("caching_allocator_service"), "keep", "40"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["live_bytes_by_domain"]["c10_cuda"], 40 * kMiB);
  EXPECT_EQ(document["live_bytes_by_domain"]["cuda"], 60 * kMiB);  // three 20 MiB segments
  int64_t c10_bytes = 0, cuda_bytes = 0;
  for (const auto& site : sites_holding(document, "forward", "c10_cuda")) c10_bytes += site["live_bytes"].get<int64_t>();
  for (const auto& site : sites_holding(document, "forward", "cuda")) cuda_bytes += site["live_bytes"].get<int64_t>();
  EXPECT_EQ(c10_bytes, 40 * kMiB);
  EXPECT_EQ(cuda_bytes, 60 * kMiB);
  ASSERT_EQ(document["devices"].size(), 1u);
  EXPECT_EQ(document["devices"][0]["device"], 0);
  EXPECT_EQ(document["devices"][0]["c10_cuda_inside_cuda_bytes"], 40 * kMiB) << "every kept tensor lies in a segment";
  EXPECT_EQ(document["devices"][0]["driver_total_bytes"], int64_t{80} << 30);

  int64_t leaked_c10 = 0, reserve = 0;
  for (const auto& group : report_groups(file)) {
    bool device_reserve = group["runtime"] == "the caching allocator's reserve of device memory";
    for (const auto& part : group["parts"]) {
      if (part["domain"] == "c10_cuda") {
        EXPECT_EQ(group["verdict"], "leak");
        leaked_c10 += part["live_bytes"].get<int64_t>();
      }
      if (part["domain"] == "cuda") {
        EXPECT_TRUE(device_reserve) << group.dump();
        EXPECT_NE(group["verdict"], "leak");
        reserve += part["live_bytes"].get<int64_t>();
      }
    }
  }
  EXPECT_EQ(leaked_c10, 40 * kMiB);
  EXPECT_EQ(reserve, 60 * kMiB) << "the layers are never one group";
  // What tasks own: the tensors (and host bytes), not the segments that hold them as well.
  nlohmann::json report = nlohmann::json::parse(leakscope({"report", "--format", "json", file}).out);
  int64_t owned = 0;
  for (const auto& task : report["by_task"]) owned += task["live_bytes"].get<int64_t>();
  EXPECT_GE(owned, 40 * kMiB);
  EXPECT_LT(owned, 41 * kMiB);
  // The device peak is the kept tensors, not the segments around them.
  EXPECT_EQ(report["device_peak"]["tracked_bytes"], 40 * kMiB) << report["device_peak"].dump(1);
  EXPECT_NE(report["device_peak"]["holders"][0]["name"].get<std::string>().find("forward"), std::string::npos);
  Outcome text = leakscope({"report", file});
  EXPECT_NE(text.out.find("device 0: cuda 60.00 MiB (40.00 MiB of it in c10_cuda tensors) · c10_cuda 40.00 MiB"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("reserved by the caching allocator, not leaked"), std::string::npos) << text.out;
  Outcome gate = leakscope({"check", file, "--max-leaked", "1MiB"});
  EXPECT_EQ(gate.exit_code, 1);
  EXPECT_NE(gate.out.find("FAIL max-leaked: 40.00 MiB leaked"), std::string::npos) << gate.out;

  // The exports count the segments' bytes once: the tensors at their sites, of the reserve only
  // the 20 MiB no tensor holds.
  std::string folded_file = scratch_dir() + "/keep.folded";
  Outcome exported = leakscope({"export", file, "--at", "end", "--folded", folded_file});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  nlohmann::json end = dump(file, {"--at", "end"});
  int64_t all_domains = 0;
  for (const auto& [domain, bytes] : end["live_bytes_by_domain"].items()) all_domains += bytes.get<int64_t>();
  int64_t folded_total = 0, forward_bytes = 0;
  std::istringstream lines(read_file(folded_file));
  for (std::string line; std::getline(lines, line);) {
    int64_t bytes = std::stoll(line.substr(line.rfind(' ') + 1));
    folded_total += bytes;
    if (line.find("forward") != std::string::npos && bytes >= kMiB) forward_bytes += bytes;  // not its host bookkeeping
  }
  EXPECT_EQ(folded_total, all_domains - 40 * kMiB);
  EXPECT_EQ(forward_bytes, 40 * kMiB + 20 * kMiB);

  // Prometheus: the device's own series, what a dashboard of a GPU service watches.
  Outcome served = served_metrics(file, 21000);
  ASSERT_EQ(served.exit_code, 0) << served.err;
  for (const std::string& series : {"leakscope_device_tracked_bytes{device=\"0\",domain=\"cuda\"} 62914560\n",
                                    "leakscope_device_tracked_bytes{device=\"0\",domain=\"c10_cuda\"} 41943040\n",
                                    "leakscope_device_cached_bytes{device=\"0\"} 20971520\n",
                                    "leakscope_device_driver_total_bytes{device=\"0\"} 85899345920\n"}) {
    EXPECT_NE(served.out.find("\n" + series), std::string::npos) << series << " in\n" << served.out;
  }
}

TEST(Cuda, ABurstOfTensorsBetweenPeriodicSnapshotsIsTheDevicePeak) {
  // Halfway through small requests, one holds 16 tensors of 16 MiB for 500 ms, between periodic
  // snapshots 4 s apart: a high-water snapshot of device memory sees them, and the device peak is
  // theirs, not the reserve's segments that stay after them. Without it, nothing the program held
  // on the device outside the reserve was ever seen.
  auto device_peak = [](const std::string& file, const std::string& high_water) {
    return report_between_far_snapshots(file, {fixture("caching_allocator_service"), "burst", "30"}, high_water)["device_peak"];
  };
  nlohmann::json peak = device_peak(scratch_dir() + "/burst.lsc", "64MiB");
  ASSERT_TRUE(peak.is_object()) << peak.dump();
  EXPECT_GE(peak["tracked_bytes"].get<int64_t>(), 256 * kMiB - 64 * kMiB) << peak.dump(1);
  EXPECT_LE(peak["tracked_bytes"].get<int64_t>(), 258 * kMiB) << peak.dump(1);
  ASSERT_FALSE(peak["holders"].empty());
  EXPECT_NE(peak["holders"][0]["name"].get<std::string>().find("forward_large_batch"), std::string::npos) << peak.dump(1);

  nlohmann::json unseen = device_peak(scratch_dir() + "/unseen.lsc", "0");
  EXPECT_TRUE(unseen.is_null()) << unseen.dump(1);
}

TEST(Cuda, EachDeviceHasItsOwnPeakBesideTheirSum) {
  // A model split over two devices: device 1 holds a burst of activations early, device 0 peaks
  // at the end, when it loads more weights; their sum peaks at the burst.
  std::string file = scratch_dir() + "/stages.lsc";
  Outcome run = leakscope(cuda_run(file, {fixture("cuda_service"), "stages"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.out, "served in two stages\n");
  Outcome json = leakscope({"report", "--format", "json", file});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json report = nlohmann::json::parse(json.out);
  const nlohmann::json& peaks = report["device_peaks"];
  ASSERT_EQ(peaks.size(), 2u) << peaks.dump(1);
  EXPECT_EQ(peaks[0]["device"], 0);
  EXPECT_EQ(peaks[0]["bytes"], 96 * kMiB);
  EXPECT_EQ(peaks[1]["device"], 1);
  EXPECT_EQ(peaks[1]["bytes"], 96 * kMiB);
  EXPECT_LT(peaks[1]["snapshot"].get<uint32_t>(), peaks[0]["snapshot"].get<uint32_t>()) << peaks.dump(1);
  EXPECT_EQ(report["device_peak"]["tracked_bytes"], 160 * kMiB) << report["device_peak"].dump(1);
  EXPECT_EQ(report["device_peak"]["snapshot"], peaks[1]["snapshot"]);

  Outcome text = leakscope({"report", file});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("most taken from the driver, by device: device 0 96.00 MiB at"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" · device 1 96.00 MiB"), std::string::npos) << text.out;

  Outcome served = served_metrics(file, 31000);
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_NE(served.out.find("\nleakscope_device_peak_bytes{device=\"0\"} 100663296\n"), std::string::npos) << served.out;
  EXPECT_NE(served.out.find("\nleakscope_device_peak_bytes{device=\"1\"} 100663296\n"), std::string::npos) << served.out;
}

TEST(Cuda, ADeviceThatRisesWhileTheSumDoesNotIsSeenAtItsPeak) {
  // 128 MiB held on device 0 for a second, then on device 1, then on device 0 again,
  // between periodic snapshots 4 s apart: once device 0's rise was seen, the devices' sum never
  // rises again, and device 1's own high-water bar asks for the snapshot that sees it.
  auto device_peaks = [](const std::string& file, const std::string& high_water) {
    return report_between_far_snapshots(file, {fixture("cuda_service"), "swap"}, high_water)["device_peaks"];
  };
  nlohmann::json peaks = device_peaks(scratch_dir() + "/swap.lsc", "64MiB");
  ASSERT_EQ(peaks.size(), 2u) << peaks.dump(1);
  EXPECT_EQ(peaks[0]["device"], 0);
  EXPECT_EQ(peaks[0]["bytes"], 128 * kMiB);
  EXPECT_EQ(peaks[1]["device"], 1);
  EXPECT_EQ(peaks[1]["bytes"], 128 * kMiB);
  // Without high-water snapshots only the snapshots at exit see anything, all of it on device 0.
  nlohmann::json unseen = device_peaks(scratch_dir() + "/swap_unseen.lsc", "0");
  ASSERT_EQ(unseen.size(), 1u) << unseen.dump(1);
  EXPECT_EQ(unseen[0]["device"], 0);
}

TEST(Cuda, AReserveThatOnlyGrowsIsTheCachingAllocatorsNotALeak) {
  std::string file = scratch_dir() + "/reserve.lsc";
  Outcome run = leakscope(cuda_run(file, {fixture("caching_allocator_service"), "reserve", "30"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["live_bytes_by_domain"].value("c10_cuda", 0), 0);
  EXPECT_GT(document["live_bytes_by_domain"]["cuda"].get<int64_t>(), 400 * kMiB);
  bool seen = false;
  for (const auto& group : report_groups(file)) {
    if (group["parts"][0]["domain"] != "cuda") continue;
    seen = true;
    EXPECT_EQ(group["runtime"], "the caching allocator's reserve of device memory");
    EXPECT_EQ(group["verdict"], "cache") << "it grew, and it is still no leak";
  }
  EXPECT_TRUE(seen);
  Outcome gate = leakscope({"check", file, "--max-leaked", "1MiB"});
  EXPECT_EQ(gate.exit_code, 0) << gate.out;
  // The note on groups not judged names none of the reserve (MiB); only the program's small ones.
  size_t note = gate.out.find("could not be judged");
  std::string unjudged = note == std::string::npos ? "" : gate.out.substr(note, gate.out.find("PASS", note) - note);
  EXPECT_EQ(unjudged.find("MiB"), std::string::npos) << gate.out;
}

TEST(Cuda, AnotherCuptiSubscriberIsNamedOnceAndHostTrackingGoesOn) {
  std::string file = scratch_dir() + "/held.lsc";
  Outcome run = leakscope(cuda_run(file, {fixture("cuda_service"), "serve", "2"}), {{"STANDIN_CUPTI_HOLDER", "Nsight Systems"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "served 2 requests, 2 KV caches kept\n");
  const std::string line =
      "leakscope: CUDA device memory is not tracked: CUPTI allows one subscriber and Nsight Systems holds it (a profiler "
      "such as Nsight or torch.profiler); host and c10 tracking go on\n";
  EXPECT_NE(run.err.find(line), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find(line), run.err.rfind(line)) << "said once";
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["live_bytes_by_domain"].value("cuda", 0), 0);
  EXPECT_EQ(document["device_tracking"], "cupti_held");
  // The stream says so too, so that a gate on it is not passed in silence.
  Outcome gate = leakscope({"check", file, "--max-leaked", "1MiB"});
  EXPECT_NE(gate.out.find("device memory: not tracked, though the cuda option asked for it: another tool held CUPTI's one"),
            std::string::npos) << gate.out;
  std::vector<nlohmann::json> io = sites_holding(document, "register_io_buffer", "heap");
  ASSERT_EQ(io.size(), 1u);
  EXPECT_EQ(io[0]["domain"], "heap");
  EXPECT_EQ(io[0]["live_bytes"], 64 * 1024);
}

TEST(Cuda, NoLibcuptiIsSaidInTheStreamAndHostTrackingGoesOn) {
  std::string file = scratch_dir() + "/no-cupti.lsc";
  Outcome run = leakscope({"run", "-o", file, "--cuda", "--option", "cupti=/nonexistent/libcupti.so", "--",
                           fixture("cuda_service"), "serve", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("leakscope: CUDA device memory is not tracked: cannot load libcupti from the cupti option"),
            std::string::npos) << run.err;
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["device_tracking"], "no_cupti");
  EXPECT_EQ(sites_holding(document, "register_io_buffer", "heap").at(0)["live_bytes"], 64 * 1024);
}

TEST(Cuda, VmmMemoryReleasedWhileMappedLivesUntilUnmapped) {
  std::string file = scratch_dir() + "/vmm.lsc";
  Outcome run = leakscope(cuda_run(file, {fixture("cuda_service"), "vmm"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "released while mapped: cuda 16777216, cuda_host 0, cuda_managed 0\n"
            "unmapped: cuda 0, cuda_host 0, cuda_managed 0\n");
}

TEST(Cuda, ALibraryThatUsesCudaAndNvtxBeforeLeakscopeStartsIsStillFollowed) {
  // Its static initializer runs before libleakscope's: cuInit, a 5 MiB buffer, an NVTX range.
  std::string file = scratch_dir() + "/early.lsc";
  Outcome run = leakscope(cuda_run(file, {fixture("early_cuda_service")}, {"--cuda", "--nvtx"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "ready 1\n");
  nlohmann::json document = dump(file);
  EXPECT_EQ(sites_holding(document, "warm_up_device", "cuda").at(0)["live_bytes"], 5 * kMiB);
  nlohmann::json vocabulary = sites_holding(document, "load_vocabulary", "heap").at(0);
  EXPECT_EQ(vocabulary["live_bytes"], 11111);
  EXPECT_EQ(vocabulary["tasks"].at(0)["name"], "early-work");
}

TEST(Cuda, AProgramThatInheritsTheInjectionWithoutThePreloadStaysUntraced) {
  // An exec'd program under follow_exec=0 keeps CUDA_INJECTION64_PATH: the driver loads
  // libleakscope into it, where it does nothing.
  std::string directory = scratch_dir();
  Outcome run = run_program({fixture("cuda_service"), "serve", "2"},
                            {{"LD_PRELOAD", ""}, {"CUDA_INJECTION64_PATH", preload_library()},
                             {"NVTX_INJECTION64_PATH", preload_library()},
                             {"LEAKSCOPE_OPTIONS", "cuda=1,nvtx=1,output=" + directory + "/inherited.lsc"}});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "served 2 requests, 2 KV caches kept\n");
  EXPECT_EQ(run.err, "");
  EXPECT_TRUE(files_in(directory).empty());
}

TEST(Cuda, WithoutTheCudaOptionTheDriverIsNotFollowed) {
  std::string file = scratch_dir() + "/plain.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("cuda_service"), "serve", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["live_bytes_by_domain"].value("cuda", 0), 0);
  EXPECT_EQ(sites_holding(document, "register_io_buffer", "heap").at(0)["live_bytes"], 64 * 1024);
}

TEST(Cuda, AProgramWithoutCudaIsLeftAsItIsByCudaAndNvtx) {
  std::string directory = scratch_dir();
  std::string plain = directory + "/plain.lsc", with = directory + "/with.lsc";
  Outcome untraced = run_program({fixture("steady_leak_ci"), "250"});
  Outcome traced = leakscope({"run", "-o", plain, "--", fixture("steady_leak_ci"), "250"});
  Outcome both = leakscope({"run", "-o", with, "--cuda", "--nvtx", "--", fixture("steady_leak_ci"), "250"});
  ASSERT_EQ(both.exit_code, untraced.exit_code) << both.err;
  EXPECT_EQ(both.out, untraced.out);
  EXPECT_EQ(both.err, "leakscope: wrote " + with + "\n");
  nlohmann::json document = dump(with);
  EXPECT_EQ(site_at(document, "parse_record")["live_bytes"], 1024000);
  EXPECT_EQ(dump(plain)["live_bytes_by_domain"], document["live_bytes_by_domain"]);
  // Nothing of CUDA is loaded into it.
  Outcome maps = leakscope({"run", "-o", directory + "/cat.lsc", "--cuda", "--nvtx", "--", "/bin/cat", "/proc/self/maps"});
  ASSERT_EQ(maps.exit_code, 0) << maps.err;
  EXPECT_NE(maps.out.find("libleakscope"), std::string::npos);
  EXPECT_EQ(maps.out.find("libcupti"), std::string::npos);
  EXPECT_EQ(maps.out.find("libcuda"), std::string::npos);
}

}  // namespace
}  // namespace leakscope::testing
