// `leakscope report` on purpose-built programs: each behaviour gets its verdict.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "harness.h"
#include "support/unwrapped.h"

namespace leakscope::testing {
namespace {

nlohmann::json report_of(const std::vector<std::string>& fixture_args, const std::string& interval) {
  std::string file = scratch_dir() + "/run.lsc";
  std::vector<std::string> args{"run", "-o", file, "--interval", interval, "--", fixture("behaviours")};
  args.insert(args.end(), fixture_args.begin(), fixture_args.end());
  Outcome run = leakscope(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  return nlohmann::json::parse(report.out);
}

// ctest runs each case in a process of its own; the cases of one ctest run share one run of the
// fixture, cached under the ctest process's id.
nlohmann::json shared_behaviours_report() {
  std::string base = std::filesystem::temp_directory_path() / ("leakscope-behaviours-" + std::to_string(getppid()));
  int lock = open((base + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  flock(lock, LOCK_EX);
  nlohmann::json document;
  std::string cached = read_file(base + ".json");
  if (!cached.empty()) {
    document = nlohmann::json::parse(cached);
  } else {
    document = report_of({"4"}, "100ms");
    std::ofstream(base + ".json") << document.dump();
  }
  flock(lock, LOCK_UN);
  close(lock);
  return document;
}

class Behaviours : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { document_ = new nlohmann::json(shared_behaviours_report()); }
  static void TearDownTestSuite() { delete document_; }
  static const nlohmann::json& document() { return *document_; }

  static std::string verdict_at(const std::string& function) {
    nlohmann::json site = site_at(document(), function);
    return site.contains("verdict") ? site["verdict"].get<std::string>() : "missing";
  }

 private:
  static nlohmann::json* document_;
};

nlohmann::json* Behaviours::document_ = nullptr;

TEST_F(Behaviours, SteadyLeakIsALeak) { EXPECT_EQ(verdict_at("steady_leak"), "leak"); }
TEST_F(Behaviours, LateStartingLeakIsALeak) { EXPECT_EQ(verdict_at("late_leak"), "leak"); }
TEST_F(Behaviours, BoundedCacheIsACache) { EXPECT_EQ(verdict_at("cache_insert"), "cache"); }

TEST_F(Behaviours, CacheEvictionsAreFreedAtTheirLifetime) {
  // 64 entries, one insert per 5 ms: an entry lives about 320 ms, 3 to 4 epochs of 100 ms, so its
  // bytes land in lifetime buckets 2 ([2, 4) epochs) and 3 ([4, 8)).
  nlohmann::json buckets = site_at(document(), "cache_insert")["freed_bytes_by_lifetime"];
  double total = 0, expected = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    total += buckets[b].get<double>();
    if (b == 2 || b == 3) expected += buckets[b].get<double>();
  }
  EXPECT_GT(total, 100 * 2048.0);
  EXPECT_GT(expected / total, 0.8) << buckets.dump();
}
TEST_F(Behaviours, UnboundedCacheIsALeak) { EXPECT_EQ(verdict_at("unbounded_insert"), "leak"); }
TEST_F(Behaviours, StartupWeightsAreStartup) { EXPECT_EQ(verdict_at("load_weights"), "startup"); }
TEST_F(Behaviours, ChurnLeavesNothingLive) { EXPECT_TRUE(sites_at(document(), "churn").empty()); }

TEST_F(Behaviours, LeakOnOneThreadIsALeakOwnedByThatThread) {
  nlohmann::json site = site_at(document(), "leak_on_named_thread");
  EXPECT_EQ(site["verdict"], "leak");
  ASSERT_EQ(site["threads"].size(), 1u);
  EXPECT_EQ(site["threads"][0]["name"], "leaky-worker");
}

TEST_F(Behaviours, LeakInOneTaskIsALeakOwnedByThatTask) {
  nlohmann::json site = site_at(document(), "leak_in_task");
  EXPECT_EQ(site["verdict"], "leak");
  ASSERT_EQ(site["tasks"].size(), 1u);
  EXPECT_EQ(site["tasks"][0]["name"], "ingest");
}

TEST_F(Behaviours, GrowthIsAttributedToTheTaskAndTheThreadThatLeak) {
  auto owner = [](const char* list, const std::string& name) {
    for (const auto& entry : document()[list]) {
      if (entry["name"].is_string() && entry["name"] == name) return entry;
    }
    return nlohmann::json();
  };
  nlohmann::json ingest = owner("by_task", "ingest");
  ASSERT_FALSE(ingest.is_null());
  EXPECT_TRUE(ingest["growing"].get<bool>());
  EXPECT_GT(ingest["growth_bytes_per_min"].get<double>(), 1024.0 * 60 * 25);  // 1 KiB per 20 ms, give or take
  nlohmann::json serve = owner("by_task", "serve");
  EXPECT_TRUE(serve.is_null() || !serve["growing"].get<bool>());
  nlohmann::json leaky = owner("by_thread", "leaky-worker");
  ASSERT_FALSE(leaky.is_null());
  EXPECT_TRUE(leaky["growing"].get<bool>());
  nlohmann::json tidy = owner("by_thread", "tidy-worker");
  EXPECT_TRUE(tidy.is_null() || !tidy["growing"].get<bool>());
}

TEST_F(Behaviours, LeaksComeFirstRankedByGrowthWithTheirNumbers) {
  const nlohmann::json& sites = document()["sites"];
  ASSERT_FALSE(sites.empty());
  EXPECT_EQ(sites[0]["verdict"], "leak");
  double previous = 1e300;
  bool in_leaks = true;
  for (const auto& site : sites) {
    if (site["verdict"] != "leak") {
      in_leaks = false;
      continue;
    }
    ASSERT_TRUE(in_leaks) << "a leak listed after a non-leak";
    double growth = site["growth_bytes_per_min"];
    EXPECT_LE(growth, previous);
    previous = growth;
    EXPECT_GT(site["leak_entropy"].get<double>(), 0.0);
    EXPECT_GT(site["confidence"].get<double>(), 0.0);
    EXPECT_TRUE(site.contains("first_seen_s"));
  }
  // steady_leak: 4 KiB per 20 ms = 12 MiB/min, give or take scheduling.
  double steady = site_at(document(), "steady_leak")["growth_bytes_per_min"];
  EXPECT_GT(steady, 8.0 * (1 << 20));
  EXPECT_LT(steady, 13.0 * (1 << 20));
}

TEST_F(Behaviours, NoOtherSiteOfTheProgramIsCalledALeak) {
  const std::vector<std::string> leaking = {"steady_leak", "late_leak", "unbounded_insert", "leak_on_named_thread",
                                            "leak_in_task"};
  for (const auto& site : document()["sites"]) {
    if (site["verdict"] != "leak") continue;
    std::string function = site["frames"][0]["function"].is_string() ? site["frames"][0]["function"].get<std::string>() : "?";
    EXPECT_NE(std::find(leaking.begin(), leaking.end(), function), leaking.end()) << function << " called a leak";
  }
}

TEST(SlowLeak, OneKibEveryFiftyMillisecondsAmidHeavyChurnIsALeak) {
  nlohmann::json document = report_of({"slow", "15"}, "1s");
  nlohmann::json site = site_at(document, "slow_leak");
  EXPECT_EQ(site["verdict"], "leak") << site.dump(1);
  EXPECT_TRUE(sites_at(document, "churn").empty());
}

TEST(ReportCli, TextReportNamesTheLeakAndFitsOneHundredColumns) {
  std::string file = scratch_dir() + "/demo.lsc";
  Outcome run = leakscope({"run", "-o", file, "--interval", "250ms", "--", LEAKSCOPE_DEMO, "--seconds", "3"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Outcome report = leakscope({"report", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  size_t leaks = report.out.find("Leak suspects: 1\n");
  ASSERT_NE(leaks, std::string::npos) << report.out;
  EXPECT_NE(report.out.find("#1 leak", leaks), std::string::npos);
  EXPECT_NE(report.out.find("at format_debug_trace", leaks), std::string::npos) << report.out;
  for (const std::string& line : lines_wider_than(report.out, 100)) ADD_FAILURE() << "wider than 100 columns: " << line;
  Outcome json = leakscope({"report", "--format", "json", file});
  nlohmann::json document = nlohmann::json::parse(json.out);
  EXPECT_EQ(document["sites"][0]["verdict"], "leak");
  EXPECT_EQ(document["sites"][0]["frames"][0]["function"], "(anonymous namespace)::format_debug_trace(demo::Request const&, float)");
  int leak_count = 0, cache_count = 0, startup_weights = 0;
  for (const auto& group : document["groups"]) {
    leak_count += group["verdict"] == "leak";
    cache_count += group["verdict"] == "cache";
  }
  for (const auto& site : document["sites"]) {
    std::string function = site["frames"][0]["function"].is_string() ? site["frames"][0]["function"].get<std::string>() : "";
    if (function.find("load_model_weights") != std::string::npos && site["live_bytes"] == 24 << 20) {
      startup_weights += site["verdict"] == "startup";
    }
  }
  EXPECT_EQ(leak_count, 1);
  EXPECT_GE(cache_count, 1);
  EXPECT_EQ(startup_weights, 1);
}

// Groups of blocks that hold 0 bytes have nothing to judge: one line counts them, instead of an
// entry each of "heap 0 B" among the groups a reader has to look at.
TEST(ReportCli, GroupsOfZeroByteBlocksAreCountedInOneLine) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("zero_byte_blocks")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string text = unwrapped(leakscope({"report", file}).out);
  size_t unjudged = text.find("\nNot judged: ");
  ASSERT_NE(unjudged, std::string::npos) << text;
  EXPECT_NE(text.find("3 groups of blocks that hold 0 bytes (6 blocks: malloc(0), empty buffers): nothing to judge", unjudged),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find(" 0 B in "), std::string::npos) << text;
  EXPECT_NE(text.find("in leak_record"), std::string::npos) << text;
  // The JSON keeps every group, each judged on its own.
  nlohmann::json document = nlohmann::json::parse(leakscope({"report", "--format", "json", file}).out);
  int empty = 0;
  for (const auto& group : document["groups"]) {
    if (group["live_bytes"] != 0) continue;
    ++empty;
    EXPECT_EQ(group["verdict"], "unknown");
    EXPECT_EQ(group["reason"], "its blocks hold 0 bytes: nothing to judge");
  }
  EXPECT_EQ(empty, 3);
}

// A stdio buffer first allocated as the program prints its result is seen by one snapshot: not
// judged, as nothing that short is, but it is the runtime's own, which `check` leaves out; "run
// longer" is no advice for it.
TEST(ReportCli, TheRuntimesOwnBufferSeenTooBrieflyGetsNoAdviceToRunLonger) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("operator_registry"), "10"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string text = unwrapped(leakscope({"report", file}).out);
  size_t buffer = text.find("runtime: a stdio buffer");
  ASSERT_NE(buffer, std::string::npos) << text;
  size_t entry_end = text.find("\n  ", buffer);
  std::string entry = text.substr(buffer, entry_end == std::string::npos ? std::string::npos : entry_end - buffer);
  EXPECT_NE(entry.find("too few snapshots to judge (1), and no need to: it is the runtime's own"), std::string::npos) << entry;
  EXPECT_EQ(entry.find("run longer"), std::string::npos) << entry;
  // The program's own groups, as short, keep the advice.
  size_t registry = text.find("in (anonymous namespace)::register_schema()");
  ASSERT_NE(registry, std::string::npos) << text;
  EXPECT_LT(text.find("run longer", registry), text.find("\n  ", registry)) << text;

  // Nor does the gate count it among the groups it could not judge: it never gates the runtime's own.
  std::string gate = unwrapped(leakscope({"check", file}).out);
  EXPECT_NE(gate.find("note: 2 groups (72.00 KiB) could not be judged"), std::string::npos) << gate;
  EXPECT_EQ(gate.find("libstdc++"), std::string::npos) << gate;
  EXPECT_EQ(gate.find("_IO_file_doallocate"), std::string::npos) << gate;
}

// The text names the six largest tasks and says how many more hold what.
TEST(ReportCli, TasksBeyondTheSixLargestAreCountedNotDropped) {
  std::string file = scratch_dir() + "/run.lsc";
  ASSERT_EQ(leakscope({"run", "-o", file, "--", fixture("tasks_holding_memory")}).exit_code, 0);
  std::string text = unwrapped(leakscope({"report", file}).out);
  size_t line = text.find("\nby task: ");
  ASSERT_NE(line, std::string::npos) << text;
  std::string by_task = text.substr(line + 1, text.find('\n', line + 1) - line - 1);
  for (const char* shown : {"endpoint-9 9.00 KiB", "endpoint-5 5.00 KiB"}) EXPECT_NE(by_task.find(shown), std::string::npos) << by_task;
  EXPECT_EQ(by_task.find("endpoint-4"), std::string::npos) << by_task;
  EXPECT_NE(by_task.find(" · and 4 more, 10.00 KiB (--format json lists them)"), std::string::npos) << by_task;
  nlohmann::json document = nlohmann::json::parse(leakscope({"report", "--format", "json", file}).out);
  EXPECT_EQ(document["by_task"].size(), 10u) << document["by_task"].dump();
}

TEST(ReportCli, BadOptionsAndFilesAreOneLineErrors) {
  Outcome missing = leakscope({"report", "/nonexistent.lsc"});
  EXPECT_EQ(missing.exit_code, 3);
  Outcome size = leakscope({"report", "--min-bytes", "lots", "/nonexistent.lsc"});
  EXPECT_EQ(size.exit_code, 2);
  EXPECT_NE(size.err.find("--min-bytes"), std::string::npos);
}

}  // namespace
}  // namespace leakscope::testing

namespace leakscope::testing {
namespace {

TEST(DiffCli, SitesThatAppearedAndVanishedAreExact) {
  std::string directory = scratch_dir();
  ASSERT_EQ(leakscope({"run", "-o", directory + "/a.lsc", "--", fixture("alloc_patterns"), "malloc"}).exit_code, 0);
  ASSERT_EQ(leakscope({"run", "-o", directory + "/b.lsc", "--", fixture("alloc_patterns"), "calloc"}).exit_code, 0);
  Outcome outcome = leakscope({"diff", "--format", "json", directory + "/a.lsc", directory + "/b.lsc"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json document = nlohmann::json::parse(outcome.out);
  nlohmann::json vanished = site_at(document, "leak_with_malloc");
  EXPECT_EQ(vanished["status"], "vanished");
  EXPECT_EQ(vanished["before_bytes"], 100000);
  EXPECT_EQ(vanished["after_bytes"], 0);
  EXPECT_EQ(vanished["delta_bytes"], -100000);
  nlohmann::json appeared = site_at(document, "leak_with_calloc");
  EXPECT_EQ(appeared["status"], "appeared");
  EXPECT_EQ(appeared["after_bytes"], 50 * 770);
  EXPECT_EQ(appeared["after_blocks"], 50);
  EXPECT_TRUE(appeared["before_verdict"].is_null());
  Outcome text = leakscope({"diff", directory + "/a.lsc", directory + "/b.lsc"});
  EXPECT_NE(text.out.find("vanished"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("at leak_with_calloc"), std::string::npos) << text.out;
  EXPECT_EQ(leakscope({"diff", directory + "/a.lsc", "/nonexistent.lsc"}).exit_code, 3);
}

}  // namespace
}  // namespace leakscope::testing

namespace leakscope::testing {
namespace {

// A stream as one hour at 1 s snapshots leaves: 3600 snapshots of 2000 sites (see
// bench/make_long_stream.cc). Every leaking site must be called a leak and every cache a cache,
// in bounded memory. (How fast is measured in bench/, not here.)
TEST(LongStream, HourLongStreamIsJudgedInBoundedMemory) {
  std::string file = scratch_dir() + "/hour.lsc";
  Outcome made = run_program({LEAKSCOPE_MAKE_LONG_STREAM, file, "--snapshots", "3600", "--sites", "2000"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  Outcome report = leakscope({"report", "--format", "json", "--top", "100000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_LT(report.max_rss_kib, 200 * 1024);
  nlohmann::json document = nlohmann::json::parse(report.out);
  EXPECT_EQ(document["snapshots"], 3600);
  int leaks = 0, caches = 0;
  for (const auto& site : document["sites"]) {
    uint64_t address = std::stoull(site["frames"][0]["address"].get<std::string>(), nullptr, 16);
    if (address < 0x30000000) {
      EXPECT_EQ(site["verdict"], "leak") << site["frames"][0]["address"];
      ++leaks;
    } else if (address < 0x50000000) {
      EXPECT_EQ(site["verdict"], "cache") << site["frames"][0]["address"];
      ++caches;
    } else {
      ADD_FAILURE() << "a churning site is live: " << site["frames"][0]["address"];
    }
  }
  EXPECT_NE(made.out.find("leaks=" + std::to_string(leaks) + " caches=" + std::to_string(caches)), std::string::npos)
      << made.out;
}

}  // namespace
}  // namespace leakscope::testing

namespace leakscope::testing {
namespace {

TEST(Residency, RssGrowthThatTrackingDoesNotExplainIsAFinding) {
  nlohmann::json document = report_of({"untracked", "3"}, "100ms");
  ASSERT_EQ(document["findings"].size(), 1u) << document["findings"].dump(1);
  const nlohmann::json& finding = document["findings"][0];
  EXPECT_EQ(finding["kind"], "untracked_growth");
  // 256 KiB every 20 ms is 750 MiB/min; scheduling makes it somewhat less.
  EXPECT_GT(finding["untracked_growth_bytes_per_min"].get<double>(), 300.0 * (1 << 20));
  EXPECT_LT(finding["tracked_growth_bytes_per_min"].get<double>(), 1.0 * (1 << 20));
  ASSERT_GE(document["residency"].size(), 20u);
  EXPECT_GT(document["residency"].back()["rss_bytes"].get<double>(), document["residency"][0]["rss_bytes"].get<double>());
}

TEST(Residency, TrackedGrowthIsNotReportedAsUntracked) {
  // The behaviours run grows by its leaks, all of them tracked.
  EXPECT_TRUE(shared_behaviours_report()["findings"].empty());
}

// Copies a fixture elsewhere, runs the copy, then removes or replaces it before reading.
std::string run_copy_of(const std::string& directory) {
  std::string copy = directory + "/alloc_patterns_copy";
  std::filesystem::copy_file(fixture("alloc_patterns"), copy);
  std::filesystem::permissions(copy, std::filesystem::perms::owner_all);
  Outcome run = leakscope({"run", "-o", directory + "/run.lsc", "--", copy, "malloc"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return copy;
}

nlohmann::json site_in_copy(const nlohmann::json& document) {
  for (const auto& site : document["sites"]) {
    if (site["live_bytes"] == 100000 && site["live_blocks"] == 100) return site;
  }
  ADD_FAILURE() << "no site of 100 blocks of 1000 bytes";
  return nlohmann::json::object({{"frames", nlohmann::json::array({nlohmann::json::object({{"module", ""}})})}});
}

TEST(Symbolization, ModuleWhoseFileIsGoneIsNamedMissing) {
  std::string directory = scratch_dir();
  std::string copy = run_copy_of(directory);
  std::filesystem::remove(copy);
  nlohmann::json site = site_in_copy(dump(directory + "/run.lsc"));
  EXPECT_EQ(site["frames"][0]["module"], copy + " (missing)");
  EXPECT_TRUE(site["frames"][0]["function"].is_null());
}

TEST(Symbolization, ModuleRebuiltSinceTheRunIsNamedChangedAndNotMisread) {
  std::string directory = scratch_dir();
  std::string copy = run_copy_of(directory);
  std::filesystem::copy_file(fixture("attribution"), copy, std::filesystem::copy_options::overwrite_existing);
  nlohmann::json site = site_in_copy(dump(directory + "/run.lsc"));
  EXPECT_EQ(site["frames"][0]["module"], copy + " (changed since the run)");
  EXPECT_TRUE(site["frames"][0]["function"].is_null());
}

}  // namespace
}  // namespace leakscope::testing
