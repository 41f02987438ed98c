// The leak check at exit (leak_check=1) on the behaviours LeakSanitizer's own tests are built
// around, each its own small program: exact lost bytes and blocks per site, and the program's
// output and exit status as they are without leakscope.
#include <gtest/gtest.h>

#include <array>
#include <set>

#include "harness.h"
#include "support/unwrapped.h"

namespace leakscope::testing {
namespace {

struct CheckedRun {
  Outcome traced;
  nlohmann::json dump;
  std::string file;
};

CheckedRun run_checked(const std::string& name, const std::vector<std::string>& arguments = {},
                       const std::string& extra_options = "") {
  std::string file = scratch_dir() + "/run.lsc";
  std::vector<std::string> command = {"run", "-o", file, "--", fixture(name)};
  command.insert(command.end(), arguments.begin(), arguments.end());
  Outcome traced = leakscope(command, {{"LEAKSCOPE_OPTIONS", "leak_check=1" + extra_options}});
  std::vector<std::string> plain_command = {fixture(name)};
  plain_command.insert(plain_command.end(), arguments.begin(), arguments.end());
  Outcome plain = run_program(plain_command);
  EXPECT_EQ(traced.exit_code, plain.exit_code) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(traced.err.find("leakscope: warning"), std::string::npos) << traced.err;
  return {traced, dump(file), file};
}

void expect_lost(const nlohmann::json& document, const std::string& function, int64_t bytes, int64_t blocks,
                 int64_t indirect_bytes = 0, int64_t indirect_blocks = 0) {
  nlohmann::json site = site_at(document, function);
  EXPECT_EQ(site["lost_bytes"], bytes) << function;
  EXPECT_EQ(site["lost_blocks"], blocks) << function;
  EXPECT_EQ(site["indirectly_lost_bytes"], indirect_bytes) << function;
  EXPECT_EQ(site["indirectly_lost_blocks"], indirect_blocks) << function;
}

// lost_at() sums the lost figures of every site whose innermost frame is `function`.
std::array<int64_t, 4> lost_at(const nlohmann::json& document, const std::string& function) {
  std::array<int64_t, 4> sum{};
  for (const nlohmann::json& site : sites_at(document, function)) {
    sum[0] += site["lost_bytes"].get<int64_t>();
    sum[1] += site["lost_blocks"].get<int64_t>();
    sum[2] += site["indirectly_lost_bytes"].get<int64_t>();
    sum[3] += site["indirectly_lost_blocks"].get<int64_t>();
  }
  return sum;
}

void expect_reachable(const nlohmann::json& document, const std::string& function, int64_t live_bytes) {
  nlohmann::json site = site_at(document, function);
  EXPECT_EQ(site["live_bytes"], live_bytes) << function;
  expect_lost(document, function, 0, 0);
}

TEST(LeakCheck, BlockPointingOnlyAtItselfIsLostWhileGlobalsKeepTheirs) {
  CheckedRun run = run_checked("lost_self_pointer");
  ASSERT_TRUE(run.dump["leak_check"]["scanned"]) << run.dump["leak_check"];
  EXPECT_EQ(run.dump["leak_check"]["threads_missed"], 0);
  expect_lost(run.dump, "make_self_pointing", 1337, 1);
  EXPECT_EQ(run.dump["leak_check"]["lost_bytes"], 1337);  // nothing else: setenv's copies are reachable
  EXPECT_EQ(run.dump["leak_check"]["indirectly_lost_bytes"], 0);
  expect_reachable(run.dump, "make_global", 100);
  expect_reachable(run.dump, "make_interior", 3000);  // only a pointer into its middle
}

TEST(LeakCheck, LostParentMakesItsChildrenIndirectlyLostAndACycleIsTwoIndirectLosses) {
  CheckedRun run = run_checked("lost_tree");
  nlohmann::json root = site_at(run.dump, "drop_tree");
  EXPECT_EQ(root["lost_bytes"], 256);
  EXPECT_EQ(root["lost_blocks"], 1);
  // Each child and each node is made at a line of its own: a site each.
  EXPECT_EQ(lost_at(run.dump, "make_child"), (std::array<int64_t, 4>{0, 0, 2 * 64, 2}));
  EXPECT_EQ(lost_at(run.dump, "make_cycle_node"), (std::array<int64_t, 4>{0, 0, 2 * 96, 2}));
}

TEST(LeakCheck, BlocksHeldByOtherThreadsStacksTlsAndRegistersAreReachable) {
  CheckedRun run = run_checked("reachable_from_threads");
  EXPECT_EQ(run.dump["leak_check"]["threads_stopped"], 4);
  expect_reachable(run.dump, "make_stack_block", 2001);
  expect_reachable(run.dump, "make_tls_block", 2002);
  expect_reachable(run.dump, "make_register_block", 2003);
  expect_reachable(run.dump, "make_main_tls_block", 2004);
}

TEST(LeakCheck, ABlockWhoseOnlyRegisterIsClearedIsLost) {
  CheckedRun run = run_checked("reachable_from_threads", {"cleared"});
  expect_lost(run.dump, "make_register_block", 2003, 1);
  expect_reachable(run.dump, "make_stack_block", 2001);
}

TEST(LeakCheck, RegisteredRootRegionsAreScannedOthersOnlyWithLeakCheckMmap) {
  CheckedRun run = run_checked("mmap_root_region");
  expect_reachable(run.dump, "make_registered_block", 1111);
  expect_lost(run.dump, "make_unregistered_block", 2222, 1);
  expect_lost(run.dump, "make_unregistered_later_block", 3333, 1);
  EXPECT_FALSE(run.dump["leak_check"]["mmap_roots"]);
  // The text says what was not scanned, and how to scan it.
  const char* note = "note: the 12.00 KiB the program mapped itself were not scanned";
  for (const char* verb : {"report", "check", "dump"}) {
    std::string text = unwrapped(leakscope({verb, run.file}).out);
    EXPECT_NE(text.find(note), std::string::npos) << verb << ": " << text;
    EXPECT_NE(text.find("--option leak_check_mmap=1 scans them"), std::string::npos) << verb << ": " << text;
  }

  CheckedRun scanned = run_checked("mmap_root_region", {}, ",leak_check_mmap=1");
  EXPECT_TRUE(scanned.dump["leak_check"]["mmap_roots"]);
  expect_reachable(scanned.dump, "make_unregistered_block", 2222);
  expect_reachable(scanned.dump, "make_unregistered_later_block", 3333);
  EXPECT_EQ(unwrapped(leakscope({"report", scanned.file}).out).find("were not scanned"), std::string::npos);
}

TEST(LeakCheck, LeakInAGlobalConstructorBeforeMainIsLost) {
  CheckedRun run = run_checked("leak_before_main");
  // Both entries come from one start-up stack: one kept, one lost.
  nlohmann::json site = site_at(run.dump, "(anonymous namespace)::make_entry(unsigned long)");
  EXPECT_EQ(site["live_bytes"], 555 + 444);
  EXPECT_EQ(site["lost_bytes"], 555);
  EXPECT_EQ(site["lost_blocks"], 1);
}

TEST(LeakCheck, ForkedChildsLeakIsInTheChildsOwnStream) {
  std::string directory = scratch_dir();
  Outcome traced = leakscope({"run", "-o", directory + "/server.lsc", "--", fixture("forked_child_leak")},
                             {{"LEAKSCOPE_OPTIONS", "leak_check=1"}});
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out, "child exited 0\n");
  std::vector<std::string> files = files_in(directory);
  ASSERT_EQ(files.size(), 2u);
  nlohmann::json parent, child;
  for (const std::string& file : files) {
    nlohmann::json document = dump(directory + "/" + file);
    (document["process"]["traced_parent_pid"] == 0 ? parent : child) = document;
  }
  ASSERT_FALSE(parent.is_null());
  ASSERT_FALSE(child.is_null());
  expect_lost(child, "child_loses", 777, 1);
  expect_reachable(child, "parent_keeps", 888);
  expect_reachable(parent, "parent_keeps", 888);
  EXPECT_TRUE(sites_at(parent, "child_loses").empty());
}

TEST(LeakCheck, RunCheckNotesAChildThatSkippedTeardownAndHoldsTheOthersToMaxLost) {
  std::string directory = scratch_dir();
  Outcome gated = leakscope({"run", "--check", "max-lost=0", "-o", directory + "/server.lsc", "--",
                             fixture("forked_child_leak"), "_exit"});
  EXPECT_EQ(gated.exit_code, 0) << gated.out << gated.err;
  EXPECT_NE(gated.err.find("not leak-checked (the process ended by _exit"), std::string::npos) << gated.err;
  EXPECT_NE(gated.out.find("PASS max-lost: 0 B lost"), std::string::npos) << gated.out;
  // `check` on that stream alone cannot judge max-lost.
  for (const std::string& file : files_in(directory)) {
    if (dump(directory + "/" + file)["leak_check"]["scanned"]) continue;
    Outcome alone = leakscope({"check", "--max-lost", "0", directory + "/" + file});
    EXPECT_EQ(alone.exit_code, 3) << alone.err;
  }
}

TEST(LeakCheck, RunCheckSkipsAChildKilledBeforeItsFirstSnapshot) {
  std::string directory = scratch_dir();
  Outcome gated = leakscope({"run", "--check", "", "-o", directory + "/server.lsc", "--", fixture("forked_child_leak"),
                             "killed"});
  EXPECT_EQ(gated.exit_code, 0) << gated.out << gated.err;
  EXPECT_NE(gated.out.find("child killed by 9"), std::string::npos) << gated.out;
  // The child may be killed before it even made its file; when it made one, it is skipped.
  if (files_in(directory).size() == 2) {
    EXPECT_NE(gated.err.find("skipped: it holds no snapshot"), std::string::npos) << gated.err;
  }
}

TEST(LeakCheck, AThreadThatBlocksEverySignalIsReportedAsNotPausedAndTheProgramStillEnds) {
  std::string file = scratch_dir() + "/daemon.lsc";
  Outcome traced = leakscope({"run", "-o", file, "--", fixture("thread_blocking_signals")},
                             {{"LEAKSCOPE_OPTIONS", "leak_check=1"}});
  EXPECT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_NE(traced.err.find("1 thread could not be paused"), std::string::npos) << traced.err;
  EXPECT_NE(traced.err.find("1 scanned from where it waits in a system call"), std::string::npos) << traced.err;
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["leak_check"]["threads_missed"], 1);
  EXPECT_EQ(document["leak_check"]["threads_stopped"], 1);
  // It waits in pause(): the kernel gives its stack pointer, and its stack keeps its block.
  expect_reachable(document, "make_signal_thread_block", 640);
  Outcome report = leakscope({"report", file});
  EXPECT_NE(report.out.find("could not be stopped in time"), std::string::npos) << report.out;
}

