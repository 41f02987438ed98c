// fork, exec, _exit, SIGKILL, SIGTERM and signal handlers that allocate, under leakscope.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "harness.h"

namespace leakscope::testing {
namespace {

struct LifecycleRun {
  std::string directory;
  std::string file;
  Outcome outcome;
};

LifecycleRun run_lifecycle(const std::string& mode, std::vector<std::string> options = {},
                           const std::vector<std::string>& arguments = {}) {
  LifecycleRun run;
  run.directory = scratch_dir();
  run.file = run.directory + "/run.lsc";
  std::vector<std::string> args{"run", "-o", run.file};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {"--", fixture("lifecycle"), mode});
  args.insert(args.end(), arguments.begin(), arguments.end());
  run.outcome = leakscope(args);
  return run;
}

void expect_forked_child_traced(const std::string& mode, const std::string& ended_by) {
  LifecycleRun run = run_lifecycle(mode);
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
  std::string child = run.outcome.out.substr(run.outcome.out.find("child=") + 6);
  child = child.substr(0, child.find('\n'));
  EXPECT_EQ(files_in(run.directory), (std::vector<std::string>{"run.lsc", "run.lsc." + child}));

  nlohmann::json parent = dump(run.file);
  EXPECT_EQ(site_at(parent, "parent_leak")["live_bytes"], 10 * 300);
  EXPECT_TRUE(sites_at(parent, "child_leak").empty());

  nlohmann::json forked = dump(run.file + "." + child);
  EXPECT_EQ(forked["process"]["traced_parent_pid"], parent["process"]["pid"]);
  EXPECT_EQ(site_at(forked, "parent_leak")["live_bytes"], 10 * 300);  // inherited
  nlohmann::json leak = site_at(forked, "child_leak");
  EXPECT_EQ(leak["live_bytes"], 20 * 700);
  EXPECT_EQ(leak["live_blocks"], 20);
  EXPECT_EQ(forked["ended_by"], ended_by);
}

TEST(ProcessLifecycle, ForkedChildTracksIntoItsOwnFileWithInheritedBlocks) { expect_forked_child_traced("fork", "exit"); }

TEST(ProcessLifecycle, ForkedWorkersTakeTheirParentsDefinitionsFromItsStreamInsteadOfRepeatingThem) {
  std::string directory = scratch_dir();
  std::string file = directory + "/server.lsc";
  // A pre-fork server: 4096 operators registered along stacks of their own, then two workers.
  Outcome run = leakscope({"run", "-o", file, "--", fixture("operator_registry"), "12", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "operators=4096\nworkers=2\n");
  std::vector<std::string> files = files_in(directory);
  ASSERT_EQ(files.size(), 3u);
  uintmax_t server_bytes = std::filesystem::file_size(file);
  nlohmann::json server = dump(file);
  for (const std::string& name : files) {
    if (name == "server.lsc") continue;
    std::string worker = directory + "/" + name;
    // The 4096 stacks, sites and triples are in the server's stream only (135 KB; a worker's
    // would be as large again if it repeated them).
    EXPECT_LT(std::filesystem::file_size(worker) * 2, server_bytes) << name;
    nlohmann::json document = dump(worker);
    EXPECT_EQ(document["process"]["traced_parent_pid"], server["process"]["pid"]);
    EXPECT_EQ(sites_at(document, "(anonymous namespace)::register_schema()").size(), 4096u);
    EXPECT_EQ(document["live_bytes_by_domain"]["heap"].get<int64_t>(),
              server["live_bytes_by_domain"]["heap"].get<int64_t>() + 512);
    EXPECT_EQ(site_at(document, "(anonymous namespace)::worker_keeps()")["live_bytes"], 512);
  }
  // Moved elsewhere together, the streams still read; without the server's, a worker's says why.
  std::string moved = directory + "/moved";
  std::filesystem::create_directory(moved);
  std::string worker = files[0] == "server.lsc" ? files[1] : files[0];
  std::filesystem::copy_file(directory + "/" + worker, moved + "/" + worker);
  std::filesystem::rename(file, moved + "/elsewhere.lsc");
  Outcome alone = leakscope({"dump", moved + "/" + worker});
  EXPECT_EQ(alone.exit_code, 3);
  EXPECT_NE(alone.err.find("the stream of a process forked from pid"), std::string::npos) << alone.err;
  EXPECT_EQ(std::count(alone.err.begin(), alone.err.end(), '\n'), 1) << alone.err;
  std::filesystem::rename(moved + "/elsewhere.lsc", moved + "/server.lsc");
  EXPECT_EQ(sites_at(dump(moved + "/" + worker), "(anonymous namespace)::register_schema()").size(), 4096u);
}

TEST(ProcessLifecycle, ChildLeavingByUnderscoreExitStillWritesItsFinalSnapshot) {
  expect_forked_child_traced("fork_exit", "_exit");
}

TEST(ProcessLifecycle, ForkWhileOtherThreadsAllocateNeverDeadlocksTheChild) {
  LifecycleRun run = run_lifecycle("fork_busy", {"--interval", "20ms"});
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
  EXPECT_EQ(run.outcome.out, "clean_children=40\n");
  std::vector<std::string> files = files_in(run.directory);
  EXPECT_EQ(files.size(), 41u);
  nlohmann::json child = dump(run.directory + "/" + files.back());
  EXPECT_EQ(site_at(child, "child_leak")["live_bytes"], 20 * 700);
}

TEST(ProcessLifecycle, ProgramClosingAllDescriptorsNeverGetsFramesInItsFiles) {
  std::string directory = scratch_dir();
  std::string victim = directory + "/victim.txt";
  std::string file = directory + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--interval", "20ms", "--", fixture("lifecycle"), "close_fds", victim});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.err.find("tracking disabled"), std::string::npos) << outcome.err;
  EXPECT_EQ(read_file(victim), "the program's own line\n");
  nlohmann::json document = dump(file);
  EXPECT_EQ(document["ended_by"], "exit");
  EXPECT_EQ(site_at(document, "leak_after_close")["live_bytes"], 7 * 999);
}

// libc ends such a process when its last thread ends, and the writer thread is one of its threads:
// the writer must end it once the program's threads are gone, as libc would have, with exit(0).
TEST(ProcessLifecycle, MainThreadEndingByPthreadExitLeavesTheProcessToEndWithItsLastThread) {
  LifecycleRun run = run_lifecycle("main_thread_exits", {"--interval", "50ms", "--leak-check"});
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
  // The atexit handler runs on leakscope's thread, with the program's signals let through again.
  EXPECT_EQ(run.outcome.out, "main leaves\natexit ran, SIGTERM blocked=0\n");
  // The zombie main thread is not waited for to pause.
  EXPECT_EQ(run.outcome.err.find("could not be paused"), std::string::npos) << run.outcome.err;
  nlohmann::json document = dump(run.file, {"--at", "end"});
  EXPECT_EQ(document["ended_by"], "exit");
  nlohmann::json leak = site_at(document, "leak_after_main_exit");
  EXPECT_EQ(leak["live_bytes"], 2 * 12 * 1500);
  EXPECT_EQ(leak["live_blocks"], 2 * 12);
  EXPECT_TRUE(sites_at(document, "cache_freed_at_exit").empty());  // freed by the atexit handler
  EXPECT_GT(document["rss_bytes"].get<double>(), 0);  // read while the main thread is a zombie
  nlohmann::json teardown = dump(run.file);
  EXPECT_EQ(site_at(teardown, "cache_freed_at_exit")["live_bytes"], 4 * 8000);
}

// A thread that starts the next one as it ends is never taken for the last: the process ends after
// the chain does.
TEST(ProcessLifecycle, ThreadsStartingTheirSuccessorsAfterMainLeftAllRun) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    LifecycleRun run = run_lifecycle("thread_chain_after_main", {}, {"2000"});
    ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
    EXPECT_EQ(run.outcome.out, "chain done\n");
  }
}

