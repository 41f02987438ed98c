// The preload in hostile and unusual conditions: output paths others prepared, allocators with
// operator new of their own, every way a process dies, small signal stacks, reserved address
// space, damaged streams, static executables.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "harness.h"

namespace leakscope::testing {
namespace {

// Sites whose innermost frame is `function`: live blocks and bytes summed.
struct Held {
  int64_t blocks = 0;
  int64_t bytes = 0;
};

Held held_at(const nlohmann::json& document, const std::string& function) {
  Held held;
  for (const auto& site : sites_at(document, function)) {
    held.blocks += site["live_blocks"].get<int64_t>();
    held.bytes += site["live_bytes"].get<int64_t>();
  }
  return held;
}

// --- The output file ------------------------------------------------------------------------------

TEST(Output, PlantedSymlinkIsNeverWrittenThroughAndTheStreamTakesTheNextName) {
  std::string directory = scratch_dir();
  std::string secret = directory + "/secret";
  std::ofstream(secret) << "root's secret\n";
  chmod(secret.c_str(), 0600);
  std::filesystem::create_symlink(secret, directory + "/run.lsc");
  Outcome run = leakscope({"run", "-o", directory + "/run.lsc", "--", fixture("alloc_patterns"), "malloc"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(read_file(secret), "root's secret\n");
  EXPECT_TRUE(std::filesystem::is_symlink(directory + "/run.lsc"));
  EXPECT_NE(run.err.find("wrote " + directory + "/run.lsc.2"), std::string::npos) << run.err;
  EXPECT_EQ(site_at(dump(directory + "/run.lsc.2", {"--at", "end"}), "leak_with_malloc")["live_bytes"], 100000);
}

TEST(Output, FileOfAnotherUserIsNeverWrittenInto) {
  std::string directory = scratch_dir();
  std::string taken = directory + "/run.lsc";
  std::ofstream(taken) << "someone else's\n";
  if (geteuid() != 0 || chown(taken.c_str(), 65534, 65534) != 0) GTEST_SKIP() << "needs root to give the file away";
  Outcome run = leakscope({"run", "-o", taken, "--", fixture("alloc_patterns"), "malloc"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(read_file(taken), "someone else's\n");
  EXPECT_EQ(site_at(dump(taken + ".2", {"--at", "end"}), "leak_with_malloc")["live_bytes"], 100000);
}

TEST(Output, AFileThatIsNotAStreamIsLeftAlone) {
  std::string directory = scratch_dir();
  std::string notes = directory + "/run.lsc";
  std::ofstream(notes) << "my notes\n";
  Outcome run = leakscope({"run", "-o", notes, "--", fixture("alloc_patterns"), "malloc"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(read_file(notes), "my notes\n");
  EXPECT_TRUE(std::filesystem::exists(notes + ".2"));
}

TEST(Output, StreamIsModeSixHundredWhateverTheUmask) {
  for (const char* umask_value : {"000", "022", "777"}) {
    std::string file = scratch_dir() + "/run.lsc";
    std::string command = std::string("umask ") + umask_value + " && exec " + LEAKSCOPE_CLI + " run -o " + file +
                          " -- " + fixture("alloc_patterns") + " malloc";
    ASSERT_EQ(run_program({"/bin/sh", "-c", command}).exit_code, 0) << umask_value;
    struct stat status;
    ASSERT_EQ(stat(file.c_str(), &status), 0) << umask_value;
    EXPECT_EQ(status.st_mode & 0777, 0600u) << "umask " << umask_value;
  }
}

TEST(Output, RunningAgainWithTheSameOutputReplacesTheEarlierStream) {
  std::string directory = scratch_dir();
  std::string file = directory + "/run.lsc";
  ASSERT_EQ(leakscope({"run", "-o", file, "--", fixture("alloc_patterns"), "malloc"}).exit_code, 0);
  ASSERT_EQ(leakscope({"run", "-o", file, "--", fixture("alloc_patterns"), "calloc"}).exit_code, 0);
  EXPECT_EQ(files_in(directory), std::vector<std::string>{"run.lsc"});
  EXPECT_FALSE(sites_at(dump(file, {"--at", "end"}), "leak_with_calloc").empty());
}

TEST(Output, TwoProcessesWithOneOutputNameEachGetAReadableFile) {
  std::string directory = scratch_dir();
  std::string file = directory + "/shared.lsc";
  std::string preload = preload_library();
  std::string fixture_path = fixture("alloc_patterns");
  // Both start at once with the same name and no %p, as two services sharing one configuration.
  std::string command = "LD_PRELOAD=" + preload + " LEAKSCOPE_OPTIONS=output=" + file + " " + fixture_path +
                        " malloc & LD_PRELOAD=" + preload + " LEAKSCOPE_OPTIONS=output=" + file + " " + fixture_path +
                        " calloc & wait";
  ASSERT_EQ(run_program({"/bin/sh", "-c", command}).exit_code, 0);
  std::vector<std::string> files = files_in(directory);
  ASSERT_EQ(files, (std::vector<std::string>{"shared.lsc", "shared.lsc.2"}));
  int malloc_leaks = 0, calloc_leaks = 0;
  for (const std::string& name : files) {
    nlohmann::json document = dump(directory + "/" + name, {"--at", "end"});
    malloc_leaks += !sites_at(document, "leak_with_malloc").empty() && sites_at(document, "leak_with_calloc").empty();
    calloc_leaks += !sites_at(document, "leak_with_calloc").empty();
  }
  EXPECT_EQ(malloc_leaks, 1);
  EXPECT_EQ(calloc_leaks, 1);
}

// A copy of the library under another name (a package's versioned file, a copy beside the
// service) is preloaded all the same: it passes every call on and records them.
TEST(Preload, ALibraryCopiedUnderAnotherNameTracesTheProgram) {
  std::string directory = scratch_dir();
  std::string copy = directory + "/leakscope-copy.so";
  std::filesystem::copy_file(preload_library(), copy);
  std::string file = directory + "/copy.lsc";
  Outcome run = run_program({fixture("alloc_patterns"), "malloc"}, {{"LD_PRELOAD", copy}, {"LEAKSCOPE_OPTIONS", "output=" + file}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json site = site_at(dump(file, {"--at", "end"}), "leak_with_malloc");
  EXPECT_EQ(site["live_bytes"], 100000);
  EXPECT_EQ(site["live_blocks"], 100);
}

TEST(Output, ChildStartedWithoutTheLineageVariableGetsItsOwnReadableFile) {
  std::string directory = scratch_dir();
  std::string file = directory + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", "/bin/sh", "-c",
                           "env -u LEAKSCOPE_TRACED_ROOT " + fixture("alloc_patterns") + " malloc"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  int readable = 0;
  for (const std::string& name : files_in(directory)) {
    Outcome outcome = leakscope({"dump", "--format", "json", "--at", "end", directory + "/" + name});
    EXPECT_EQ(outcome.exit_code, 0) << name << ": " << outcome.err;
    readable += outcome.exit_code == 0;
  }
  EXPECT_GE(readable, 2) << "the shell's stream and the program's";
}

// --- Every allocator ------------------------------------------------------------------------------

// The exact figures of cpp_new_forms: what each form of new keeps.
void expect_new_forms_counted(const nlohmann::json& document, const std::string& allocator) {
  EXPECT_EQ(held_at(document, "keep_widgets").blocks, 777) << allocator;
  EXPECT_EQ(held_at(document, "keep_widgets").bytes, 777 * 64) << allocator;
  EXPECT_EQ(held_at(document, "keep_arrays").bytes, 100 * 100) << allocator;
  EXPECT_EQ(held_at(document, "keep_aligned").bytes, 50 * 128) << allocator;
  EXPECT_EQ(held_at(document, "keep_nothrow").bytes, 30 * 40) << allocator;
  EXPECT_EQ(held_at(document, "churn").blocks, 0) << allocator << ": every delete form is seen";
  // The allocator's own arenas are its work for the blocks above, not the program's mappings.
  int64_t mapped = document["live_bytes_by_domain"].value("mmap", int64_t{0});
  EXPECT_LT(mapped, 1 << 20) << allocator;
}

TEST(Allocators, EveryFormOfNewIsCountedOnceUnderGlibc) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("cpp_new_forms"), "keep"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_new_forms_counted(dump(file, {"--at", "end"}), "glibc");
}

TEST(Allocators, OperatorNewOfJemallocTcmallocAndMimallocIsSeen) {
  int measured = 0;
  for (const char* library : {"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
                              "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4", "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"}) {
    if (!std::filesystem::exists(library)) continue;
    ++measured;
    std::string file = scratch_dir() + "/run.lsc";
    // leakscope run keeps an LD_PRELOAD that is already set after itself: the allocator sits below.
    Outcome run = leakscope({"run", "-o", file, "--", fixture("cpp_new_forms"), "keep"}, {{"LD_PRELOAD", library}});
    ASSERT_EQ(run.exit_code, 0) << library << ": " << run.err;
    expect_new_forms_counted(dump(file, {"--at", "end"}), library);
  }
  if (measured == 0) GTEST_SKIP() << "no jemalloc, tcmalloc or mimalloc (scripts/install_deps.sh installs them)";
}

TEST(Allocators, BadAllocIsThrownToTheProgramAndTrackingGoesOn) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("cpp_new_forms"), "bad_alloc"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "caught bad_alloc\nkept=1734\n");
  EXPECT_EQ(held_at(dump(file, {"--at", "end"}), "keep_widgets").blocks, 2 * 777);
}

// --- Whatever ends the process --------------------------------------------------------------------

struct Death {
  int exit_code;
  nlohmann::json document;
};

Death run_dying(const std::string& how) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("dying"), how});
  return {run.exit_code, dump(file, {"--at", "end"})};
}

int untraced_exit_code(const std::string& how) { return run_program({fixture("dying"), how}).exit_code; }

TEST(Dying, AbortInsideFreeWritesTheFinalSnapshot) {
  Death death = run_dying("double_free");
  EXPECT_EQ(death.exit_code, untraced_exit_code("double_free"));
  EXPECT_EQ(death.document["ended_by"], "signal 6");
  EXPECT_EQ(held_at(death.document, "leak_before_end").bytes, 50 * 1000);
}

TEST(Dying, SignalLandingAnywhereInAMallocLoopWritesTheFinalSnapshot) {
  // SIGALRM lands wherever the loop is: in the program, in malloc, or in leakscope's own work.
  for (int round = 0; round < 12; ++round) {
    Death death = run_dying("alarm_in_malloc_loop");
    EXPECT_EQ(death.exit_code, 128 + SIGALRM) << round;
    EXPECT_EQ(death.document["ended_by"], "signal 14") << round;
    EXPECT_EQ(held_at(death.document, "leak_before_end").bytes, 50 * 1000) << round;
  }
}

TEST(Dying, QuickExitAndSignalsWhoseDefaultActionKillsWriteTheFinalSnapshot) {
  struct Case {
    const char* how;
    const char* ended_by;
  };
  for (Case c : {Case{"quick_exit", "quick_exit"}, Case{"sigpipe", "signal 13"}, Case{"sigusr1", "signal 10"},
                 Case{"exit_3", "exit"}}) {
    Death death = run_dying(c.how);
    EXPECT_EQ(death.exit_code, untraced_exit_code(c.how)) << c.how;
    EXPECT_EQ(death.document["ended_by"], c.ended_by) << c.how;
    EXPECT_EQ(held_at(death.document, "leak_before_end").bytes, 50 * 1000) << c.how;
  }
  Death realtime = run_dying("realtime");
  EXPECT_EQ(realtime.exit_code, untraced_exit_code("realtime"));
  EXPECT_EQ(realtime.document["ended_by"].get<std::string>().rfind("signal ", 0), 0u) << realtime.document["ended_by"];
}

TEST(Dying, PoolWorkersStoppedByTerminateEachWriteTheirFinalSnapshot) {
  std::string directory = scratch_dir();
  Outcome run = leakscope({"run", "-o", directory + "/pool.lsc", "--", "/usr/bin/python3",
                           fixture_source("pool_terminated.py")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "terminated\n");
  int workers = 0;
  for (const std::string& name : files_in(directory)) {
    if (name == "pool.lsc") continue;
    ++workers;
    EXPECT_EQ(dump(directory + "/" + name, {"--at", "end"})["ended_by"], "signal 15") << name;
  }
  EXPECT_EQ(workers, 4);
}

// --- Small alternate signal stacks ----------------------------------------------------------------

TEST(SignalStacks, HandlerThatAllocatesOnASmallAlternateStackIsRecorded) {
  for (const char* size : {"malloc_on_4k", "malloc_on_8k"}) {
    std::string file = scratch_dir() + "/run.lsc";
    Outcome run = leakscope({"run", "-o", file, "--", fixture("small_signal_stacks"), size});
    ASSERT_EQ(run.exit_code, 0) << size << ": " << run.err;
    EXPECT_EQ(run.out, "handled=100\n");
    nlohmann::json document = dump(file, {"--at", "end"});
    int64_t blocks = 0;
    for (const auto& site : document["sites"]) {
      if (site["live_bytes"].get<int64_t>() == site["live_blocks"].get<int64_t>() * 48) blocks += site["live_blocks"].get<int64_t>();
    }
    EXPECT_EQ(blocks, 100) << size;
  }
}

TEST(SignalStacks, OverflowHandlerOnASixteenKibStackThatCallsUnderscoreExitKeepsItsStatus) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("small_signal_stacks"), "overflow_exits_5"});
  EXPECT_EQ(run.exit_code, 5) << run.err;
  EXPECT_EQ(dump(file, {"--at", "end"})["ended_by"], "_exit");
}

// --- Signal handlers that allocate ---------------------------------------------------------------

TEST(SignalHandlers, EveryBlockAHandlerKeepsIsCountedWhileTheMainThreadMapsAndFrees) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("signal_handler_allocs"), "malloc"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "handled=500\n");
  Held kept = held_at(dump(file, {"--at", "end"}), "keep_from_handler");
  EXPECT_EQ(kept.blocks, 500);
  EXPECT_EQ(kept.bytes, 500 * 48);
}

