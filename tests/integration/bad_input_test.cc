// Bad input of every kind gets one line on stderr and a non-zero exit, never a crash; a bad
// runtime option or output path turns tracking off and leaves the program running.
#include <gtest/gtest.h>

#include <string.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>

#include "harness.h"
#include "support/stream_builder.h"

namespace leakscope::testing {
namespace {

void expect_one_line_error(const Outcome& outcome, int exit_code, const std::string& needle) {
  EXPECT_EQ(outcome.exit_code, exit_code) << outcome.err;
  EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  EXPECT_EQ(outcome.err.rfind("leakscope: error: ", 0), 0u) << outcome.err;
  EXPECT_NE(outcome.err.find(needle), std::string::npos) << outcome.err;
}

// A real stream with several snapshots, made once and copied by each test.
const std::string& good_stream() {
  static std::string path = [] {
    std::string file = scratch_dir() + "/good.lsc";
    Outcome outcome = leakscope({"run", "--interval", "50ms", "-o", file, "--", fixture("lifecycle"), "exec_child"});
    EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
    return file;
  }();
  return path;
}

std::string variant(const std::string& name, const std::function<void(std::string&)>& change) {
  std::string bytes = read_file(good_stream());
  change(bytes);
  std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(BadInput, EmptyFileIsRejected) {
  expect_one_line_error(leakscope({"dump", variant("empty.lsc", [](std::string& b) { b.clear(); })}), 3, "empty file");
}

TEST(BadInput, ForeignFileIsRejected) {
  expect_one_line_error(leakscope({"dump", "/bin/sh"}), 3, "not a leakscope stream");
}

TEST(BadInput, MissingFileIsRejected) {
  expect_one_line_error(leakscope({"dump", "/nonexistent/run.lsc"}), 3, "No such file");
}

// A stream is read more than once, so a pipe cannot carry one; a FIFO nobody writes to must not
// hold the reader either.
TEST(BadInput, PipeIsOneLineErrorWithoutWaitingForAWriter) {
  std::string fifo = scratch_dir() + "/stream.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_one_line_error(leakscope({"dump", fifo}), 3, "is not a regular file");
}

TEST(BadInput, NewerFormatVersionIsRejected) {
  std::string path = variant("version.lsc", [](std::string& b) { b[8] = 99; });
  expect_one_line_error(leakscope({"dump", path}), 3, "unsupported format version 99");
}

TEST(BadInput, FileCutInsideTheProcessFrameIsRejected) {
  std::string path = variant("cut.lsc", [](std::string& b) { b.resize(40); });
  expect_one_line_error(leakscope({"dump", path}), 3, "truncated");
}

TEST(BadInput, CorruptSnapshotFrameKeepsWhatCameBeforeItWithOneWarning) {
  nlohmann::json whole = dump(good_stream());
  // A flipped bit in the payload of the last frame.
  std::string path = variant("corrupt.lsc", [](std::string& b) { b[b.rfind("LSFR") + 20] ^= 0x5a; });
  Outcome outcome = leakscope({"dump", "--format", "json", path});
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  EXPECT_NE(outcome.err.find("warning: " + path + ": damaged from offset"), std::string::npos) << outcome.err;
  nlohmann::json damaged = nlohmann::json::parse(outcome.out);
  EXPECT_EQ(damaged["snapshots"].get<int>(), whole["snapshots"].get<int>() - 1);
}

TEST(BadInput, CorruptProcessFrameIsAnErrorNamingTheFrame) {
  std::string path = variant("corrupt_process.lsc", [](std::string& b) { b[16 + 16 + 2] ^= 0x5a; });
  expect_one_line_error(leakscope({"dump", path}), 3, "frame 0 at offset 16: bad checksum");
}

TEST(BadInput, TornLastFrameIsIgnoredWithAWarning) {
  nlohmann::json whole = dump(good_stream());
  std::string path = variant("torn.lsc", [](std::string& b) { b.resize(b.size() - 7); });
  Outcome outcome = leakscope({"dump", "--format", "json", path});
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.err.find("warning"), std::string::npos);
  EXPECT_NE(outcome.err.find("torn"), std::string::npos);
  nlohmann::json torn = nlohmann::json::parse(outcome.out);
  EXPECT_EQ(torn["snapshots"].get<int>(), whole["snapshots"].get<int>() - 1);
}

// A length pointing past the end of the file looks like a torn frame, but the writer appends frames
// one after another: with intact frames after it, it is damage, and the gate must not pass a run
// judged on its first part.
TEST(BadInput, MiddleFrameWhoseLengthRunsPastTheEndIsDamageNotATear) {
  // A CI binary leaking for a second, with many snapshots.
  std::string path = scratch_dir() + "/long_length.lsc";
  Outcome run = leakscope({"run", "--interval", "20ms", "-o", path, "--", fixture("steady_leak_ci"), "100"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string bytes = read_file(path);
  std::vector<size_t> frames;
  for (size_t at = bytes.find("LSFR"); at != std::string::npos; at = bytes.find("LSFR", at + 1)) frames.push_back(at);
  ASSERT_GE(frames.size(), 6u);
  size_t middle = frames[frames.size() / 2];
  uint32_t length = 1000000;  // plausible (under 2^30), longer than the file
  memcpy(&bytes[middle + 8], &length, sizeof(length));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  Outcome dumped = leakscope({"dump", "--format", "json", path});
  EXPECT_EQ(dumped.exit_code, 0) << dumped.err;
  EXPECT_NE(dumped.err.find("damaged from offset " + std::to_string(middle) + " (frame length 1000000 runs past the end"),
            std::string::npos)
      << dumped.err;
  EXPECT_EQ(dumped.err.find("torn"), std::string::npos) << dumped.err;
  Outcome gate = leakscope({"check", path});
  EXPECT_EQ(gate.exit_code, 3) << gate.out << gate.err;
  EXPECT_NE(gate.err.find("damaged inside"), std::string::npos) << gate.err;
}

// A wrong --at is the command line's mistake, not the stream's.
TEST(BadInput, SnapshotBeyondTheStreamIsAUsageError) {
  expect_one_line_error(leakscope({"dump", "--at", "100000", good_stream()}), 2, "beyond");
  expect_one_line_error(leakscope({"report", "--at", "100000", good_stream()}), 2, "beyond");
  expect_one_line_error(leakscope({"check", "--at", "100000", good_stream()}), 2, "beyond");
}

// A report redirected to a full disk was not written: the step fails instead of passing.
TEST(BadInput, StandardOutputThatCannotBeWrittenIsAnOutputError) {
  for (const char* verb : {"report", "dump", "check"}) {
    SCOPED_TRACE(verb);
    Outcome full = run_program({"/bin/sh", "-c", std::string(LEAKSCOPE_CLI) + " " + verb + " " + good_stream() + " > /dev/full"});
    EXPECT_EQ(full.exit_code, 4) << full.err;
    EXPECT_EQ(full.err.rfind("leakscope: error: standard output could not be written", 0), 0u) << full.err;
    EXPECT_EQ(std::count(full.err.begin(), full.err.end(), '\n'), 1) << full.err;
  }
}

// A 2 MB stream whose one stack claims two million frames: refused as damage before it is built.
TEST(BadInput, StackOfMillionsOfFramesIsOneLineError) {
  Bytes stacks;
  stacks.varint(1).varint(1).varint(2'000'000);
  for (int i = 0; i < 2'000'000; ++i) stacks.signed_varint(1);
  stacks.varint(0);
  Bytes snapshot;
  snapshot.section(internal::SectionTag::kInfo, info(0, 1000000, true));
  snapshot.section(internal::SectionTag::kStacks, stacks);
  std::string path = scratch_dir() + "/deep.lsc";
  std::ofstream(path, std::ios::binary) << file_header() + process_frame() + frame(internal::FrameType::kSnapshot, snapshot.str());
  expect_one_line_error(leakscope({"report", path}), 3, "stack deeper than 256 frames");
  expect_one_line_error(leakscope({"report", "--format", "json", path}), 3, "stack deeper than 256 frames");
  expect_one_line_error(leakscope({"dump", "--format", "json", path}), 3, "stack deeper than 256 frames");
}

// A stream larger than the memory the reader may take: one line and its own exit code, not an abort.
// (262 144 live sites: the report's per-site records no longer fill 100 MB with fewer.)
TEST(BadInput, StreamTooLargeForTheMachineIsOneLineError) {
  std::string file = scratch_dir() + "/large.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("operator_registry"), "18"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* format : {"text", "json"}) {
    Outcome limited = run_program({"prlimit", "--as=100000000", LEAKSCOPE_CLI, "report", "--format", format, file});
    expect_one_line_error(limited, 6, "out of memory");
  }
}

// Wherever memory runs out under an address-space limit (ulimit -v, a batch system's), the answer
// is whole or the out-of-memory line ends the output, with its exit code: not a SIGSEGV where the
// stack could not grow, nor libdw's own exit or assertion where an allocation of its failed.
TEST(BadInput, EveryAddressSpaceLimitEndsInTheAnswerOrTheOutOfMemoryLine) {
  std::string file = scratch_dir() + "/registry.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", fixture("operator_registry"), "14"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string last_line = "leakscope: error: out of memory: the stream holds more than this machine can read\n";
  size_t answered = 0, out_of_memory = 0;
  for (long mib = 32; mib <= 96; mib += 2) {
    for (std::vector<std::string> verb : {std::vector<std::string>{"report"}, {"dump", "--top", "5"}, {"dump", "--top", "5", "--site-memory", "0"}}) {
      std::vector<std::string> argv{"prlimit", "--as=" + std::to_string(mib << 20), LEAKSCOPE_CLI};
      argv.insert(argv.end(), verb.begin(), verb.end());
      argv.push_back(file);
      SCOPED_TRACE(std::accumulate(argv.begin(), argv.end(), std::string(), [](std::string line, const std::string& arg) {
        return line + " " + arg;
      }));
      Outcome limited = run_program(argv);
      if (limited.exit_code == 0) {
        ++answered;
        continue;
      }
      ++out_of_memory;
      EXPECT_EQ(limited.exit_code, 6) << limited.err;
      ASSERT_GE(limited.err.size(), last_line.size()) << limited.err;
      EXPECT_EQ(limited.err.substr(limited.err.size() - last_line.size()), last_line) << limited.err;
    }
  }
  EXPECT_GT(answered, 0u);
  EXPECT_GT(out_of_memory, 0u);
}

// The stack the CLI grows at start to have it later stays within a small ulimit -s.
TEST(BadInput, ASmallStackLimitStillRunsTheCli) {
  Outcome small = run_program({"bash", "-c", std::string("ulimit -s 256 && exec \"") + LEAKSCOPE_CLI + "\" --version"});
  EXPECT_EQ(small.exit_code, 0) << small.err;
  EXPECT_FALSE(small.out.empty());
}

// Strings in a stream are the process's bytes (argv, paths, thread names the kernel cut inside a
// UTF-8 character): JSON writes what is not UTF-8 as U+FFFD instead of failing.
TEST(BadInput, BytesThatAreNotUtf8AreWrittenAsReplacementCharacters) {
  std::string file = scratch_dir() + "/bytes.lsc";
  Outcome run = leakscope({"run", "-o", file, "--", "/bin/sh", "-c", "true", "name\xff\xfe"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* verb : {"dump", "report"}) {
    Outcome json = leakscope({verb, "--format", "json", file});
    ASSERT_EQ(json.exit_code, 0) << verb << ": " << json.err;
    nlohmann::json document = nlohmann::json::parse(json.out);
    EXPECT_EQ(document["process"]["argv"].back(), "name\xef\xbf\xbd\xef\xbf\xbd") << verb;
  }
  Outcome diff = leakscope({"diff", "--format", "json", file, file});
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
}

// A process killed before its first snapshot left none: an error, not a report of "snapshot 0".
TEST(BadInput, StreamWithoutAnySnapshotIsOneLineError) {
  std::string path = variant("no_snapshot.lsc", [](std::string& bytes) {
    // The file header and the process frame only (its payload length is at offset 16 + 8).
    uint32_t length = static_cast<uint8_t>(bytes[24]) | static_cast<uint8_t>(bytes[25]) << 8 |
                      static_cast<uint8_t>(bytes[26]) << 16 | static_cast<uint32_t>(static_cast<uint8_t>(bytes[27])) << 24;
    bytes.resize(16 + 16 + length);
  });
  expect_one_line_error(leakscope({"report", path}), 3, "holds no snapshot that can be read");
  expect_one_line_error(leakscope({"dump", "--format", "json", path}), 3, "holds no snapshot that can be read");
}

TEST(BadInput, EarlierSnapshotCanBeDumped) {
  nlohmann::json first = dump(good_stream(), {"--at", "1"});
  EXPECT_EQ(first["snapshot"], 1);
  EXPECT_GT(first["snapshots"].get<int>(), 1);
}

TEST(BadInput, UnknownVerbAndBadCliOptionsAreUsageErrors) {
  expect_one_line_error(leakscope({"frobnicate"}), 2, "");
  expect_one_line_error(leakscope({"dump", good_stream(), "--format", "xml"}), 2, "");
  expect_one_line_error(leakscope({"run", "--interval", "banana", "--", "true"}), 2, "interval");
  expect_one_line_error(leakscope({"run", "--depth", "0", "--", "true"}), 2, "depth");
  expect_one_line_error(leakscope({"run", "--sample", "lots", "--", "true"}), 2, "sample");
  expect_one_line_error(leakscope({"run"}), 2, "needs a command");
  // A misspelt option is named, not the file its value then displaced.
  expect_one_line_error(leakscope({"check", "--supress", "app.supp", good_stream()}), 2,
                        "unknown option '--supress' (leakscope check --help lists them)");
  expect_one_line_error(leakscope({"report", good_stream(), "again.lsc"}), 2, "unexpected argument 'again.lsc'");
}

TEST(BadInput, UnwritableOutputDirectoryStopsRunBeforeStarting) {
  expect_one_line_error(leakscope({"run", "-o", "/nonexistent/dir/run.lsc", "--", "true"}), 4, "/nonexistent/dir");
  // Where no file can be made though access() says yes to root.
  expect_one_line_error(leakscope({"run", "-o", "/proc/run.lsc", "--", "true"}), 4, "cannot write to '/proc'");
}

TEST(BadInput, CommandThatCannotStartIsReported) {
  Outcome outcome = leakscope({"run", "-o", scratch_dir() + "/x.lsc", "--", "/nonexistent/program"});
  expect_one_line_error(outcome, 127, "cannot run");
}

TEST(RunPassesStatus, CommandExitStatusIsPassedThrough) {
  Outcome outcome = leakscope({"run", "-o", scratch_dir() + "/x.lsc", "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(outcome.exit_code, 7) << outcome.err;
}

// The runtime without the CLI: bad settings disable tracking, never the program.
Outcome run_preloaded(const std::string& options) {
  return run_program({fixture("alloc_patterns"), "malloc"},
                     {{"LD_PRELOAD", preload_library()}, {"LEAKSCOPE_OPTIONS", options}});
}

void expect_tracking_disabled(const Outcome& outcome, const std::string& needle) {
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_NE(outcome.out.find("live_delta=0 "), std::string::npos) << outcome.out;
  EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  EXPECT_EQ(outcome.err.rfind("leakscope: tracking disabled: ", 0), 0u) << outcome.err;
  EXPECT_NE(outcome.err.find(needle), std::string::npos) << outcome.err;
}

TEST(RuntimeOptions, UnknownOptionDisablesTrackingWithOneLine) {
  std::string directory = scratch_dir();
  expect_tracking_disabled(run_preloaded("output=" + directory + "/x.lsc,bogus=1"), "unknown option 'bogus'");
  EXPECT_FALSE(std::filesystem::exists(directory + "/x.lsc"));
}

TEST(RuntimeOptions, MalformedValueDisablesTrackingWithOneLine) {
  expect_tracking_disabled(run_preloaded("interval=banana"), "bad value 'banana' for interval");
  expect_tracking_disabled(run_preloaded("depth"), "not of the form name=value");
  expect_tracking_disabled(run_preloaded("max_memory=1MiB"), "max_memory must be 0 (none) or at least 16MiB");
}

TEST(RuntimeOptions, UnwritableOutputDisablesTrackingWithOneLine) {
  expect_tracking_disabled(run_preloaded("output=/nonexistent/dir/x.lsc"), "cannot open output '/nonexistent/dir/x.lsc'");
}

TEST(RuntimeOptions, EnabledZeroIsSilentAndWritesNothing) {
  std::string directory = scratch_dir();
  Outcome outcome = run_preloaded("enabled=0,output=" + directory + "/x.lsc");
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.err, "");
  EXPECT_FALSE(std::filesystem::exists(directory + "/x.lsc"));
}

TEST(CApi, CallsAreSafeWithoutThePreload) {
  Outcome outcome = run_program({fixture("api_without_preload")}, {{"LD_PRELOAD", ""}});
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.out, "active=0 begin=-1 end=-1 snapshot=-1 live_positive=0 bad_domain=-1\n");
}

TEST(CApi, CallsWorkUnderThePreload) {
  Outcome outcome = leakscope({"run", "-o", scratch_dir() + "/x.lsc", "--", fixture("api_without_preload")});
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "active=1 begin=0 end=0 snapshot=0 live_positive=1 bad_domain=-1\n");
}

TEST(PreloadLibrary, DependsOnlyOnLibcAndLibunwindWithLibgccsUnwinderFirst) {
  Outcome outcome = run_program({"readelf", "-d", preload_library()});
  ASSERT_EQ(outcome.exit_code, 0);
  std::vector<std::string> needed;
  size_t at = 0;
  while ((at = outcome.out.find("Shared library: [", at)) != std::string::npos) {
    at += 17;
    needed.push_back(outcome.out.substr(at, outcome.out.find(']', at) - at));
  }
  // In this order: libgcc_s (which every C++ program loads anyway) before libunwind, so that the
  // program's _Unwind_* stay libgcc_s's.
  EXPECT_EQ(needed, (std::vector<std::string>{"libgcc_s.so.1", "libunwind.so.8", "libc.so.6"}));
}

// Hooks run while other libraries' constructors run, before the preload's own: a global of the
// runtime with a dynamic initializer would be reset after use (it once reset the allocator's count
// of leakscope's memory under libtorch, hiding 270 MiB).
TEST(PreloadLibrary, HasNoDynamicInitializers) {
  Outcome outcome = run_program({"nm", preload_library()});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.out.find("_GLOBAL__sub_I_"), std::string::npos) << outcome.out;
}

// A stream may name anything as a module, a FIFO among them: symbolizing a frame in it must not
// wait for a writer, and the frame reads as a module that is missing.
TEST(BadInput, AModuleThatIsAFifoIsMissingNotAWaitForAWriter) {
  using namespace leakscope::internal;
  std::string dir = scratch_dir();
  std::string fifo = dir + "/libmodel.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  constexpr uint64_t kBase = 0x7f0000000000;
  Bytes snapshot;
  snapshot.section(SectionTag::kInfo, info(0, 1000000000, true));
  snapshot.section(SectionTag::kModuleLoads, Bytes()
                                                 .varint(1)
                                                 .varint(0).varint(kBase).blob(fifo).blob("")
                                                 .varint(1).varint(0).varint(0x100000).varint(0).varint(5)
                                                 .varint(0).varint(0));
  snapshot.section(SectionTag::kStacks, Bytes().varint(1).varint(1).varint(1).signed_varint(static_cast<int64_t>(kBase + 0x1000)).varint(0));
  snapshot.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(4242).blob("main").varint(0));
  snapshot.section(SectionTag::kSites, Bytes().varint(1).varint(1).varint(0).signed_varint(1));
  snapshot.section(SectionTag::kTriples, Bytes().varint(1).varint(1).signed_varint(1).varint(1).varint(0));
  snapshot.section(SectionTag::kCounters, Bytes().varint(1).varint(1).varint(1).varint(4096).varint(0).varint(0).varint(0));
  snapshot.section(SectionTag::kBirths, Bytes().varint(1).varint(1).varint(0).signed_varint(4096).signed_varint(1));
  std::string path = dir + "/fifo_module.lsc";
  std::ofstream(path, std::ios::binary) << file_header() + process_frame() + frame(FrameType::kSnapshot, snapshot.str());
  Outcome report = run_program({LEAKSCOPE_CLI, "report", path}, {}, 30);
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("libmodel.so (missing)"), std::string::npos) << report.out;
}

}  // namespace
}  // namespace leakscope::testing