TEST(LeakCheck, ThirtyTwoRunningThreadsArePausedAndTheirStacksScanned) {
  CheckedRun run = run_checked("threads_at_exit");
  EXPECT_EQ(run.dump["leak_check"]["threads_stopped"], 33);
  EXPECT_EQ(run.dump["leak_check"]["threads_missed"], 0);
  expect_reachable(run.dump, "make_worker_block", 32 * 512);
  expect_lost(run.dump, "lose_on_exit", 4321, 1);
}

// lost_of_the_programs_own() sums what the groups of a report lost that is not the runtime's own.
int64_t lost_of_the_programs_own(const nlohmann::json& report) {
  int64_t lost = 0;
  for (const nlohmann::json& group : report["groups"]) {
    if (!group["lost_runtime"].is_null()) continue;
    lost += group["lost_bytes"].get<int64_t>() + group["indirectly_lost_bytes"].get<int64_t>();
  }
  return lost;
}

TEST(LeakCheck, ACleanPythonServicePassesRunCheckWithItsOwnCodeLosingNothing) {
  std::string file = scratch_dir() + "/service.lsc";
  Outcome gated = leakscope({"run", "--check", "", "-o", file, "--", "/usr/bin/python3",
                             fixture_source("clean_python_service.py"), "500"});
  EXPECT_EQ(gated.exit_code, 0) << gated.out << gated.err;
  EXPECT_NE(gated.out.find("served 500 requests, 10 sessions"), std::string::npos) << gated.out;
  nlohmann::json document = dump(file);
  ASSERT_TRUE(document["leak_check"]["scanned"]);
  EXPECT_EQ(document["leak_check"]["trigger"], "teardown");
  EXPECT_TRUE(document["leak_check"]["mmap_roots"]);  // an interpreter is in the process
  Outcome report = leakscope({"report", "--format", "json", "--top", "100000", "--min-bytes", "0", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(lost_of_the_programs_own(nlohmann::json::parse(report.out)), 0);
}

TEST(LeakCheck, PythonLeakCheckOnRequestReturnsTheBytesLostAndWritesThem) {
  std::string file = scratch_dir() + "/request.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", "/usr/bin/python3", "-c",
                           "import leakscope; print('lost', leakscope.leak_check())"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("lost "), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("lost None"), std::string::npos) << run.out;
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["leak_check"]["trigger"], "request");
}