TEST(SignalHandlers, EveryPageAHandlerMapsIsCounted) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("signal_handler_allocs"), "mmap"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "handled=500\n");
  Held kept = held_at(dump(file, {"--at", "end"}), "map_from_handler");
  EXPECT_EQ(kept.blocks, 500);
  EXPECT_EQ(kept.bytes, 500 * 4096);
}

TEST(SignalHandlers, HandlerThatJumpsOutLeavesTrackingWhole) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("signal_handler_allocs"), "longjmp"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "jumped=300\n");
  EXPECT_EQ(held_at(dump(file, {"--at", "end"}), "keep_after_jumps").bytes, 100 * 777);
}

// Go's runtime dies of a signal it does not keep by putting back the default action as
// {SIG_DFL, SA_SIGINFO} and raising the signal: that is the default action, not a handler.
TEST(SignalHandlers, DefaultActionAskedForWithSaSiginfoStillEndsTheProgram) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("dies_of_its_own_signal")});
  Outcome untraced = run_program({fixture("dies_of_its_own_signal")});
  EXPECT_EQ(run.out, "serving\n");
  EXPECT_EQ(run.exit_code, untraced.exit_code) << run.err;
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
  EXPECT_EQ(dump(file)["ended_by"], "signal 15");
}

TEST(SignalHandlers, ProgramSeesItsOwnHandlerFlagsAndMask) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("signal_handler_allocs"), "read_back"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "same_handler=1 flags=1 mask_usr2=1 mask_term=0\ninfo_seen=1\nsignal_returns_previous=1\n");
  EXPECT_EQ(run.out, run_program({fixture("signal_handler_allocs"), "read_back"}).out);
}

