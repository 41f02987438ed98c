// `leakscope run` and `leakscope report` with their defaults on programs written as real services
// and test binaries are: clean shutdowns that free everything, Python's teardown, runs of a few
// seconds, bursts, late starts, realloc chains and growing vectors, caches beside memos, weights
// and batch working sets. Each behaviour gets its verdict, its exact bytes and its first user frame.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "harness.h"
#include "support/unwrapped.h"

namespace leakscope::testing {
namespace {

const char* const kPython = "/usr/bin/python3";

struct Judged {
  std::string file;  // the stream
  Outcome run;
  nlohmann::json report;
};

// judge() runs the program under `leakscope run` and reads `leakscope report --format json`, both
// with their default options (as a user would type them), and `extra` report options.
Judged judge(const std::vector<std::string>& program, const std::vector<std::string>& extra = {}) {
  std::string file = scratch_dir() + "/run.lsc";
  std::vector<std::string> run{"run", "-o", file, "--"};
  run.insert(run.end(), program.begin(), program.end());
  Judged judged;
  judged.file = file;
  judged.run = leakscope(run);
  EXPECT_EQ(judged.run.exit_code, 0) << judged.run.err;
  std::vector<std::string> report{"report", "--format", "json", "--top", "1000", file};
  report.insert(report.end(), extra.begin(), extra.end());
  Outcome outcome = leakscope(report);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  judged.report = nlohmann::json::parse(outcome.out.empty() ? "{}" : outcome.out);
  return judged;
}

std::string user_function(const nlohmann::json& group) {
  const nlohmann::json& frame = group["first_user_frame"];
  return frame.is_object() && frame["function"].is_string() ? frame["function"].get<std::string>() : "";
}

// groups_named() lists the groups whose first user frame's function contains `text`.
std::vector<nlohmann::json> groups_named(const nlohmann::json& document, const std::string& text) {
  std::vector<nlohmann::json> found;
  for (const auto& group : document["groups"]) {
    if (user_function(group).find(text) != std::string::npos) found.push_back(group);
  }
  return found;
}

nlohmann::json group_named(const nlohmann::json& document, const std::string& text) {
  std::vector<nlohmann::json> found = groups_named(document, text);
  EXPECT_EQ(found.size(), 1u) << "groups named " << text;
  return found.empty() ? nlohmann::json::object({{"verdict", "missing"}, {"parts", nlohmann::json::array()}}) : found[0];
}

// part_of() is the part of `group` of `domain` with the most bytes.
nlohmann::json part_of(const nlohmann::json& group, const std::string& domain) {
  for (const auto& part : group["parts"]) {
    if (part["domain"] == domain) return part;
  }
  ADD_FAILURE() << "no " << domain << " part in " << group.dump(1);
  return nlohmann::json::object({{"live_bytes", -1}, {"live_blocks", -1}});
}

int64_t parts_total(const nlohmann::json& group) {
  int64_t total = 0;
  for (const auto& part : group["parts"]) total += part["live_bytes"].get<int64_t>();
  return total;
}

std::vector<std::string> leak_functions(const nlohmann::json& document) {
  std::vector<std::string> functions;
  for (const auto& group : document["groups"]) {
    if (group["verdict"] == "leak") functions.push_back(user_function(group));
  }
  return functions;
}

// sites_at_python_line() lists the sites whose innermost Python frame is at `line`.
std::vector<nlohmann::json> sites_at_python_line(const nlohmann::json& document, int line) {
  std::vector<nlohmann::json> found;
  for (const auto& site : document["sites"]) {
    for (const auto& frame : site["frames"]) {
      if (frame["language"] != "python") continue;
      if (frame["line"] == line) found.push_back(site);
      break;
    }
  }
  return found;
}

bool python_has_torch() {
  static const bool has = run_program({kPython, "-c", "import torch"}, {{"LD_PRELOAD", ""}}).exit_code == 0;
  return has;
}

// Requests whose objects refer to each other leave garbage only the collector frees; in a run of a
// few seconds its oldest generation is seldom collected (never, beside torch's hundred thousand
// objects), so the garbage grows all run long. leakscope has the interpreter collect it before the
// teardown mark, as it would after: no leak, and a leak beside the garbage is still one.
TEST(JudgedRun, ReferenceCyclesLeftToTheCollectorAreNoLeak) {
  std::vector<std::string> program{kPython, fixture_source("cyclic_request_handler.py"), "3"};
  if (python_has_torch()) program.push_back("torch");
  Judged judged = judge(program);
  EXPECT_EQ(judged.run.out.rfind("handled ", 0), 0u) << judged.run.out;
  for (const char* function : {"handle", "validate", "__init__", "retry"}) {
    for (const nlohmann::json& group : groups_named(judged.report, function)) {
      EXPECT_NE(group["verdict"], "leak") << group.dump().substr(0, 1500);
    }
  }
  Outcome gate = leakscope({"check", judged.file});
  EXPECT_EQ(gate.exit_code, 0) << gate.out;

  program.push_back("keep");
  Judged leaking = judge(program);
  int line = marker_line("cyclic_request_handler.py", "the leak");
  std::vector<nlohmann::json> kept = sites_at_python_line(leaking.report, line);
  ASSERT_FALSE(kept.empty()) << "no site at line " << line;
  EXPECT_EQ(kept[0]["verdict"], "leak") << kept[0].dump().substr(0, 1500);
  Outcome leaking_gate = leakscope({"check", leaking.file});
  EXPECT_EQ(leaking_gate.exit_code, 1) << leaking_gate.out;
}

// A group's sites that hold nothing by the judged snapshot held its bytes before: an epoch's memo
// whose last epoch's entries come from another path below the same line moved its bytes, it did
// not grow. Judged on its live sites alone, the group rose from the settings' plateau at the end.
TEST(JudgedRun, BytesThatMovedToNewSitesBelowTheSameLineAreNoGrowth) {
  Judged judged = judge({fixture("epoch_memo_service"), "5", "600"});
  ASSERT_EQ(judged.run.out, "epochs=5 settings=300\n");
  std::vector<nlohmann::json> memo = groups_named(judged.report, "remember");
  ASSERT_EQ(memo.size(), 1u) << judged.report.dump().substr(0, 2000);
  EXPECT_EQ(memo[0]["verdict"], "cache") << memo[0].dump().substr(0, 1500);
  EXPECT_GE(memo[0]["live_bytes"].get<int64_t>(), 300 * 400);
  Outcome gate = leakscope({"check", judged.file});
  EXPECT_EQ(gate.exit_code, 0) << gate.out;
}

TEST(JudgedRun, CleanShutdownServerLeakIsJudgedBeforeTeardownAndShownFreedAtExit) {
  Judged judged = judge({fixture("clean_shutdown_server"), "global", "500"});
  ASSERT_EQ(judged.run.out, "sessions=125\n");
  const nlohmann::json& document = judged.report;
  EXPECT_NE(document["teardown"], nullptr);
  nlohmann::json login = group_named(document, "Server::handle_login");
  EXPECT_EQ(login["verdict"], "leak") << login["reason"];
  // 125 sessions of 1024 bytes, and the vector that holds them (128 pointers).
  EXPECT_EQ(login["live_bytes"], 125 * 1024 + 128 * 8);
  EXPECT_EQ(login["live_blocks"], 126);
  EXPECT_EQ(login["live_bytes"], parts_total(login));
  EXPECT_EQ(login["freed_at_exit_bytes"], login["live_bytes"]) << "the clean shutdown frees all of it";
  EXPECT_EQ(leak_functions(document), std::vector<std::string>{user_function(login)});
}

TEST(JudgedRun, ServerDestroyedAsMainReturnsStillShowsItsLeak) {
  Judged judged = judge({fixture("clean_shutdown_server"), "local", "500"});
  ASSERT_EQ(judged.run.out, "sessions=125\n");
  nlohmann::json login = group_named(judged.report, "Server::handle_login");
  EXPECT_EQ(login["verdict"], "leak") << login["reason"];
  // Up to the snapshot before main returned: what the last epoch added may be missing.
  int64_t blocks = login["live_blocks"].get<int64_t>() - 1;  // less the vector's buffer
  EXPECT_GE(blocks, 60);
  EXPECT_LE(blocks, 125);
  EXPECT_EQ(login["freed_at_exit_bytes"], login["live_bytes"]);
  EXPECT_EQ(leak_functions(judged.report), std::vector<std::string>{user_function(login)});
}

// A shutdown that drains an event list one upstream write at a time frees for longer than a
// second before main returns: the leak is judged as of where the shutdown began, not as a resident
// flat through the drain, and the gate fails.
TEST(JudgedRun, LeakDrainedByASlowShutdownIsStillALeak) {
  Judged judged = judge({fixture("event_log_drained_at_shutdown"), "2", "800"});
  ASSERT_EQ(judged.run.out.rfind("events=", 0), 0u) << judged.run.out;
  int64_t events = std::stoll(judged.run.out.substr(7));
  const nlohmann::json& document = judged.report;
  EXPECT_NE(document["snapshot_chosen"].get<std::string>().find("after a shutdown that freed what the program held at"), std::string::npos)
      << document["snapshot_chosen"];
  nlohmann::json log = group_named(document, "record_event");
  EXPECT_EQ(log["verdict"], "leak") << log["reason"];
  // As of the snapshot where the drain began: the events of its last interval may be missing.
  int64_t blocks = log["live_blocks"];
  EXPECT_EQ(log["live_bytes"], blocks * 248);
  EXPECT_GE(blocks, events * 3 / 4);
  EXPECT_LE(blocks, events);
  EXPECT_EQ(log["freed_at_exit_bytes"], log["live_bytes"]);
  EXPECT_EQ(leak_functions(document), std::vector<std::string>{"record_event"});
  EXPECT_EQ(leakscope({"check", judged.file}).exit_code, 1);
}

TEST(JudgedRun, FinalStateAfterACleanShutdownHoldsNoneOfTheLeak) {
  std::string file = scratch_dir() + "/run.lsc";
  ASSERT_EQ(leakscope({"run", "-o", file, "--", fixture("clean_shutdown_server"), "global", "200"}).exit_code, 0);
  Outcome end = leakscope({"report", "--format", "json", "--top", "1000", "--at", "end", file});
  ASSERT_EQ(end.exit_code, 0) << end.err;
  EXPECT_TRUE(groups_named(nlohmann::json::parse(end.out), "Server::handle_login").empty());
}

TEST(JudgedRun, SteadyLeakInATwoSecondTestBinaryIsALeak) {
  Judged judged = judge({fixture("steady_leak_ci"), "250"});
  nlohmann::json parse = group_named(judged.report, "parse_record");
  EXPECT_EQ(parse["verdict"], "leak") << parse["reason"];
  EXPECT_EQ(parse["live_bytes"], 250 * 4096);
  EXPECT_EQ(parse["live_blocks"], 250);
  EXPECT_GT(parse["confidence"].get<double>(), 0.5);
  EXPECT_EQ(leak_functions(judged.report), std::vector<std::string>{"parse_record"});
}

TEST(JudgedRun, LeakThatGrowsInBurstsIsALeak) {
  Judged judged = judge({fixture("burst_leak"), "5", "200", "500"});
  nlohmann::json rows = group_named(judged.report, "index_row");
  EXPECT_EQ(rows["verdict"], "leak") << rows["reason"];
  EXPECT_EQ(rows["live_bytes"], 1000 * 512);
  EXPECT_EQ(rows["live_blocks"], 1000);
  EXPECT_EQ(leak_functions(judged.report).size(), 1u);
}

TEST(JudgedRun, LeakThatStartsAfterAStartupRampIsALeakAndTheRampIsStartup) {
  Judged judged = judge({fixture("late_leak_after_ramp"), "20000", "300"});
  nlohmann::json traces = group_named(judged.report, "trace_request");
  EXPECT_EQ(traces["verdict"], "leak") << traces["reason"];
  EXPECT_EQ(traces["live_bytes"], 300 * 1536);
  nlohmann::json vocabulary = group_named(judged.report, "load_vocabulary");
  EXPECT_EQ(vocabulary["verdict"], "startup") << vocabulary["reason"];
  EXPECT_EQ(leak_functions(judged.report).size(), 1u);
}

TEST(JudgedRun, ReallocChainThatKeepsGrowingIsALeak) {
  Judged judged = judge({fixture("realloc_chain"), "16", "125"});
  nlohmann::json lines = group_named(judged.report, "append_line");
  EXPECT_EQ(lines["verdict"], "leak") << lines["reason"];
  EXPECT_EQ(lines["live_bytes"], 16 * 125 * 1024);
  EXPECT_EQ(lines["live_blocks"], 16);
}

TEST(JudgedRun, VectorThatKeepsGrowingIsALeak) {
  Judged judged = judge({fixture("growing_vector"), "2500"});
  ASSERT_EQ(judged.run.out, "events=2500 capacity=4096\n");
  nlohmann::json log = group_named(judged.report, "record_event");
  EXPECT_EQ(log["verdict"], "leak") << log["reason"];
  EXPECT_EQ(log["live_bytes"], 4096 * 1024);
  EXPECT_EQ(log["live_blocks"], 1);
  EXPECT_EQ(leak_functions(judged.report).size(), 1u);
}

// The same log let go of as main ends: the shutdown frees one block of the program's few hundred,
// told by its bytes. Before, the run was judged at main's return and the log was not there.
TEST(JudgedRun, VectorReleasedAsMainEndsIsStillALeak) {
  Judged judged = judge({fixture("growing_vector"), "2500", "release"});
  ASSERT_EQ(judged.run.out, "events=2500 capacity=4096\n");
  EXPECT_NE(judged.report["snapshot_chosen"].get<std::string>().find("after a shutdown that freed what the program held at"), std::string::npos)
      << judged.report["snapshot_chosen"];
  nlohmann::json log = group_named(judged.report, "record_event");
  EXPECT_EQ(log["verdict"], "leak") << log["reason"];
  EXPECT_EQ(log["live_bytes"], 4096 * 1024);
  EXPECT_EQ(log["live_blocks"], 1);
  EXPECT_EQ(log["freed_at_exit_bytes"], 4096 * 1024);
  EXPECT_EQ(leakscope({"check", judged.file}).exit_code, 1);
}

TEST(JudgedRun, BoundedLruIsACacheBesideAnUnboundedMemoThatLeaks) {
  Judged judged = judge({fixture("lru_beside_memo"), "800"});
  nlohmann::json memo = group_named(judged.report, "price_of");
  EXPECT_EQ(memo["verdict"], "leak") << memo["reason"];
  bool strings = false;
  for (const auto& part : memo["parts"]) strings |= part["live_blocks"] == 800 && part["live_bytes"] == 800 * 1001;
  EXPECT_TRUE(strings) << "800 memoized prices of 1001 bytes: " << memo["parts"].dump();
  std::vector<nlohmann::json> pages = groups_named(judged.report, "PageCache::put");
  ASSERT_FALSE(pages.empty());
  bool page_strings = false;
  for (const auto& group : pages) {
    EXPECT_EQ(group["verdict"], "cache") << group["reason"];
    for (const auto& part : group["parts"]) page_strings |= part["live_blocks"] == 100 && part["live_bytes"] == 100 * 3001;
  }
  EXPECT_TRUE(page_strings) << "the LRU holds its 100 pages of 3001 bytes";
  EXPECT_EQ(leak_functions(judged.report).size(), 1u);
}

TEST(JudgedRun, SharedHelperOfABoundedAndAnUnboundedCacheIsTwoGroups) {
  Judged judged = judge({fixture("shared_helper_caches"), "2500"});
  std::vector<nlohmann::json> puts = groups_named(judged.report, "cache_put");
  ASSERT_EQ(puts.size(), 2u) << "one group per caller of the helper";
  std::map<std::string, nlohmann::json> by_verdict;
  for (const auto& group : puts) by_verdict[group["verdict"].get<std::string>()] = group;
  ASSERT_EQ(by_verdict.count("leak"), 1u);
  ASSERT_EQ(by_verdict.count("cache"), 1u);
  EXPECT_EQ(by_verdict["leak"]["live_bytes"], 2500 * 200);  // every request's metadata
  EXPECT_EQ(by_verdict["cache"]["live_bytes"], 400 * 2048);  // the 400 thumbnails
  // Each names the caller it is told apart by.
  EXPECT_TRUE(by_verdict["leak"]["called_from"].is_object()) << by_verdict["leak"].dump();
  EXPECT_TRUE(by_verdict["cache"]["called_from"].is_object()) << by_verdict["cache"].dump();
  EXPECT_NE(by_verdict["leak"]["called_from"]["function"], by_verdict["cache"]["called_from"]["function"]);
  EXPECT_EQ(leak_functions(judged.report).size(), 1u);
  // So does the peak line, where both hold memory under the helper's one name.
  Outcome text = leakscope({"report", judged.file});
  std::string out = unwrapped(text.out);
  std::smatch peak;
  ASSERT_TRUE(std::regex_search(out, peak, std::regex(R"(peak: [^\n]*)"))) << text.out;
  for (const char* holder : {R"(cache_put \(shared_helper_caches\.c:\d+\) from remember_metadata \(shared_helper_caches\.c:32\) 488\.28 KiB \(leak\))",
                             R"(cache_put \(shared_helper_caches\.c:\d+\) from remember_thumbnail \(shared_helper_caches\.c:30\) 800\.00 KiB \(cache\))"}) {
    EXPECT_TRUE(std::regex_search(peak.str(), std::regex(holder))) << holder << "\n" << peak.str();
  }
}

// A group of sites that share their innermost frames (one handler reached by three transports) names
// each part by the frame that tells it apart, not by the frame they all have.
TEST(JudgedRun, EachPartOfAGroupIsNamedByTheCallerThatTellsItApart) {
  Judged judged = judge({fixture("sessions_by_transport"), "1400"});
  nlohmann::json sessions = group_named(judged.report, "open_session");
  ASSERT_EQ(sessions["verdict"], "leak") << sessions["reason"];
  ASSERT_EQ(sessions["parts"].size(), 3u) << sessions.dump(1);
  EXPECT_EQ(sessions["live_bytes"], 1400 * 128);
  Outcome text = leakscope({"report", judged.file});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  std::string out = unwrapped(text.out);
  for (const char* part : {R"(heap 100.00 KiB in 800 blocks · via serve_http\b)", R"(heap 50.00 KiB in 400 blocks · via serve_grpc\b)",
                           R"(heap 25.00 KiB in 200 blocks · via serve_admin_cli\b)"}) {
    EXPECT_TRUE(std::regex_search(out, std::regex(part))) << part << "\n" << text.out;
  }
}

// Each worker's own live bytes go up and down with the shared cache's entries it happens to hold;
// each still holds a quarter of the leak, and grows at that part of its rate.
TEST(JudgedRun, EveryPoolWorkerHoldingPartOfALeakGrowsAtItsPartOfTheLeaksRate) {
  Judged judged = judge({fixture("pool_with_shared_cache"), "4"});
  ASSERT_EQ(judged.run.out, "served\n");
  ASSERT_EQ(leak_functions(judged.report).size(), 1u);
  nlohmann::json leak = group_named(judged.report, "audit");
  ASSERT_EQ(leak["verdict"], "leak") << leak["reason"];
  ASSERT_EQ(leak["parts"].size(), 1u);
  double leak_growth = leak["growth_bytes_per_min"];
  ASSERT_GT(leak_growth, 0);
  std::map<int64_t, int64_t> leak_bytes_by_tid;
  for (const auto& site : judged.report["sites"]) {
    if (site["site"] != leak["parts"][0]["site"]) continue;
    for (const auto& thread : site["threads"]) leak_bytes_by_tid[thread["tid"].get<int64_t>()] = thread["live_bytes"];
  }
  ASSERT_EQ(leak_bytes_by_tid.size(), 4u) << "every worker served audits";
  int workers = 0;
  double workers_growth = 0;
  for (const auto& owner : judged.report["by_thread"]) {
    std::string name = owner["name"];
    if (name.rfind("worker-", 0) != 0) {
      EXPECT_FALSE(owner["growing"].get<bool>()) << name << " made the cache and the queue, not the leak";
      continue;
    }
    ++workers;
    EXPECT_TRUE(owner["growing"].get<bool>()) << name;
    double share = static_cast<double>(leak_bytes_by_tid[owner["tid"].get<int64_t>()]) / leak["live_bytes"].get<double>();
    EXPECT_NEAR(owner["growth_bytes_per_min"].get<double>(), share * leak_growth, 1e-6 * leak_growth) << name;
    workers_growth += owner["growth_bytes_per_min"].get<double>();
  }
  EXPECT_EQ(workers, 4);
  EXPECT_NEAR(workers_growth, leak_growth, 1e-6 * leak_growth);
  ASSERT_EQ(judged.report["by_task"].size(), 1u);
  EXPECT_NEAR(judged.report["by_task"][0]["growth_bytes_per_min"].get<double>(), leak_growth, 1e-6 * leak_growth);
}

TEST(JudgedRun, LeakInsideASystemLibraryIsNamedAtTheProgramsCall) {
  Judged judged = judge({fixture("compressor_leak"), "120"});
  for (const auto& group : judged.report["groups"]) {
    const nlohmann::json& frame = group["first_user_frame"];
    if (frame.is_object()) EXPECT_EQ(frame["module"].get<std::string>().find("libz"), std::string::npos) << group.dump(1);
  }
  bool state = false;
  for (const auto& group : groups_named(judged.report, "open_compressor")) {
    EXPECT_EQ(group["verdict"], "leak") << group["reason"];
    state |= group["live_blocks"].get<int64_t>() >= 120 * 4;  // deflate's window, prev, head and pending buffers
  }
  EXPECT_TRUE(state) << "zlib's state, allocated inside deflateInit, is named at open_compressor";
}

TEST(JudgedRun, LeakInARequestLambdaOfAReleaseBinaryIsOneGroupNamedByTheLambda) {
  Judged judged = judge({fixture("metrics_pool"), "2000"});
  ASSERT_EQ(judged.run.out, "labels=2000\n");
  std::vector<std::string> leaks = leak_functions(judged.report);
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_NE(leaks[0].find("main::{lambda"), std::string::npos) << leaks[0];
  for (const auto& group : judged.report["groups"]) {
    if (group["verdict"] != "leak") continue;
    EXPECT_GE(group["parts"].size(), 2u) << "the map's node and its key string are one entry";
    EXPECT_GE(group["live_blocks"].get<int64_t>(), 2 * 2000);
  }
}

TEST(JudgedRun, FramesWithoutLineInformationGetNoMadeUpLine) {
  Judged judged = judge({fixture("steady_leak_ci"), "20"});
  int starts = 0;
  for (const auto& site : judged.report["sites"]) {
    for (const auto& frame : site["frames"]) {
      if (frame["function"] != "_start") continue;
      ++starts;
      EXPECT_TRUE(frame["file"].is_null()) << frame.dump();  // crt1.o's _start has no debug info
    }
  }
  EXPECT_GT(starts, 0);
}

TEST(JudgedRun, StartupWeightsAreStartup) {
  Judged judged = judge({fixture("startup_weights"), "8", "400"});
  nlohmann::json weights = group_named(judged.report, "load_weights");
  EXPECT_EQ(weights["verdict"], "startup") << weights["reason"];
  EXPECT_EQ(weights["live_bytes"], 8 * (4 << 20));
  EXPECT_EQ(weights["live_blocks"], 8);
  EXPECT_TRUE(leak_functions(judged.report).empty());
}

TEST(JudgedRun, SawtoothWorkingSetOfBatchesIsACache) {
  Judged judged = judge({fixture("sawtooth_batches"), "500", "20"});
  nlohmann::json batch = group_named(judged.report, "enqueue");
  EXPECT_EQ(batch["verdict"], "cache") << batch["reason"];
  EXPECT_EQ(batch["live_bytes"].get<int64_t>() % 65536, 0);
  EXPECT_TRUE(leak_functions(judged.report).empty());
}

// Sessions made on one line, a cache holding the last 64 and a debug list keeping one in ten:
// the line is a leak whose live bytes hold the cache's too, and the report sets apart those
// older than any session freed, at most the kept ones and not the cache's young ones.
TEST(JudgedRun, ALeakSharingItsLineWithACacheSaysWhatIsOlderThanAnythingItFreed) {
  std::string file = scratch_dir() + "/sessions.lsc";
  Outcome run = leakscope({"run", "--check", "-o", file, "--", fixture("session_debug_list"), "4000"});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;  // the gate fails on the leak
  std::smatch printed;
  std::string out = run.out;
  ASSERT_TRUE(std::regex_search(out, printed, std::regex("kept=([0-9]+) session_bytes=([0-9]+)"))) << run.out;
  int64_t kept_bytes = std::stoll(printed[1]) * std::stoll(printed[2]);
  EXPECT_NE(unwrapped(run.out).find("older than anything it freed"), std::string::npos) << run.out;
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json document = nlohmann::json::parse(report.out);
  nlohmann::json sessions = group_named(document, "open_session");
  ASSERT_EQ(sessions["verdict"], "leak") << sessions.dump().substr(0, 2000);
  ASSERT_TRUE(sessions["older_than_freed_bytes"].is_number()) << sessions.dump().substr(0, 2000);
  int64_t older = sessions["older_than_freed_bytes"];
  EXPECT_GT(sessions["live_bytes"].get<int64_t>(), kept_bytes) << "the cache's sessions are live too";
  EXPECT_LE(older, kept_bytes);
  EXPECT_GE(older, kept_bytes / 3) << "most of a 4 s run's kept sessions are older than any freed one";

  // A leak that frees nothing has nothing to set apart.
  std::string steady = scratch_dir() + "/steady.lsc";
  ASSERT_EQ(leakscope({"run", "-o", steady, "--", fixture("steady_leak_ci"), "250"}).exit_code, 0);
  Outcome steady_report = leakscope({"report", "--format", "json", steady});
  nlohmann::json parse_record = group_named(nlohmann::json::parse(steady_report.out), "parse_record");
  EXPECT_EQ(parse_record["verdict"], "leak");
  EXPECT_TRUE(parse_record["older_than_freed_bytes"].is_null()) << parse_record.dump().substr(0, 2000);
}

// A map never pruned keeps its nodes and frees its bucket arrays as it rehashes: one group, a leak,
// with nothing to set apart as older than what it freed (its nodes are not a cache's turnover).
TEST(JudgedRun, AMapNeverPrunedIsALeakWithNothingSetApartFromItsBucketArrays) {
  std::string file = scratch_dir() + "/index.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("session_index"), "2500"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Outcome text = leakscope({"report", file});
  EXPECT_NE(text.out.find("Leak suspects: 1\n"), std::string::npos) << text.out;
  EXPECT_EQ(unwrapped(text.out).find("older than anything it freed"), std::string::npos) << text.out;
  nlohmann::json document = nlohmann::json::parse(leakscope({"report", "--format", "json", file}).out);
  nlohmann::json index = group_named(document, "open_session");
  ASSERT_EQ(index["verdict"], "leak") << index.dump().substr(0, 2000);
  EXPECT_EQ(index["parts"].size(), 2u) << "the nodes and the bucket array";
  EXPECT_TRUE(index["older_than_freed_bytes"].is_null()) << index.dump().substr(0, 2000);
}

TEST(JudgedRun, RingBufferOfRecentRepliesIsACacheAndTheServicePassesItsGate) {
  // A std::deque kept at its last 300 replies: its chunks span 5 or 6 at a time, and a run that
  // ended on 6 was a leak of 3 KiB that failed the gate.
  std::string file = scratch_dir() + "/ring.lsc";
  Outcome run = leakscope({"run", "--check", "-o", file, "--", fixture("batch_burst_service"), "3000", "1500", "0", "0"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  Outcome report = leakscope({"report", "--format", "json", "--top", "1000", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json document = nlohmann::json::parse(report.out);
  EXPECT_TRUE(leak_functions(document).empty()) << report.out;
  nlohmann::json replies = group_named(document, "reply_to");
  EXPECT_EQ(replies["verdict"], "cache") << replies["reason"];
  EXPECT_EQ(replies["live_bytes"], 300 * 4096);
}

// peak_of_burst() runs batch_burst_service into `file` for 3 s with periodic snapshots 4 s apart, its burst of
// `mebibytes` held for `hold_ms` from 1 s on (by `workers` threads, 0: the request's own),
// and returns the report's peak.
nlohmann::json peak_of_burst(const std::string& file, int mebibytes, int workers, int hold_ms = 500,
                             const std::vector<std::string>& options = {}) {
  std::vector<std::string> run{"run", "-o", file, "--interval", "4s", "--option", "ramp=0"};
  run.insert(run.end(), options.begin(), options.end());
  run.insert(run.end(), {"--", fixture("batch_burst_service"), "3000", "1000", std::to_string(mebibytes),
                         std::to_string(hold_ms), std::to_string(workers)});
  Outcome outcome = leakscope(run);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  Outcome report = leakscope({"report", "--format", "json", file});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  nlohmann::json peak = nlohmann::json::parse(report.out.empty() ? "{}" : report.out)["peak"];
  return peak.is_object() ? peak : nlohmann::json::object({{"tracked_bytes", 0}, {"holders", nlohmann::json::array()}});
}

TEST(JudgedRun, ABurstBetweenPeriodicSnapshotsIsSeenAtItsPeak) {
  // One request holds a 256 MiB batch for half a second, between periodic snapshots 4 s apart.
  // The high-water snapshot sees it within the least rise (64 MiB) of its top; without it, the
  // peak is the service's 1.2 MiB.
  std::string file = scratch_dir() + "/burst.lsc";
  nlohmann::json peak = peak_of_burst(file, 256, 0);
  EXPECT_GE(peak["tracked_bytes"].get<int64_t>(), int64_t{192} << 20) << peak.dump(1);
  EXPECT_LE(peak["tracked_bytes"].get<int64_t>(), int64_t{258} << 20) << peak.dump(1);
  EXPECT_GE(peak.value("time_s", 0.0), 1.0);
  ASSERT_FALSE(peak["holders"].empty());
  EXPECT_NE(peak["holders"][0]["name"].get<std::string>().find("assemble_batch"), std::string::npos) << peak.dump(1);
  EXPECT_GE(peak["holders"][0]["bytes"].get<int64_t>(), int64_t{192} << 20);
  // The line keeps a name of a few bytes: what it held at the peak is what it freed.
  Outcome text = leakscope({"report", file});
  EXPECT_TRUE(std::regex_search(unwrapped(text.out), std::regex(R"(assemble_batch \(batch_burst_service\.cc:\d+\) [0-9.]+ MiB \(freed since but for \d+ B, )")))
      << text.out;

  nlohmann::json unseen = peak_of_burst(scratch_dir() + "/unseen.lsc", 256, 0, 500, {"--option", "high_water=0"});
  EXPECT_LT(unseen["tracked_bytes"].get<int64_t>(), int64_t{8} << 20) << unseen.dump(1);
}

// A burst made while the program has had one thread only, whose records the writer applies
// (docs/RUNTIME.md): its blocks of a mebibyte are recorded at once, and the high-water snapshot
// sees it as it happens.
// peak_of_one_thread_run() is the peak `report` gives of one_thread_start_up run in `mode`, with
// periodic snapshots too far apart to see it.
nlohmann::json peak_of_one_thread_run(const std::string& mode) {
  std::string file = scratch_dir() + "/" + mode + ".lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "4s", "--option", "ramp=0", "--",
                               fixture("one_thread_start_up"), mode});
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  Outcome report = leakscope({"report", "--format", "json", file});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  return report.exit_code == 0 ? nlohmann::json::parse(report.out)["peak"] : nlohmann::json::object();
}

TEST(JudgedRun, ABurstOfAProgramThatHasOneThreadIsSeenAtItsPeak) {
  nlohmann::json peak = peak_of_one_thread_run("burst");
  ASSERT_TRUE(peak.contains("tracked_bytes")) << peak.dump(1);
  EXPECT_GE(peak["tracked_bytes"].get<int64_t>(), int64_t{96} << 20) << peak.dump(1);
  ASSERT_FALSE(peak["holders"].empty()) << peak.dump(1);
  EXPECT_NE(peak["holders"][0]["name"].get<std::string>().find("assemble_burst"), std::string::npos) << peak.dump(1);
  EXPECT_GE(peak["holders"][0]["bytes"].get<int64_t>(), int64_t{96} << 20);
}

// One large block right after thousands of small ones, all queued while the program has one thread:
// it is not left waiting behind them for the writer's next look.
TEST(JudgedRun, ALargeBlockQueuedBehindManyOfAProgramThatHasOneThreadIsSeenAtItsPeak) {
  nlohmann::json peak = peak_of_one_thread_run("model");
  ASSERT_TRUE(peak.contains("tracked_bytes")) << peak.dump(1);
  EXPECT_GE(peak["tracked_bytes"].get<int64_t>(), int64_t{200} << 20) << peak.dump(1);
  ASSERT_FALSE(peak["holders"].empty()) << peak.dump(1);
  EXPECT_NE(peak["holders"][0]["name"].get<std::string>().find("load_model"), std::string::npos) << peak.dump(1);
}

TEST(JudgedRun, ABurstOfAPoolWhoseThreadsEachHoldUnderAMebibyteIsSeenToo) {
  // 200 threads of 768 KiB each: 150 MiB that no thread alone would have made known, held together
  // for 1.5 s. The first high-water snapshot comes as the threads are still making their shares;
  // the next waits four times that snapshot's cost, which a loaded machine (200 threads starting,
  // other tests beside) stretches past half a second: 3 runs of 5 beside three busy processes then
  // showed only the first (65-67 MiB).
  nlohmann::json peak = peak_of_burst(scratch_dir() + "/pool.lsc", 150, 200, 1500);
  EXPECT_GE(peak["tracked_bytes"].get<int64_t>(), int64_t{86} << 20) << peak.dump(1);
  EXPECT_LE(peak["tracked_bytes"].get<int64_t>(), int64_t{152} << 20) << peak.dump(1);
  ASSERT_FALSE(peak["holders"].empty());
  EXPECT_NE(peak["holders"][0]["name"].get<std::string>().find("assemble_share"), std::string::npos) << peak.dump(1);
}

TEST(JudgedRun, PythonServiceLeakingIntoAModuleDictIsALeakThatTeardownFrees) {
  Judged judged = judge({kPython, fixture_source("module_dict_service.py"), "400"});
  ASSERT_EQ(judged.run.out, "answered 400\n");
  const nlohmann::json& document = judged.report;
  // Judged where the interpreter begins to finalize, before it frees the module's globals.
  EXPECT_EQ(document["snapshot"], document["teardown_snapshot"]);
  // bytes(8000) is one malloc of 8000 + 33 bytes (the bytes object's header).
  bool found = false;
  for (const auto& site : document["sites"]) {
    if (site["live_blocks"] != 400 || site["live_bytes"] != 400 * 8033) continue;
    found = true;
    EXPECT_EQ(site["verdict"], "leak") << site["reason"];
    EXPECT_EQ(site["freed_at_exit_bytes"], site["live_bytes"]);
  }
  EXPECT_TRUE(found) << "a site of the 400 kept bytes objects";
}

// A service that clears its ever-growing audit log as it shuts down, at the end of main or in an
// atexit handler, both before the interpreter begins to finalize: the log is still a leak, judged
// as it was where that shutdown began, freed at exit, and the gate fails the service.
TEST(JudgedRun, PythonServiceThatClearsItsLeakAsItShutsDownStillShowsIt) {
  for (const char* clear_at : {"main", "atexit"}) {
    SCOPED_TRACE(clear_at);
    Judged judged = judge({kPython, fixture_source("pool_service_clearing_at_shutdown.py"), "3000", clear_at});
    ASSERT_EQ(judged.run.out, "audited 3000\n");
    int64_t buffers = 0;
    for (const auto& group : groups_named(judged.report, "audit")) {
      EXPECT_EQ(group["verdict"], "leak") << group["reason"];
      EXPECT_EQ(group["freed_at_exit_bytes"], group["live_bytes"]);
      for (const auto& part : group["parts"]) {
        int64_t blocks = part["live_blocks"], bytes = part["live_bytes"];
        if (bytes >= 1000 * blocks && bytes < 2000 * blocks) buffers += blocks;  // not the list's own buffer
      }
    }
    // Each record's 1000-byte buffer; those of the last snapshot interval before the shutdown are
    // only in the mark, which holds none of them.
    EXPECT_GE(buffers, 3000 * 3 / 4);
    EXPECT_LE(buffers, 3000);
    EXPECT_EQ(leakscope({"check", judged.file}).exit_code, 1);
  }
}

// A Python service that drains its event queue one pop at a time in `finally`: a shutdown of a
// second or more, after which the interpreter keeps a few of the events' objects on its free
// lists. The queue is still the leak, as it was where the drain began.
TEST(JudgedRun, PythonQueueDrainedSlowlyAtExitIsALeak) {
  Judged judged = judge({kPython, fixture_source("event_queue_drained_at_exit.py"), "2000"});
  ASSERT_EQ(judged.run.out, "events 2000\n");
  EXPECT_NE(judged.report["snapshot_chosen"].get<std::string>().find("after a shutdown that freed what the program held at"), std::string::npos)
      << judged.report["snapshot_chosen"];
  int line = marker_line("event_queue_drained_at_exit.py", "the leak");
  int64_t bodies = 0;
  for (const auto& site : sites_at_python_line(judged.report, line)) {
    EXPECT_EQ(site["verdict"], "leak") << site.dump();
    int64_t blocks = site["live_blocks"], bytes = site["live_bytes"];
    if (bytes >= 160 * blocks && bytes < 400 * blocks) bodies += blocks;  // the bytearrays' buffers
  }
  // As of where the drain began: the events of its last snapshot interval before are not there.
  EXPECT_GE(bodies, 2000 * 3 / 4);
  EXPECT_LE(bodies, 2000);
  EXPECT_EQ(leakscope({"check", judged.file}).exit_code, 1);
}

// A script's small leak cleared as it ends: its records go to the interpreter's free lists, so the
// blocks tracked do not fall, and those the script holds fall by a few hundred beside the
// interpreter's thousands. Before, the run was judged at the mark and showed no leak at all.
TEST(JudgedRun, SmallPythonLogClearedAtTheEndIsStillALeak) {
  constexpr int kRequests = 800;
  Judged judged = judge({kPython, fixture_source("request_log_cleared_at_exit.py"), std::to_string(kRequests)});
  ASSERT_EQ(judged.run.out, "served 800\n");
  EXPECT_NE(judged.report["snapshot_chosen"].get<std::string>().find("after a shutdown that freed what the program held at"), std::string::npos)
      << judged.report["snapshot_chosen"];
  int line = marker_line("request_log_cleared_at_exit.py", "the leak");
  int64_t records = 0;
  int64_t list_buffers = 0;
  for (const auto& site : sites_at_python_line(judged.report, line)) {
    EXPECT_EQ(site["verdict"], "leak") << site.dump();
    int64_t blocks = site["live_blocks"], bytes = site["live_bytes"];
    if (blocks == 1 && bytes > 64) {
      ++list_buffers;  // the list's array of its items, re-allocated ever larger
      continue;
    }
    EXPECT_EQ(bytes, 64 * blocks) << "one 64-byte tuple a record";
    records += blocks;
  }
  EXPECT_LE(list_buffers, 1);
  // Less those of the last interval before the end, and those the free list held at the start.
  EXPECT_GE(records, kRequests * 3 / 4);
  EXPECT_LE(records, kRequests);
  EXPECT_EQ(leakscope({"check", judged.file}).exit_code, 1);
}

// A log kept in one buffer re-allocated ever larger, cleared as the script ends: its bytes are
// born at its latest growth, yet it held half as much again as midway, so it is taken from where
// the shutdown began. Before, it was judged at the mark, where the log was gone.
TEST(JudgedRun, PythonBytearrayLogClearedAtTheEndIsStillALeak) {
  Judged judged = judge({kPython, fixture_source("access_log_cleared_at_exit.py"), "1000"});
  ASSERT_EQ(judged.run.out, "logged 52000\n");
  int line = marker_line("access_log_cleared_at_exit.py", "the leak");
  int64_t logs = 0;
  for (const auto& site : sites_at_python_line(judged.report, line)) {
    if (site["live_bytes"] < 4096) continue;
    ++logs;
    EXPECT_EQ(site["verdict"], "leak") << site.dump();
    EXPECT_EQ(site["live_blocks"], 1);
    // As of where the shutdown began, less the lines of its last interval; a bytearray grows its
    // buffer by an eighth over what it needs.
    EXPECT_GE(site["live_bytes"], 52000 * 3 / 4);
    EXPECT_LE(site["live_bytes"], 52000 * 9 / 8 + 64);
    EXPECT_EQ(site["freed_at_exit_bytes"], site["live_bytes"]);
  }
  EXPECT_EQ(logs, 1);
  EXPECT_EQ(leakscope({"check", judged.file}).exit_code, 1);
}

TEST(JudgedRun, TorchLeakAfterImportTorchInAShortRunIsALeak) {
  if (!python_has_torch()) GTEST_SKIP() << "python3-torch is not installed (scripts/install_deps.sh installs it)";
  // 300 outputs leave the leak 4.5 s to grow in after the import, enough snapshots even where a
  // loaded machine makes the import slow.
  Judged judged = judge({kPython, fixture_source("torch_leak_after_import.py"), "300"});
  ASSERT_EQ(judged.run.out, "kept 300\n");
  int line = marker_line("torch_leak_after_import.py", "infer");
  bool found = false;
  for (const auto& site : judged.report["sites"]) {
    if (site["domain"] != "c10_cpu" || site["live_bytes"] != 300 * 256 * 256 * 4) continue;
    found = true;
    EXPECT_EQ(site["verdict"], "leak") << site["reason"];
    EXPECT_EQ(site["live_blocks"], 300);
    EXPECT_EQ(site["freed_at_exit_bytes"], site["live_bytes"]);
    // Named at the Python line that made the tensor, with the torch op's frames above it.
    EXPECT_EQ(site["first_user_frame"]["function"], "infer");
    EXPECT_EQ(site["first_user_frame"]["line"], line);
    bool op_above = false;
    for (const auto& frame : site["frames"]) {
      if (frame["language"] == "python") break;
      op_above |= frame["function"].is_string() && frame["function"].get<std::string>().rfind("at::", 0) == 0;
    }
    EXPECT_TRUE(op_above) << "at:: frames above infer";
  }
  EXPECT_TRUE(found) << "a c10_cpu site of the 300 kept tensors";
  // One leak of the tensors: the storage and the tensors' own blocks, all from the line that made
  // them. infer's other lines make groups of their own (the list that keeps the tensors grows).
  int tensor_groups = 0;
  for (const nlohmann::json& group : groups_named(judged.report, "infer")) {
    if (group["first_user_frame"]["line"] != line) continue;
    EXPECT_EQ(group["verdict"], "leak") << group["reason"];
    ++tensor_groups;
    EXPECT_EQ(part_of(group, "c10_cpu")["live_bytes"], 300 * 256 * 256 * 4);
  }
  EXPECT_EQ(tensor_groups, 1);
  for (const std::string& function : leak_functions(judged.report)) EXPECT_EQ(function, "infer");
}

// main's locals take 0.8 s to destroy as it returns, and snapshots land while they are: the
// models are judged as they were before their teardown began, all 20 of them.
TEST(JudgedRun, LocalsDestroyedSlowlyAsMainReturnsAreJudgedWhole) {
  Judged judged = judge({fixture("slow_teardown_models"), "20"}, {"--min-bytes", "64KiB"});
  ASSERT_EQ(judged.run.out, "models=20\n");
  nlohmann::json models = group_named(judged.report, "load_model");
  int64_t weights = 0, blocks = 0;
  for (const auto& part : models["parts"]) {
    if (part["live_bytes"].get<int64_t>() % (262144 * 4) != 0) continue;
    weights += part["live_bytes"].get<int64_t>();
    blocks += part["live_blocks"].get<int64_t>();
  }
  EXPECT_EQ(weights, 20 * 262144 * 4) << models.dump(1).substr(0, 2000);
  EXPECT_EQ(blocks, 20);
}

TEST(JudgedRun, LibtorchModulesKeptUntilMainReturnsAreOneLeakOfTheLoadingFunction) {
  if (!LEAKSCOPE_HAVE_LIBTORCH) GTEST_SKIP() << "libtorch is not installed (scripts/install_deps.sh installs it)";
  if (!python_has_torch()) GTEST_SKIP() << "python3-torch is not installed (it writes the model)";
  std::string model = scratch_dir() + "/model.pt";
  Outcome made = run_program({kPython, fixture_source("make_torchscript_model.py"), model}, {{"LD_PRELOAD", ""}});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // libtorch's first snapshot writes some 200 000 stacks (seconds on a loaded machine); 60 versions
  // leave enough snapshots after it to judge.
  Judged judged = judge({fixture("torch_keeps_modules"), model, "60"}, {"--min-bytes", "64KiB"});
  ASSERT_EQ(judged.run.out, "versions=60\n");
  nlohmann::json loads = group_named(judged.report, "load_version");
  EXPECT_EQ(loads["verdict"], "leak") << loads["reason"];
  // Each version holds its 265 418 float parameters in 6 tensors; the group adds the storage to
  // the TensorImpls and the module's other blocks, all from the one call.
  nlohmann::json storage = part_of(loads, "c10_cpu");
  constexpr int64_t kWeights = 265418 * 4;
  int64_t versions = storage["live_bytes"].get<int64_t>() / kWeights;
  // The judged snapshot may fall inside a load: whole versions, and at most 5 tensors of the next.
  int64_t partial_blocks = storage["live_blocks"].get<int64_t>() - versions * 6;
  EXPECT_GE(partial_blocks, 0);
  EXPECT_LE(partial_blocks, 5);
  if (partial_blocks == 0) EXPECT_EQ(storage["live_bytes"].get<int64_t>(), versions * kWeights);
  EXPECT_GE(versions, 20);
  EXPECT_LE(versions, 60);
  EXPECT_EQ(loads["live_bytes"], parts_total(loads));
  EXPECT_GT(loads["parts"].size(), 1u);
  EXPECT_GT(loads["freed_at_exit_bytes"].get<int64_t>(), storage["live_bytes"].get<int64_t>() / 2);
  for (const std::string& function : leak_functions(judged.report)) {
    EXPECT_TRUE(function.find("load_version") != std::string::npos || function.find("serve_once") != std::string::npos)
        << function << " called a leak";
  }
}

}  // namespace
}  // namespace leakscope::testing