// A report of an earlier snapshot shows the run as it was then: the scan made at exit is not yet.
TEST(LeakCheck, AnEarlierSnapshotIsShownWithoutTheScanMadeAfterIt) {
  CheckedRun run = run_checked("steady_leak_ci", {"100"});
  ASSERT_TRUE(run.dump["leak_check"]["scanned"]);
  for (const char* verb : {"report", "dump"}) {
    Outcome earlier = leakscope({verb, "--at", "2", "--format", "json", run.file});
    ASSERT_EQ(earlier.exit_code, 0) << earlier.err;
    EXPECT_FALSE(nlohmann::json::parse(earlier.out)["leak_check"]["scanned"]) << verb;
  }
  EXPECT_EQ(leakscope({"report", "--at", "2", run.file}).out.find("leak check at"), std::string::npos);
  Outcome gate = leakscope({"check", "--at", "2", "--max-lost", "0", run.file});
  EXPECT_EQ(gate.exit_code, 3) << gate.out << gate.err;
  EXPECT_NE(gate.err.find("holds no leak check"), std::string::npos) << gate.err;
  EXPECT_TRUE(nlohmann::json::parse(leakscope({"report", "--format", "json", run.file}).out)["leak_check"]["scanned"]);
}

TEST(LeakCheck, TheLeakCheckSignalHasTheWriterScanWhileTheProgramRuns) {
  std::string file = scratch_dir() + "/signal.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("leak_check_on_signal")},
                          {{"LEAKSCOPE_OPTIONS", "leak_check_signal=SIGUSR2"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;  // the signal is leakscope's: it ends nothing
  EXPECT_EQ(run.out, "still serving\n");
  nlohmann::json document = dump(file);
  ASSERT_TRUE(document["leak_check"]["scanned"]);
  EXPECT_EQ(document["leak_check"]["trigger"], "signal");
  expect_lost(document, "lose_before_signal", 4096, 1);
}

// Scans by signal while the program pushes onto a list: entries made in the moment before the
// pause, whose records are still queued, hold the only pointer to the list's older part. Read as
// they stand, they keep it reachable; before, about half of the scans found the entry before them
// lost, with all it holds.
TEST(LeakCheck, ScansWhileTheProgramAllocatesFindNothingLostOfTheListItKeeps) {
  std::string file = scratch_dir() + "/list.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("list_while_checked")},
                          {{"LEAKSCOPE_OPTIONS", "leak_check_signal=SIGUSR2"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "events recorded\n");
  int snapshots = dump(file, {"--at", "end", "--top", "1"})["snapshots"];
  std::set<int64_t> scans;
  for (int at = 1; at <= snapshots; ++at) {
    nlohmann::json check = dump(file, {"--at", std::to_string(at), "--top", "1"})["leak_check"];
    if (!check["scanned"].get<bool>() || !scans.insert(check["snapshot"].get<int64_t>()).second) continue;
    EXPECT_EQ(check["lost_blocks"], 0) << check.dump();
    EXPECT_EQ(check["indirectly_lost_blocks"], 0) << check.dump();
  }
  EXPECT_GE(scans.size(), 3u);
}

}  // namespace
}  // namespace leakscope::testing