// --- Threads --------------------------------------------------------------------------------------

int64_t own_memory_after(const std::vector<std::string>& command) {
  std::string file = scratch_dir() + "/run.lsc";
  std::vector<std::string> arguments = {"run", "-o", file, "--interval", "100ms", "--"};
  arguments.insert(arguments.end(), command.begin(), command.end());
  Outcome run = leakscope(arguments);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return dump(file, {"--at", "end"})["overhead_bytes"].get<int64_t>();
}

TEST(Threads, SeventyThousandShortThreadsAreEachCountedWithTheirOwnBlock) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--interval", "100ms", "--", fixture("many_short_threads"), "70000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "threads=70000\n");
  nlohmann::json site = site_at(dump(file, {"--at", "end"}), "leave_one_block");
  EXPECT_EQ(site["live_blocks"], 70000);
  EXPECT_EQ(site["live_bytes"], 70000 * 32);
  // Each thread holds its own block, though threads that lived one after another share a slot.
  ASSERT_EQ(site["threads"].size(), 70000u);
  for (const auto& thread : site["threads"]) ASSERT_EQ(thread["live_blocks"], 1) << thread.dump();
}

TEST(Threads, OwnMemoryStaysFlatAsThreadsComeAndGo) {
  int64_t after_10k = own_memory_after({fixture("many_short_threads"), "10000", "free"});
  int64_t after_70k = own_memory_after({fixture("many_short_threads"), "70000", "free"});
  // Each thread's state and triples pass to the next: 60 000 more threads cost table growth at most.
  EXPECT_LT(after_70k - after_10k, 4 << 20) << after_10k << " -> " << after_70k;
}

