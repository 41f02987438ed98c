// A reachability scan's results (LEAK_CHECK) read from hand-built streams: the lost figures per
// site and group in the analysis, report and dump, the `lost` finding, the max-lost gate, and
// streams without a scan, with a damaged one, or with one superseded or kept across a key
// snapshot.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stream_format.h"
#include "report/analysis.h"
#include "report/dump_format.h"
#include "report/gate_format.h"
#include "report/judged_state.h"
#include "report/leak_gate.h"
#include "report/prometheus_format.h"
#include "report/report_format.h"
#include "report/run_state.h"
#include "support/stream_builder.h"
#include "support/unwrapped.h"

namespace leakscope::report {
namespace {

using namespace leakscope::internal;
using namespace leakscope::testing;

constexpr uint64_t kLibcBase = 0x7f0000000000;

// definitions() defines, on thread 1 ("main"), three heap sites of one triple each: make_node
// (pointer_to_self.py:12), add_child (pointer_to_self.py:30), and a block libc allocated for
// itself (the runtime's own residue).
Bytes definitions() {
  Bytes snapshot;
  snapshot.section(SectionTag::kModuleLoads, Bytes()
                                                 .varint(1)
                                                 .varint(0).varint(kLibcBase).blob("libc.so.6").blob("")
                                                 .varint(1).varint(0).varint(0x100000).varint(0).varint(5)
                                                 .varint(0).varint(0));
  snapshot.section(SectionTag::kInterpretedCode, Bytes()
                                                     .varint(2)
                                                     .varint(1).varint(kLanguagePython).blob("make_node")
                                                     .blob("pointer_to_self.py").signed_varint(12).varint(kLineTablePython311).blob("")
                                                     .varint(2).varint(kLanguagePython).blob("add_child")
                                                     .blob("pointer_to_self.py").signed_varint(30).varint(kLineTablePython311).blob(""));
  // One frame each, written as differences from the previous stack's.
  uint64_t frames[] = {interpreted_frame(1, 0), interpreted_frame(2, 0), kLibcBase + 0x1000};
  Bytes stacks;
  stacks.varint(3);
  for (int i = 0; i < 3; ++i) {
    stacks.varint(1).varint(1).signed_varint(static_cast<int64_t>(frames[i] - (i == 0 ? 0 : frames[i - 1]))).varint(0);
  }
  snapshot.section(SectionTag::kStacks, stacks);
  snapshot.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(4242).blob("main").varint(0));
  snapshot.section(SectionTag::kSites, Bytes().varint(3).varint(1).varint(0).signed_varint(1).varint(1).varint(0).signed_varint(1)
                                           .varint(1).varint(0).signed_varint(1));
  snapshot.section(SectionTag::kTriples, Bytes().varint(3).varint(1).signed_varint(1).varint(1).varint(0)
                                             .varint(1).signed_varint(1).varint(1).varint(0)
                                             .varint(1).signed_varint(1).varint(1).varint(0));
  return snapshot;
}

// What snapshot 1 allocates: 1 block of 1337 bytes at make_node, 3 of 1024 at add_child, and
// libc's 72,704 bytes.
Bytes allocations() {
  Bytes snapshot;
  snapshot.section(SectionTag::kCounters, Bytes().varint(3)
                                              .varint(1).varint(1).varint(1337).varint(0).varint(0).varint(0)
                                              .varint(1).varint(3).varint(3072).varint(0).varint(0).varint(0)
                                              .varint(1).varint(1).varint(72704).varint(0).varint(0).varint(0));
  snapshot.section(SectionTag::kBirths, Bytes().varint(3)
                                            .varint(1).varint(0).signed_varint(1337).signed_varint(1)
                                            .varint(2).varint(0).signed_varint(3072).signed_varint(3)
                                            .varint(3).varint(0).signed_varint(72704).signed_varint(1));
  return snapshot;
}

// What the scan finds: make_node's block unreferenced, one of add_child's too and the other two
// reached only through it, and libc's block.
const std::vector<LostEntry> kLost = {{1, 1337, 1, 0, 0}, {2, 1024, 1, 2048, 2}, {3, 72704, 1, 0, 0}};

std::string snapshot_frame(const Bytes& payload, FrameType type = FrameType::kSnapshot) { return frame(type, payload.str()); }

// lost_stream() is a run of 2.1 s: snapshot 1 allocates; snapshot 2, the teardown mark at 2 s,
// carries the scan (without `scanned`, none); snapshot 3 is the final one.
std::string lost_stream(bool scanned = true, uint64_t missed = 0) {
  Bytes first = Bytes().section(SectionTag::kInfo, info(0, 1000000000, false)).append(definitions()).append(allocations());
  Bytes mark = Bytes().section(SectionTag::kInfo, info(1, 2000000000, SnapshotReason::kTeardown, false));
  if (scanned) mark.section(SectionTag::kLeakCheck, leak_check(LeakCheckTrigger::kTeardown, 2000000000, kLost, missed));
  Bytes last = Bytes().section(SectionTag::kInfo, info(2, 2100000000, true));
  return file_header() + process_frame(4242, "/usr/bin/python3") + snapshot_frame(first) + snapshot_frame(mark) +
         snapshot_frame(last);
}

// The streams written for the tests, removed when the test program ends.
struct TempStreams {
  std::vector<std::string> paths;
  ~TempStreams() {
    std::error_code ignored;
    for (const std::string& path : paths) std::filesystem::remove(path, ignored);
  }
};

std::string write_temp(const std::string& bytes) {
  static TempStreams written;
  std::string path = (std::filesystem::temp_directory_path() /
                      ("leakscope-leak-check-" + std::to_string(getpid()) + "-" + std::to_string(written.paths.size()) + ".lsc"))
                         .string();
  std::ofstream(path, std::ios::binary) << bytes;
  written.paths.push_back(path);
  return path;
}

std::string load_error(const std::string& bytes) {
  std::string path = write_temp(bytes);
  std::string error;
  try {
    load_run(path);
  } catch (const StreamError& caught) {
    error = caught.what();
  }
  std::filesystem::remove(path);
  return error;
}

std::unique_ptr<RunAnalysis> analyze(const std::string& bytes) {
  std::string path = write_temp(bytes);
  std::unique_ptr<RunAnalysis> analysis = analyze_run(path);
  std::filesystem::remove(path);
  return analysis;
}

const GroupReport& group_named(const RunAnalysis& analysis, const std::string& function) {
  for (const GroupReport& group : analysis.groups) {
    if (group.user_frame->function == function) return group;
  }
  ADD_FAILURE() << "no group at " << function;
  return analysis.groups.front();
}

const nlohmann::json& entry_named(const nlohmann::json& list, const std::string& function) {
  for (const nlohmann::json& entry : list) {
    if (entry["first_user_frame"].is_object() && entry["first_user_frame"]["function"] == function) return entry;
  }
  ADD_FAILURE() << "no entry at " << function << " in " << list.dump();
  return list.front();
}

void expect_lost(const nlohmann::json& entry, uint64_t bytes, uint64_t blocks, uint64_t indirect_bytes, uint64_t indirect_blocks) {
  EXPECT_EQ(entry["lost_bytes"], bytes) << entry.dump();
  EXPECT_EQ(entry["lost_blocks"], blocks) << entry.dump();
  EXPECT_EQ(entry["indirectly_lost_bytes"], indirect_bytes) << entry.dump();
  EXPECT_EQ(entry["indirectly_lost_blocks"], indirect_blocks) << entry.dump();
}

// dump_json() is `leakscope dump --format json` of `bytes` at its default snapshot, of the sites
// `selection` asks for; *passes says how many times it read the stream.
nlohmann::json dump_json(const std::string& bytes, const DumpSelection& selection = {}, size_t* passes = nullptr) {
  std::string path = write_temp(bytes);
  StreamReader reader(path);
  ChosenSnapshot at = choose_snapshot(SnapshotChoice{}, reader.skim_snapshots(), path);
  DumpRead read(reader, at, selection);
  if (passes != nullptr) *passes = read.passes();
  RunHeader header{read.state(), at, read.shown(), read.live_bytes_by_domain(), read.devices()};
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  write_dump_json(header, read.left_out(), read.sites(), out);
  std::fclose(out);
  nlohmann::json document = nlohmann::json::parse(std::string(text, size));
  std::free(text);
  std::filesystem::remove(path);
  return document;
}

TEST(LeakCheck, ReaderKeepsTheScanWithItsSnapshotAndEveryTriplesFigures) {
  std::string path = write_temp(lost_stream());
  RunState state = load_run(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(state.leak_check());
  const LeakCheck& check = *state.leak_check();
  EXPECT_EQ(check.trigger, LeakCheckTrigger::kTeardown);
  EXPECT_EQ(check.snapshot, 2u);
  EXPECT_EQ(check.epoch, 1u);
  EXPECT_EQ(check.time_ns, 2000000000u);
  EXPECT_EQ(check.stopped_ns, 2000000u);
  EXPECT_EQ(check.threads_stopped, 3u);
  EXPECT_EQ(check.blocks, 100u);
  EXPECT_EQ(check.bytes, 8000u);
  EXPECT_EQ(check.root_bytes, 4096u);
  EXPECT_EQ(check.memory_bytes, 65536u);
  ASSERT_EQ(check.triples.size(), 3u);
  EXPECT_EQ(check.triples[1].triple, 2u);
  EXPECT_EQ(check.triples[1].lost_bytes, 1024u);
  EXPECT_EQ(check.triples[1].indirectly_lost_blocks, 2u);
}

TEST(LeakCheck, AnalysisGivesEachSiteAndGroupItsLostFigures) {
  std::unique_ptr<RunAnalysis> analysis = analyze(lost_stream());
  const GroupReport& node = group_named(*analysis, "make_node");
  EXPECT_EQ(node.lost.bytes, 1337u);
  EXPECT_EQ(node.lost.blocks, 1u);
  EXPECT_EQ(node.lost.indirect_bytes, 0u);
  const GroupReport& child = group_named(*analysis, "add_child");
  EXPECT_EQ(child.lost.bytes, 1024u);
  EXPECT_EQ(child.lost.indirect_bytes, 2048u);
  EXPECT_EQ(child.lost.indirect_blocks, 2u);
  EXPECT_EQ(analysis->sites[child.parts[0]].lost.indirect_bytes, 2048u);
  // Every verdict of a run this short is unknown: both are the `lost` finding, most lost first;
  // libc's block is the runtime's own and is not.
  std::vector<std::string> lost;
  for (size_t g : analysis->lost_groups) lost.push_back(analysis->groups[g].user_frame->function);
  EXPECT_EQ(lost, (std::vector<std::string>{"add_child", "make_node"}));
}

TEST(LeakCheck, ReportJsonCarriesTheScanTheFiguresAndTheLostFindings) {
  std::unique_ptr<RunAnalysis> analysis = analyze(lost_stream());
  nlohmann::json document = report_json(*analysis, ReportOptions{});
  const nlohmann::json& check = document["leak_check"];
  EXPECT_EQ(check["scanned"], true);
  EXPECT_EQ(check["trigger"], "teardown");
  EXPECT_EQ(check["snapshot"], 2);
  EXPECT_DOUBLE_EQ(check["time_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(check["stopped_ms"].get<double>(), 2.0);
  EXPECT_EQ(check["threads_stopped"], 3);
  EXPECT_EQ(check["threads_missed"], 0);
  EXPECT_EQ(check["blocks"], 100);
  EXPECT_EQ(check["bytes"], 8000);
  EXPECT_EQ(check["root_bytes"], 4096);
  EXPECT_EQ(check["memory_bytes"], 65536);
  EXPECT_EQ(check["mmap_roots"], false);
  expect_lost(check, 1337 + 1024 + 72704, 3, 2048, 2);
  expect_lost(entry_named(document["groups"], "make_node"), 1337, 1, 0, 0);
  expect_lost(entry_named(document["groups"], "add_child"), 1024, 1, 2048, 2);
  expect_lost(entry_named(document["sites"], "add_child"), 1024, 1, 2048, 2);
  std::vector<nlohmann::json> lost;
  for (const nlohmann::json& finding : document["findings"]) {
    if (finding["kind"] == "lost") lost.push_back(finding);
  }
  ASSERT_EQ(lost.size(), 2u) << document["findings"].dump();
  expect_lost(lost[0], 1024, 1, 2048, 2);
  EXPECT_EQ(lost[0]["text"],
            "1,024 B in 1 block at add_child (pointer_to_self.py:30) — no pointer to them from any root or block scanned at exit; 2,048 B in 2 "
            "blocks more only through them");
  EXPECT_EQ(lost[1]["text"], "1,337 B in 1 block at make_node (pointer_to_self.py:12) — no pointer to them from any root or block scanned at exit");
  for (const nlohmann::json& group : document["groups"]) {
    if (group["id"] == lost[1]["group"]) EXPECT_EQ(group["first_user_frame"]["function"], "make_node");
  }
}

TEST(LeakCheck, ReportTextSaysTheRunWasScannedAndShowsLostBesideTheVerdicts) {
  std::unique_ptr<RunAnalysis> analysis = analyze(lost_stream());
  std::string text = unwrapped(report_text(*analysis, ReportOptions{}));
  EXPECT_NE(text.find("\nleak check at the teardown mark at 2.0 s: 3 threads stopped for 2.0 ms; 100 live blocks (7.81 KiB) "
                      "scanned from 4.00 KiB of roots; directly lost 75,065 B in 3 blocks, indirectly lost 2,048 B in 2 "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nLost: 1,337 B in 1 block at make_node (pointer_to_self.py:12) — no pointer to them from any root or block scanned at "
                      "exit\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("· directly lost 1,337 B in 1 block "), std::string::npos) << text;
  EXPECT_NE(text.find("· directly lost 1,024 B in 1 block, indirectly lost 2,048 B in 2 blocks"), std::string::npos) << text;
  EXPECT_EQ(text.find("warning:"), std::string::npos) << text;
}

TEST(LeakCheck, ThreadsThatCouldNotBeStoppedAreWarnedOf) {
  std::unique_ptr<RunAnalysis> analysis = analyze(lost_stream(true, 2));
  std::string text = unwrapped(report_text(*analysis, ReportOptions{}));
  EXPECT_NE(text.find("\nwarning: 2 threads could not be stopped in time: their registers were not scanned, nor their stacks "
                      "unless waiting in a system call, so blocks only they point to may show as lost\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(report_json(*analysis, ReportOptions{})["leak_check"]["threads_missed"], 2);
}

TEST(LeakCheck, DumpJsonCarriesTheSameFiguresPerSite) {
  nlohmann::json document = dump_json(lost_stream());
  EXPECT_EQ(document["leak_check"]["scanned"], true);
  EXPECT_EQ(document["leak_check"]["trigger"], "teardown");
  ASSERT_EQ(document["sites"].size(), 3u);
  for (const nlohmann::json& site : document["sites"]) {
    if (site["frames"][0]["function"] == "add_child") expect_lost(site, 1024, 1, 2048, 2);
    if (site["frames"][0]["function"] == "make_node") expect_lost(site, 1337, 1, 0, 0);
  }
}

TEST(LeakCheck, ADumpReadInPartsHasTheScansTotalsAndTheSitesOfOneRead) {
  // A budget of one site a pass: the stream is read once to count its stacks, then once per part.
  DumpSelection whole{.top = 2};
  DumpSelection parts{.top = 2, .site_memory = 1};
  size_t whole_passes = 0, parts_passes = 0;
  nlohmann::json expected = dump_json(lost_stream(), whole, &whole_passes);
  nlohmann::json read_in_parts = dump_json(lost_stream(), parts, &parts_passes);
  EXPECT_EQ(whole_passes, 1u);
  EXPECT_EQ(parts_passes, 5u);  // the count, then a part for each of three stacks and for no stack
  ASSERT_EQ(expected["sites"].size(), 2u);
  EXPECT_EQ(expected["sites_left_out"], 1);
  EXPECT_EQ(expected["leak_check"]["lost_bytes"], 1337 + 1024 + 72704);
  EXPECT_EQ(read_in_parts, expected) << read_in_parts.dump(2);
}

TEST(LeakCheck, StreamWithoutAScanSaysSoAndEveryFigureIsZero) {
  std::unique_ptr<RunAnalysis> analysis = analyze(lost_stream(false));
  EXPECT_FALSE(analysis->state.leak_check());
  EXPECT_TRUE(analysis->lost_groups.empty());
  nlohmann::json document = report_json(*analysis, ReportOptions{});
  EXPECT_EQ(document["leak_check"], nlohmann::json({{"scanned", false}}));
  for (const nlohmann::json& site : document["sites"]) expect_lost(site, 0, 0, 0, 0);
  for (const nlohmann::json& group : document["groups"]) expect_lost(group, 0, 0, 0, 0);
  EXPECT_EQ(report_text(*analysis, ReportOptions{}).find("lost"), std::string::npos);
  nlohmann::json dumped = dump_json(lost_stream(false));
  EXPECT_EQ(dumped["leak_check"], nlohmann::json({{"scanned", false}}));
  for (const nlohmann::json& site : dumped["sites"]) expect_lost(site, 0, 0, 0, 0);
}

TEST(LeakCheck, ScanNamingAnUndefinedTripleIsAStreamError) {
  Bytes snapshot = Bytes().section(SectionTag::kInfo, info(0, 1000000000, false)).append(definitions());
  snapshot.section(SectionTag::kLeakCheck, leak_check(LeakCheckTrigger::kTeardown, 1000000000, {{9, 16, 1, 0, 0}}));
  std::string error = load_error(file_header() + process_frame() + snapshot_frame(snapshot));
  EXPECT_NE(error.find("frame 1"), std::string::npos) << error;
  EXPECT_NE(error.find("malformed: leak check for undefined triple 9"), std::string::npos) << error;
}

TEST(LeakCheck, ScanListingATripleTwiceIsAStreamError) {
  Bytes snapshot = Bytes().section(SectionTag::kInfo, info(0, 1000000000, false)).append(definitions());
  snapshot.section(SectionTag::kLeakCheck, leak_check(LeakCheckTrigger::kTeardown, 1000000000, {{2, 16, 1, 0, 0}, {2, 8, 1, 0, 0}}));
  std::string error = load_error(file_header() + process_frame() + snapshot_frame(snapshot));
  EXPECT_NE(error.find("malformed: leak check lists its triples out of order"), std::string::npos) << error;
}

// A key snapshot repeats every definition and counter; the scan before it stays the run's.
TEST(LeakCheck, KeySnapshotKeepsTheScanReadBeforeIt) {
  std::string bytes = lost_stream();
  Bytes key = Bytes().section(SectionTag::kInfo, info(3, 2200000000, true)).append(definitions()).append(allocations());
  RunState state = load_run(write_temp(bytes + snapshot_frame(key, FrameType::kKeySnapshot)));
  ASSERT_TRUE(state.leak_check());
  EXPECT_EQ(state.leak_check()->snapshot, 2u);
  EXPECT_EQ(state.leak_check()->triples.size(), 3u);
}

TEST(LeakCheck, LaterScanSupersedesAnEarlierOne) {
  Bytes first = Bytes().section(SectionTag::kInfo, info(0, 1000000000, false)).append(definitions()).append(allocations());
  first.section(SectionTag::kLeakCheck, leak_check(LeakCheckTrigger::kSignal, 1000000000, kLost));
  Bytes mark = Bytes().section(SectionTag::kInfo, info(1, 2000000000, SnapshotReason::kTeardown, false));
  mark.section(SectionTag::kLeakCheck, leak_check(LeakCheckTrigger::kTeardown, 2000000000, {{1, 1337, 1, 0, 0}}));
  std::unique_ptr<RunAnalysis> analysis =
      analyze(file_header() + process_frame() + snapshot_frame(first) + snapshot_frame(mark));
  ASSERT_TRUE(analysis->state.leak_check());
  EXPECT_EQ(analysis->state.leak_check()->trigger, LeakCheckTrigger::kTeardown);
  EXPECT_EQ(group_named(*analysis, "add_child").lost.bytes, 0u);
  EXPECT_EQ(group_named(*analysis, "make_node").lost.bytes, 1337u);
}

// A scan on request at 2 s finds add_child's blocks lost; the program frees them at 3 s, longer
// before the teardown mark at 4 s than the second before it that a teardown is looked for in:
// the site is still reported, as it was at the scan.
TEST(LeakCheck, SiteLostAtTheScanButNotLiveAtTheJudgedSnapshotStillShows) {
  Bytes first = Bytes().section(SectionTag::kInfo, info(0, 1000000000, false)).append(definitions()).append(allocations());
  Bytes scan = Bytes().section(SectionTag::kInfo, info(1, 2000000000, SnapshotReason::kOnDemand, false));
  scan.section(SectionTag::kLeakCheck, leak_check(LeakCheckTrigger::kRequest, 2000000000, {{2, 1024, 1, 2048, 2}}));
  Bytes freed = Bytes().section(SectionTag::kInfo, info(2, 2900000000, false));
  freed.section(SectionTag::kCounters, Bytes().varint(1).varint(2).varint(0).varint(0).varint(3).varint(3072).varint(0));
  freed.section(SectionTag::kBirths, Bytes().varint(1).varint(2).varint(0).signed_varint(-3072).signed_varint(-3));
  Bytes mark = Bytes().section(SectionTag::kInfo, info(3, 4000000000, SnapshotReason::kTeardown, false));
  Bytes last = Bytes().section(SectionTag::kInfo, info(4, 4100000000, true));
  std::unique_ptr<RunAnalysis> analysis = analyze(file_header() + process_frame() + snapshot_frame(first) + snapshot_frame(scan) +
                                                  snapshot_frame(freed) + snapshot_frame(mark) + snapshot_frame(last));
  EXPECT_EQ(analysis->at.index, 4u);
  const GroupReport& child = group_named(*analysis, "add_child");
  SiteDetail site = site_detail(*analysis, child.parts[0]);
  EXPECT_TRUE(site.from_leak_check);
  EXPECT_EQ(site.summary.live_bytes, 3072);
  EXPECT_EQ(site.lost.indirect_bytes, 2048u);
  EXPECT_EQ(site.judgement.verdict, Verdict::kUnknown);
  EXPECT_EQ(site.judgement.reason, "not live at the judged snapshot; it lost blocks at the leak check at 2.0 s");
  EXPECT_EQ(analysis->live_bytes_by_domain[0], 1337 + 72704) << "the judged snapshot's live bytes are its own";
  nlohmann::json document = report_json(*analysis, ReportOptions{});
  EXPECT_EQ(document["leak_check"]["trigger"], "request");
  EXPECT_EQ(entry_named(document["sites"], "add_child")["from_leak_check"], true);
  EXPECT_NE(unwrapped(report_text(*analysis, ReportOptions{})).find("\nLost: 1,024 B in 1 block at add_child (pointer_to_self.py:30) — no "
                                                         "pointer to them from any root or block scanned at the leak check at 2.0 s;"),
            std::string::npos);
}

// gate() evaluates `bytes` with `limits`, the runtime's residue left out unless `residue_too`.
GateResult gate(const std::string& bytes, const GateLimits& limits, bool residue_too = false,
                const Suppressions* suppressions = nullptr) {
  std::unique_ptr<RunAnalysis> analysis = analyze(bytes);
  GateOptions options;
  options.limits = limits;
  options.runtime_residue = !residue_too;
  options.suppressions = suppressions;
  return evaluate_gate(*analysis, options);
}

const GateCheck* check_named(const GateResult& result, const std::string& limit) {
  for (const GateCheck& check : result.checks) {
    if (check.limit == limit) return &check;
  }
  return nullptr;
}

// make_node called from two places, each losing a block: two groups (their callers differ), one
// place to a person.
std::string one_frame_two_callers_stream() {
  Bytes first = Bytes().section(SectionTag::kInfo, info(0, 1000000000, false));
  Bytes codes;
  codes.varint(3);
  for (auto [id, name, line] : {std::tuple{1, "make_node", 12}, std::tuple{2, "build_left", 40}, std::tuple{3, "build_right", 50}}) {
    codes.varint(id).varint(kLanguagePython).blob(name).blob("pointer_to_self.py").signed_varint(line).varint(kLineTablePython311).blob("");
  }
  first.section(SectionTag::kInterpretedCode, codes);
  uint64_t node = interpreted_frame(1, 0), left = interpreted_frame(2, 0), right = interpreted_frame(3, 0);
  first.section(SectionTag::kStacks, Bytes()
                                         .varint(2)
                                         .varint(1).varint(2).signed_varint(static_cast<int64_t>(node))
                                         .signed_varint(static_cast<int64_t>(left - node)).varint(0)
                                         .varint(1).varint(2).signed_varint(0).signed_varint(static_cast<int64_t>(right - left)).varint(0));
  first.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(4242).blob("main").varint(0));
  first.section(SectionTag::kSites, Bytes().varint(2).varint(1).varint(0).signed_varint(1).varint(1).varint(0).signed_varint(1));
  first.section(SectionTag::kTriples, Bytes().varint(2).varint(1).signed_varint(1).varint(1).varint(0)
                                          .varint(1).signed_varint(1).varint(1).varint(0));
  first.section(SectionTag::kCounters, Bytes().varint(2)
                                           .varint(1).varint(1).varint(100).varint(0).varint(0).varint(0)
                                           .varint(1).varint(1).varint(200).varint(0).varint(0).varint(0));
  Bytes mark = Bytes().section(SectionTag::kInfo, info(1, 2000000000, SnapshotReason::kTeardown, false));
  mark.section(SectionTag::kLeakCheck, leak_check(LeakCheckTrigger::kTeardown, 2000000000, {{1, 100, 1, 0, 0}, {2, 200, 1, 0, 0}}));
  return file_header() + process_frame() + snapshot_frame(first) + snapshot_frame(mark);
}

TEST(LeakCheck, GroupsOfOneFrameToldApartByTheirCallersAreOnePlaceInTheText) {
  std::unique_ptr<RunAnalysis> analysis = analyze(one_frame_two_callers_stream());
  ASSERT_EQ(analysis->lost_groups.size(), 2u);
  std::string text = unwrapped(report_text(*analysis, ReportOptions{}));
  EXPECT_NE(text.find("\nLost: 300 B in 2 blocks at make_node (pointer_to_self.py:12) — no pointer to them from any root or block scanned at "
                      "exit\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Lost: 100 B"), std::string::npos) << text;
  EXPECT_EQ(report_json(*analysis, ReportOptions{})["findings"].size(), 2u) << "JSON findings are per group";
  GateResult result = evaluate_gate(*analysis, GateOptions{});
  EXPECT_EQ(check_named(result, "max-lost")->text, "300 B lost in 1 place > 0 B (largest: make_node (pointer_to_self.py:12) 300 B in 2 blocks)");
}

TEST(LeakCheckGate, MaxLostHoldsTheExactFigureOfTheSitesItCounts) {
  GateLimits limits;
  limits.max_lost_bytes = 1337 + 1024 + 2048;
  GateResult at = gate(lost_stream(), limits);
  ASSERT_NE(check_named(at, "max-lost"), nullptr);
  EXPECT_TRUE(at.passed()) << check_named(at, "max-lost")->text;
  EXPECT_EQ(check_named(at, "max-lost")->text,
            "4,409 B lost in 2 places (2,361 B directly, 2,048 B indirectly) <= 4,409 B (largest: add_child "
            "(pointer_to_self.py:30) 3,072 B in 3 blocks; make_node (pointer_to_self.py:12) 1,337 B in 1 block)");
  EXPECT_EQ(check_named(at, "max-leaked"), nullptr) << "a limit was named";
  limits.max_lost_bytes = 4408;
  GateResult over = gate(lost_stream(), limits);
  EXPECT_FALSE(over.passed());
  EXPECT_EQ(check_named(over, "max-lost")->text.substr(0, 84),
            "4,409 B lost in 2 places (2,361 B directly, 2,048 B indirectly) > 4,408 B (largest: ");
}

TEST(LeakCheckGate, LostRuntimeResidueFailsOnlyWithoutRuntimeSuppressions) {
  GateLimits limits;
  limits.max_lost_bytes = 4409;
  GateResult result = gate(lost_stream(), limits);
  EXPECT_TRUE(result.passed());
  ASSERT_EQ(result.lost_left_out.size(), 1u);
  EXPECT_EQ(result.lost_left_out[0].left_out_bytes, 72704u);
  EXPECT_EQ(result.lost_left_out[0].left_out_by.rfind("runtime: ", 0), 0u);
  GateResult gated = gate(lost_stream(), limits, true);
  EXPECT_FALSE(gated.passed());
  EXPECT_EQ(gated.lost_bytes.total_bytes(), 4409u + 72704u);
}

TEST(LeakCheckGate, SuppressedSitesAreLeftOutOfMaxLost) {
  Suppressions rules = Suppressions::parse("function:add_child\n", "app.supp");
  GateLimits limits;
  limits.max_lost_bytes = 1337;
  GateResult result = gate(lost_stream(), limits, false, &rules);
  EXPECT_TRUE(result.passed()) << check_named(result, "max-lost")->text;
  ASSERT_EQ(result.lost.size(), 1u);
  EXPECT_EQ(result.lost[0].name, "make_node (pointer_to_self.py:12)");
}

TEST(LeakCheckGate, WithNoLimitNamedAScannedRunAlsoFailsOnAnyLostByte) {
  GateResult scanned = gate(lost_stream(), GateLimits{});
  ASSERT_NE(check_named(scanned, "max-leaked"), nullptr);
  ASSERT_NE(check_named(scanned, "max-lost"), nullptr);
  EXPECT_TRUE(check_named(scanned, "max-leaked")->passed);
  EXPECT_FALSE(check_named(scanned, "max-lost")->passed);
  EXPECT_EQ(check_named(scanned, "max-lost")->text.substr(0, 80),
            "4,409 B lost in 2 places (2,361 B directly, 2,048 B indirectly) > 0 B (largest: ");

  GateResult unscanned = gate(lost_stream(false), GateLimits{});
  EXPECT_EQ(check_named(unscanned, "max-lost"), nullptr);
  EXPECT_TRUE(unscanned.passed());
  GateLimits rss;
  rss.max_rss_bytes = int64_t{1} << 40;
  EXPECT_EQ(check_named(gate(lost_stream(), rss), "max-lost"), nullptr) << "a limit was named";
}

TEST(LeakCheckGate, GateTextListsTheLostGroupsAndTheFailLineNamesTheLargest) {
  std::unique_ptr<RunAnalysis> analysis = analyze(lost_stream());
  GateOptions options;
  GateResult result = evaluate_gate(*analysis, options);
  std::string text = unwrapped(gate_text(*analysis, result, "run.lsc"));
  EXPECT_NE(text.find("\nlost at exit: 4,409 B in 2 places\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  lost add_child (pointer_to_self.py:30): 1,024 B in 1 block directly, 2,048 B in 2 blocks "
                      "indirectly\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  not gated, lost "), std::string::npos) << text;
  EXPECT_NE(text.find("\nFAIL max-lost: 4,409 B lost in 2 places (2,361 B directly, 2,048 B indirectly) > 0 B (largest: "
                      "add_child (pointer_to_self.py:30) 3,072 B in 3 blocks; make_node (pointer_to_self.py:12) 1,337 B in 1 "
                      "block)\n"),
            std::string::npos)
      << text;
  std::string junit = gate_junit({{"run.lsc", &result}});
  EXPECT_NE(junit.find("<testcase classname=\"leakscope.check\" name=\"max-lost\"><failure message=\"4,409 B lost"),
            std::string::npos)
      << junit;
}

TEST(LeakCheckGate, MaxLostOnARunThatWasNotScannedFails) {
  GateLimits limits;
  limits.max_lost_bytes = 0;
  GateResult result = gate(lost_stream(false), limits);
  EXPECT_FALSE(result.passed());
  EXPECT_EQ(check_named(result, "max-lost")->text, "the run was not leak-checked (leak_check=1): no lost bytes to hold");
}

TEST(LeakCheck, PrometheusHasTheLostBytesOfEachGroupByKind) {
  std::unique_ptr<RunAnalysis> analysis = analyze(lost_stream());
  std::string metrics = prometheus_metrics(*analysis, MetricsOptions{});
  EXPECT_NE(metrics.find("leakscope_lost_bytes{function=\"add_child (pointer_to_self.py:30)\",domain=\"heap\","
                         "kind=\"indirect\"} 2048\n"),
            std::string::npos)
      << metrics;
  // libc's block has no symbol here: its series is named by module and offset, which stay the same
  // from run to run, not by its address, which moves.
  EXPECT_NE(metrics.find("leakscope_live_bytes{function=\"libc.so.6+0x1000\",domain=\"heap\"} 72704\n"), std::string::npos)
      << metrics;
  std::unique_ptr<RunAnalysis> unscanned = analyze(lost_stream(false));
  EXPECT_EQ(prometheus_metrics(*unscanned, MetricsOptions{}).find("leakscope_lost_bytes"), std::string::npos);
}

TEST(LeakCheck, EveryTruncationOfTheScanIsAStreamError) {
  std::string scan = leak_check(LeakCheckTrigger::kTeardown, 1000000000, kLost).str();
  std::string before = Bytes().section(SectionTag::kInfo, info(0, 1000000000, false)).append(definitions()).append(allocations()).str();
  for (size_t length = 0; length < scan.size(); ++length) {
    std::string section = Bytes().varint(static_cast<uint64_t>(SectionTag::kLeakCheck)).varint(length).str() + scan.substr(0, length);
    std::string error = load_error(file_header() + process_frame() + frame(FrameType::kSnapshot, before + section));
    EXPECT_NE(error.find("malformed: "), std::string::npos) << length << ": " << error;
  }
  EXPECT_EQ(load_error(file_header() + process_frame() +
                       frame(FrameType::kSnapshot, before + Bytes().section(SectionTag::kLeakCheck, leak_check(LeakCheckTrigger::kTeardown,
                                                                                                              1000000000, kLost)).str())),
            "");
}

}  // namespace
}  // namespace leakscope::report