// With every descriptor taken, /proc can no longer be opened: what tells that the last thread ended
// was opened as the main thread left.
TEST(ProcessLifecycle, AProgramThatUsedUpItsDescriptorsStillEndsWithItsLastThread) {
  LifecycleRun run = run_lifecycle("descriptors_used_up_after_main");
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
  EXPECT_EQ(run.outcome.out, "descriptors used up: 1\n");
}

TEST(ProcessLifecycle, SigkilledProcessFileStillNamesTheLeak) {
  LifecycleRun run = run_lifecycle("sigkill", {"--interval", "50ms"});
  EXPECT_EQ(run.outcome.exit_code, 128 + 9);
  nlohmann::json document = dump(run.file);
  EXPECT_EQ(document["ended_by"], "running or killed");
  nlohmann::json leak = site_at(document, "leak_before_kill");
  EXPECT_EQ(leak["live_bytes"], 64 * 1024);
  EXPECT_EQ(leak["live_blocks"], 64);
}

TEST(ProcessLifecycle, SigtermWritesAFinalSnapshotAndKeepsTheExitStatus) {
  LifecycleRun run = run_lifecycle("sigterm");
  EXPECT_EQ(run.outcome.exit_code, 128 + 15);
  nlohmann::json document = dump(run.file);
  EXPECT_EQ(document["ended_by"], "signal 15");
  EXPECT_EQ(site_at(document, "leak_before_term")["live_bytes"], 33 * 2048);
}