TEST(Threads, ThreadsSharingASlotKeepWhatEachHolds) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--interval", "50ms", "--", fixture("many_short_threads"), "named"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json site = site_at(dump(file, {"--at", "end"}), "leave_one_block");
  EXPECT_EQ(site["live_bytes"], 600);
  std::map<std::string, int64_t> by_name;
  std::set<int64_t> tids;
  for (const auto& thread : site["threads"]) {
    by_name[thread["name"].get<std::string>()] = thread["live_bytes"].get<int64_t>();
    tids.insert(thread["tid"].get<int64_t>());
  }
  EXPECT_EQ(by_name, (std::map<std::string, int64_t>{{"request-1", 100}, {"request-2", 200}, {"request-3", 300}}));
  EXPECT_EQ(tids.size(), 3u);
}

// --- Reserved address space -----------------------------------------------------------------------

TEST(Reservations, AddressSpaceReservedPROT_NONEIsNotMemoryUntilCommitted) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("reserve_commit")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json document = dump(file, {"--at", "end"});
  constexpr int64_t kMiB = 1 << 20;
  EXPECT_EQ(held_at(document, "commit_by_protect").bytes, 12 * kMiB);  // 16 MiB less the 4 handed back
  EXPECT_EQ(held_at(document, "commit_by_fixed_map").bytes, 16 * kMiB);
  EXPECT_TRUE(sites_at(document, "reserve_arena").empty());
  EXPECT_EQ(document["reserved_bytes"].get<int64_t>(), 996 * kMiB);
}

// --- The reader -----------------------------------------------------------------------------------

TEST(Reader, CFunctionsWithShortNamesAreNotReadAsTypes) {
  std::string file = scratch_dir() + "/run.lsc";
  ASSERT_EQ(leakscope({"run", "-o", file, "--", fixture("short_c_names")}).exit_code, 0);
  nlohmann::json document = dump(file, {"--at", "end"});
  EXPECT_EQ(held_at(document, "f").bytes, 10 * 111);
  EXPECT_EQ(held_at(document, "i").bytes, 10 * 222);
  EXPECT_EQ(held_at(document, "d").bytes, 10 * 333);
}

// Flips one bit in the payload of the frame that starts at the n-th frame marker.
void flip_bit_in_frame(const std::string& path, int frame) {
  std::string bytes = read_file(path);
  size_t at = 16;
  for (int i = 0; i < frame; ++i) {
    uint32_t size;
    std::memcpy(&size, bytes.data() + at + 8, 4);
    at += 16 + size;
  }
  bytes[at + 16 + 3] ^= 0x10;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(Reader, OneFlippedBitLosesOnlyTheSnapshotsUpToTheNextKeySnapshot) {
  std::string file = scratch_dir() + "/run.lsc";
  // 160 snapshots: key snapshots after the first come every 64 at the most.
  ASSERT_EQ(leakscope({"run", "-o", file, "--interval", "20ms", "--", fixture("steady_leak_ci"), "300"}).exit_code, 0);
  nlohmann::json whole = dump(file, {"--at", "end"});
  flip_bit_in_frame(file, 10);
  Outcome report = leakscope({"report", "--format", "json", "--at", "end", file});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.err.find("damaged from offset"), std::string::npos) << report.err;
  EXPECT_NE(report.err.find("key snapshot"), std::string::npos) << report.err;
  nlohmann::json damaged = nlohmann::json::parse(report.out);
  EXPECT_LT(damaged["snapshots"].get<int>(), whole["snapshots"].get<int>());
  EXPECT_GT(damaged["snapshots"].get<int>(), whole["snapshots"].get<int>() / 2);
  // The state read after the key snapshot is the whole one: the leak is exact.
  EXPECT_EQ(held_at(damaged, "parse_record").bytes, 300 * 4096);

  flip_bit_in_frame(file, 0);  // the process frame: nothing can be read without it
  Outcome broken = leakscope({"dump", file});
  EXPECT_EQ(broken.exit_code, 3);
  EXPECT_NE(broken.err.find("bad checksum"), std::string::npos) << broken.err;
}