TEST(ProcessLifecycle, ExecedImageIsTracedIntoItsOwnFile) {
  LifecycleRun run = run_lifecycle("exec", {"--interval", "50ms"});
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
  std::vector<std::string> files = files_in(run.directory);
  ASSERT_EQ(files.size(), 2u) << ::testing::PrintToString(files);  // run.lsc, run.lsc.PID
  nlohmann::json before = dump(run.file);
  EXPECT_EQ(site_at(before, "leak_before_exec")["live_bytes"], 5 * 4000);
  nlohmann::json after = dump(run.directory + "/" + files[1]);
  EXPECT_EQ(site_at(after, "leak_after_exec")["live_bytes"], 6 * 5000);
  EXPECT_TRUE(sites_at(after, "leak_before_exec").empty());
  // run names the stream of the program the command became: the one to report on.
  EXPECT_NE(run.outcome.err.find("leakscope: wrote " + run.file + " and 1 more stream (" + run.file +
                                 ".*); the command exec'd: the program it became wrote " + run.directory + "/" +
                                 files[1] + "\n"),
            std::string::npos)
      << run.outcome.err;
}

TEST(ProcessLifecycle, NoFollowExecLeavesTheExecedImageUntraced) {
  LifecycleRun run = run_lifecycle("exec", {"--interval", "50ms", "--no-follow-exec"});
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
  EXPECT_EQ(files_in(run.directory), (std::vector<std::string>{"run.lsc"}));
}

TEST(ProcessLifecycle, SignalHandlerThatAllocatesNeverDeadlocks) {
  LifecycleRun run = run_lifecycle("signal_alloc");
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
  EXPECT_NE(run.outcome.out.find("handled="), std::string::npos);
  dump(run.file);
}

TEST(ProcessLifecycle, ProgramSeesDefaultSignalDispositionsAsWithoutLeakscope) {
  LifecycleRun run = run_lifecycle("disposition");
  ASSERT_EQ(run.outcome.exit_code, 0) << run.outcome.err;
  EXPECT_EQ(run.outcome.out, "sigint_default=1 sigterm_default=1\n");
}

TEST(ProcessLifecycle, LeakInDlclosedLibraryIsStillSymbolized) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--", fixture("dlopen_leak"), fixture("libfixture_plugin.so")});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json leak = site_at(dump(file), "plugin_make_buffer");
  EXPECT_EQ(leak["live_bytes"], 12 * 1111);
  EXPECT_EQ(leak["live_blocks"], 12);
  std::string module = leak["frames"][0]["module"];
  EXPECT_NE(module.find("libfixture_plugin.so"), std::string::npos) << module;
  EXPECT_EQ(leak["frames"][1]["function"], "plugin_leak");
}

// dlopen("./plugins/libx.so") leaves the relative path as the library's name; the module map
// keeps where it is, so the report run from anywhere still symbolizes it.
TEST(ProcessLifecycle, LibraryOpenedByARelativePathIsSymbolized) {
  std::string file = scratch_dir() + "/run.lsc";
  std::string relative = std::filesystem::relative(fixture("libfixture_plugin.so")).string();
  ASSERT_NE(relative.find('/'), std::string::npos) << relative;
  ASSERT_NE(relative[0], '/');
  Outcome outcome = leakscope({"run", "-o", file, "--", fixture("dlopen_leak"), relative});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json leak = site_at(dump(file), "plugin_make_buffer");
  EXPECT_EQ(leak["live_blocks"], 12);
  EXPECT_EQ(leak["frames"][0]["module"], std::filesystem::absolute(relative).lexically_normal().string());
}

}  // namespace
}  // namespace leakscope::testing