// --- Honest run -----------------------------------------------------------------------------------

TEST(HonestRun, StaticExecutableIsRefusedInOneLine) {
  std::string directory = scratch_dir();
  std::string source = directory + "/main.c", program = directory + "/static_program";
  std::ofstream(source) << "int main(void) { return 0; }\n";
  if (run_program({"cc", "-static", "-o", program, source}).exit_code != 0) GTEST_SKIP() << "no static libc";
  Outcome run = leakscope({"run", "-o", directory + "/run.lsc", "--", program});
  EXPECT_EQ(run.exit_code, 5);
  EXPECT_EQ(run.err, "leakscope: error: " + program + " is statically linked; LD_PRELOAD cannot trace it\n");
  EXPECT_FALSE(std::filesystem::exists(directory + "/run.lsc"));
}

TEST(HonestRun, OutputThatIsADirectoryIsRefusedBeforeTheCommandStarts) {
  std::string directory = scratch_dir();
  Outcome run = leakscope({"run", "-o", directory, "--", "/bin/sh", "-c", "echo started"});
  EXPECT_EQ(run.exit_code, 4);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err.find("wrote"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("is a directory"), std::string::npos) << run.err;
}

TEST(HonestRun, TheProgramsExceptionsUnwindThroughItsOwnUnwinder) {
  // libunwind, which leakscope needs, also defines _Unwind_*; the program must keep libgcc_s's.
  Outcome plain = run_program({fixture("forced_unwind_in_noexcept")});
  ASSERT_EQ(plain.exit_code, 128 + SIGABRT) << plain.err;
  Outcome traced = leakscope({"run", "-o", scratch_dir() + "/unwind.lsc", "--", fixture("forced_unwind_in_noexcept")});
  EXPECT_EQ(traced.exit_code, plain.exit_code) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
}

}  // namespace
}  // namespace leakscope::testing
