// The reader against hand-built streams: exact state, torn and corrupt frames, unknown sections,
// dangling references, and every truncation and byte flip of a valid stream.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/stream_format.h"
#include "report/run_state.h"
#include "report/stream_reader.h"
#include "support/stream_builder.h"

namespace leakscope::report {
namespace {

using namespace leakscope::internal;
using namespace leakscope::testing;

// Snapshot 1 defines one stack, thread, task, site and triple, and counts 10 allocs of 100
// bytes; snapshot 2 frees 4 of them.
std::string two_snapshots() {
  Bytes first;
  first.section(SectionTag::kInfo, info(0, 1000000000, false));
  first.section(SectionTag::kStacks, Bytes().varint(1).varint(1).varint(2).signed_varint(0x401000).signed_varint(0x20).varint(0));
  first.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(4242).blob("main").varint(0));
  first.section(SectionTag::kTasks, Bytes().varint(1).varint(1).varint(7).blob("request"));
  first.section(SectionTag::kSites, Bytes().varint(1).varint(1).varint(0).signed_varint(1));
  first.section(SectionTag::kTriples, Bytes().varint(1).varint(1).signed_varint(1).varint(1).varint(1));
  first.section(SectionTag::kCounters, Bytes().varint(1).varint(1).varint(10).varint(1000).varint(0).varint(0).varint(0));
  first.section(SectionTag::kBirths, Bytes().varint(1).varint(1).varint(0).signed_varint(1000).signed_varint(10));
  Bytes second;
  second.section(SectionTag::kInfo, info(1, 2000000000, true));
  second.section(SectionTag::kCounters, Bytes().varint(1).varint(1).varint(0).varint(0).varint(4).varint(400).varint(0));
  second.section(SectionTag::kBirths, Bytes().varint(1).varint(1).varint(0).signed_varint(-400).signed_varint(-4));
  second.section(SectionTag::kLifetimes, Bytes().varint(1).varint(1).varint(0b10).varint(400));
  return file_header() + process_frame() + frame(FrameType::kSnapshot, first.str()) +
         frame(FrameType::kSnapshot, second.str());
}

std::string write_temp(const std::string& bytes) {
  static int counter = 0;
  std::string path = (std::filesystem::temp_directory_path() /
                      ("leakscope-reader-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".lsc"))
                         .string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// load_error() is the error loading `bytes` gives, or "" when it loads.
std::string load_error(const std::string& bytes) {
  try {
    load_run(write_temp(bytes));
  } catch (const StreamError& error) {
    return error.what();
  }
  return "";
}

TEST(StreamReader, RebuildsTheExactStateOfEachSnapshot) {
  std::string path = write_temp(two_snapshots());
  RunState first = load_run(path, 1);
  EXPECT_EQ(first.snapshot_count(), 1u);
  EXPECT_EQ(first.triples()[1].live_bytes(), 1000);
  EXPECT_EQ(first.triples()[1].live_blocks(), 10);

  RunState last = load_run(path);
  EXPECT_EQ(last.process().pid, 4242);
  EXPECT_EQ(last.process().exe, "/usr/bin/app");
  EXPECT_EQ(last.process().argv, (std::vector<std::string>{"app", "--x"}));
  EXPECT_EQ(last.snapshot_count(), 2u);
  EXPECT_TRUE(last.last_snapshot().final);
  EXPECT_EQ(last.last_snapshot().rss_bytes, 4096u);
  EXPECT_EQ(last.frames(last.stacks()[1]).to_vector(), (std::vector<uint64_t>{0x401000, 0x401020}));
  EXPECT_EQ(last.threads()[1].name, "main");
  EXPECT_EQ(last.tasks()[1].name, "request");
  EXPECT_EQ(last.tasks()[1].user_id, 7u);
  const Triple& triple = last.triples()[1];
  EXPECT_EQ(triple.live_bytes(), 600);
  EXPECT_EQ(triple.live_blocks(), 6);
  EXPECT_EQ(triple.last.free_count, 4u);
  EXPECT_EQ(last.sites()[1].freed_bytes_by_lifetime[1], 400u);
  // Born in epoch 0 (time 0): 1000 bytes, of which 400 were freed.
  ASSERT_EQ(last.sites()[1].births.size(), 1u);
  EXPECT_EQ(last.sites()[1].births[0].bytes, 600);
}

TEST(StreamReader, TornLastFrameIsIgnored) {
  std::string bytes = two_snapshots();
  RunState state = load_run(write_temp(bytes.substr(0, bytes.size() - 5)));
  EXPECT_EQ(state.snapshot_count(), 1u);
}

TEST(StreamReader, DamagedProcessFrameIsAnErrorNamingIt) {
  std::string bytes = two_snapshots();
  bytes[file_header().size() + kFrameHeaderSize + 3] ^= 1;
  std::string error = load_error(bytes);
  EXPECT_NE(error.find("frame 0 at offset 16"), std::string::npos) << error;
  EXPECT_NE(error.find("bad checksum"), std::string::npos) << error;
}

TEST(StreamReader, DamagedSnapshotKeepsWhatCameBeforeItWhenNoKeySnapshotFollows) {
  std::string bytes = two_snapshots();
  size_t second_snapshot = bytes.find("LSFR", file_header().size() + process_frame().size() + 1);
  ASSERT_NE(second_snapshot, std::string::npos);
  bytes[second_snapshot + kFrameHeaderSize + 3] ^= 1;
  std::string path = write_temp(bytes);
  StreamReader reader(path);
  Frame frame;
  int frames = 0;
  while (reader.next(&frame)) ++frames;
  EXPECT_EQ(frames, 2);  // the process frame and the first snapshot
  ASSERT_EQ(reader.damaged().size(), 1u);
  EXPECT_EQ(reader.damaged()[0].begin, second_snapshot);
  EXPECT_EQ(reader.damaged()[0].end, bytes.size());
  EXPECT_EQ(reader.damaged()[0].fault, "bad checksum");
  EXPECT_FALSE(reader.damaged()[0].resumed);
  EXPECT_EQ(load_run(path).snapshot_count(), 1u);
}

// A key snapshot holding the whole state after snapshot 2 of two_snapshots(), as snapshot 3 in
// which nothing happened.
std::string key_after_two_snapshots() {
  Bytes key;
  key.section(SectionTag::kInfo, info(2, 3000000000, true));
  key.section(SectionTag::kStacks, Bytes().varint(1).varint(1).varint(2).signed_varint(0x401000).signed_varint(0x20).varint(0));
  key.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(4242).blob("main").varint(0));
  key.section(SectionTag::kTasks, Bytes().varint(1).varint(1).varint(7).blob("request"));
  key.section(SectionTag::kSites, Bytes().varint(1).varint(1).varint(0).signed_varint(1));
  key.section(SectionTag::kTriples, Bytes().varint(1).varint(1).signed_varint(1).varint(1).varint(1));
  key.section(SectionTag::kCounters, Bytes().varint(1).varint(1).varint(10).varint(1000).varint(4).varint(400).varint(0));
  key.section(SectionTag::kBirths, Bytes().varint(1).varint(1).varint(0).signed_varint(600).signed_varint(6));
  // Lifetimes stay what this epoch freed (nothing), as in every snapshot.
  return frame(FrameType::kKeySnapshot, key.str());
}

TEST(StreamReader, ReadingResumesAtTheNextKeySnapshotWithTheWholeState) {
  std::string bytes = two_snapshots();
  size_t second_snapshot = bytes.find("LSFR", file_header().size() + process_frame().size() + 1);
  ASSERT_NE(second_snapshot, std::string::npos);
  bytes[second_snapshot + kFrameHeaderSize + 3] ^= 1;
  size_t key_offset = bytes.size();
  bytes += key_after_two_snapshots();
  std::string path = write_temp(bytes);
  {
    StreamReader reader(path);
    Frame frame;
    while (reader.next(&frame)) {
    }
    ASSERT_EQ(reader.damaged().size(), 1u);
    EXPECT_EQ(reader.damaged()[0].begin, second_snapshot);
    EXPECT_EQ(reader.damaged()[0].end, key_offset);
    EXPECT_TRUE(reader.damaged()[0].resumed);
  }
  RunState state = load_run(path);
  EXPECT_EQ(state.snapshot_count(), 2u);
  EXPECT_TRUE(state.last_snapshot().final);
  const Triple& triple = state.triples()[1];
  EXPECT_EQ(triple.live_bytes(), 600);
  EXPECT_EQ(triple.live_blocks(), 6);
  ASSERT_EQ(state.sites()[1].births.size(), 1u);
  EXPECT_EQ(state.sites()[1].births[0].bytes, 600);
  EXPECT_EQ(state.frames(state.stacks()[1]).to_vector(), (std::vector<uint64_t>{0x401000, 0x401020}));
  EXPECT_EQ(state.sites()[1].freed_bytes_by_lifetime[1], 0u) << "the lost snapshot's frees are lost";
}

TEST(StreamReader, KeySnapshotAfterIntactOnesGivesTheSameStateAsTheirSum) {
  std::string path = write_temp(two_snapshots() + key_after_two_snapshots());
  RunState state = load_run(path);
  EXPECT_EQ(state.snapshot_count(), 3u);
  EXPECT_EQ(state.triples()[1].live_bytes(), 600);
  EXPECT_EQ(state.triples()[1].last.free_count, 4u);
  EXPECT_EQ(state.sites()[1].freed_bytes_by_lifetime[1], 400u);
  ASSERT_EQ(state.sites()[1].births.size(), 1u);
  EXPECT_EQ(state.sites()[1].births[0].bytes, 600);
}

// Slot 1 holds thread "a" (tid 10), which keeps 100 bytes and exits, then thread "b" (tid 11),
// which keeps 200 bytes at the same site: one triple, two threads.
TEST(StreamReader, ThreadsSharingASlotEachKeepTheirBirths) {
  Bytes first;
  first.section(SectionTag::kInfo, info(0, 1000000000, false));
  first.section(SectionTag::kStacks, Bytes().varint(1).varint(1).varint(1).signed_varint(0x401000).varint(0));
  first.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(10).blob("a").varint(0));
  first.section(SectionTag::kSites, Bytes().varint(1).varint(1).varint(0).signed_varint(1));
  first.section(SectionTag::kTriples, Bytes().varint(1).varint(1).signed_varint(1).varint(1).varint(0));
  first.section(SectionTag::kCounters, Bytes().varint(1).varint(1).varint(1).varint(100).varint(0).varint(0).varint(0));
  first.section(SectionTag::kBirths, Bytes().varint(1).varint(1).varint(0).signed_varint(100).signed_varint(1));
  Bytes exit;
  exit.section(SectionTag::kInfo, info(1, 2000000000, false));
  exit.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(10).blob("a").varint(kThreadExited));
  Bytes next;
  next.section(SectionTag::kInfo, info(3, 4000000000, true));
  next.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(11).blob("b").varint(kThreadFollowsAnother));
  next.section(SectionTag::kCounters, Bytes().varint(1).varint(1).varint(1).varint(200).varint(0).varint(0).varint(0));
  next.section(SectionTag::kBirths, Bytes().varint(1).varint(1).varint(3).signed_varint(200).signed_varint(1));
  RunState state = load_run(write_temp(file_header() + process_frame() + frame(FrameType::kSnapshot, first.str()) +
                                       frame(FrameType::kSnapshot, exit.str()) + frame(FrameType::kSnapshot, next.str())));
  ASSERT_EQ(state.threads().size(), 3u);  // index 0 is none
  std::map<std::string, int64_t> held;
  state.for_each_thread_part(state.triples()[1], [&](const ThreadPart& part) {
    held[state.threads()[part.thread].name] += part.live_bytes;
  });
  EXPECT_EQ(held, (std::map<std::string, int64_t>{{"a", 100}, {"b", 200}}));
  EXPECT_TRUE(state.threads()[1].exited);
  EXPECT_EQ(state.threads()[2].tid, 11);
}

// The skim reads INFO's later fields where a snapshot has them (the blocks parked on free lists,
// the heap bytes) and reads nothing of the sections after an older INFO that ends before them.
TEST(StreamReader, SkimReadsInfosLaterFieldsOnlyWhereTheyAre) {
  std::string older = two_snapshots();
  Bytes newer_info = info(2, 3000000000, false);  // 9 figures: RSS, own memory, 36 864 blocks
  newer_info.varint(0).varint(0).varint(0).varint(0).varint(5000).varint(123456);
  Bytes newer;
  newer.section(SectionTag::kInfo, newer_info);
  newer.section(SectionTag::kCounters, Bytes().varint(1).varint(1).varint(1).varint(50).varint(0).varint(0).varint(0));
  StreamReader reader(write_temp(older + frame(FrameType::kSnapshot, newer.str())));
  std::vector<SnapshotMark> marks = reader.skim_snapshots();
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks[0].tracked_blocks, 4096u * 9);
  EXPECT_EQ(marks[0].parked_blocks, 0u) << "not read from the STACKS section after it";
  EXPECT_EQ(marks[0].host_heap_bytes, 0u);
  EXPECT_EQ(marks[2].parked_blocks, 5000u);
  EXPECT_EQ(marks[2].host_heap_bytes, 123456u);
}

TEST(StreamReader, UnknownSectionsAreSkipped) {
  Bytes snapshot;
  snapshot.section(SectionTag::kInfo, info(0, 5, false));
  snapshot.section(static_cast<SectionTag>(999), Bytes().varint(1).varint(2).varint(3));
  RunState state = load_run(write_temp(file_header() + process_frame() + frame(FrameType::kSnapshot, snapshot.str())));
  EXPECT_EQ(state.snapshot_count(), 1u);
}

TEST(StreamReader, CountersForAnUndefinedTripleAreRejected) {
  Bytes snapshot;
  snapshot.section(SectionTag::kCounters, Bytes().varint(1).varint(9).varint(1).varint(1).varint(0).varint(0).varint(0));
  std::string error = load_error(file_header() + process_frame() + frame(FrameType::kSnapshot, snapshot.str()));
  EXPECT_NE(error.find("undefined triple 9"), std::string::npos) << error;
}

// Two stacks whose outer frames are the same two tail nodes: each is its head, then the chain.
// Two heap sites on stacks of their own, one block each: the first's born at 0.1013 s, the
// second's at 0.7 s, by when births are counted in bins of 4 ms (kMaxBirthBins of them).
std::string births_far_apart() {
  Bytes first;
  first.section(SectionTag::kInfo, info(0, 101300000, false));
  first.section(SectionTag::kStacks, Bytes().varint(2).varint(1).varint(1).signed_varint(0x401000).varint(0)
                                         .varint(1).varint(1).signed_varint(0x100).varint(0));
  first.section(SectionTag::kThreads, Bytes().varint(1).varint(1).varint(4242).blob("main").varint(0));
  first.section(SectionTag::kSites, Bytes().varint(2).varint(1).varint(0).signed_varint(1).varint(1).varint(0).signed_varint(1));
  first.section(SectionTag::kTriples, Bytes().varint(2).varint(1).signed_varint(1).varint(1).varint(0)
                                          .varint(1).signed_varint(1).varint(1).varint(0));
  Bytes second;
  second.section(SectionTag::kInfo, info(1, 700000000, false));
  second.section(SectionTag::kCounters, Bytes().varint(1).varint(1).varint(1).varint(100).varint(0).varint(0).varint(0));
  second.section(SectionTag::kBirths, Bytes().varint(1).varint(1).varint(1).signed_varint(100).signed_varint(1));
  Bytes third;
  third.section(SectionTag::kInfo, info(2, 800000000, true));
  third.section(SectionTag::kCounters, Bytes().varint(1).varint(2).varint(1).varint(200).varint(0).varint(0).varint(0));
  third.section(SectionTag::kBirths, Bytes().varint(1).varint(2).varint(2).signed_varint(200).signed_varint(1));
  return file_header() + process_frame() + frame(FrameType::kSnapshot, first.str()) +
         frame(FrameType::kSnapshot, second.str()) + frame(FrameType::kSnapshot, third.str());
}

// bins_of() is a site's births as (bin, bytes) pairs.
std::vector<std::pair<uint32_t, int64_t>> bins_of(const Site& site) {
  std::vector<std::pair<uint32_t, int64_t>> bins;
  for (const BirthBin& bin : site.births) bins.emplace_back(bin.bin, bin.bytes);
  return bins;
}

TEST(StreamReader, APartialReadKeepsItsSitesAsTheWholeReadDoesAndCountsTheRestProgramWide) {
  std::string path = write_temp(births_far_apart());
  RunState whole = load_run(path);
  ASSERT_EQ(whole.birth_bin_ns(), 4000000u);
  for (uint32_t kept_stack : {1u, 2u}) {
    SCOPED_TRACE(kept_stack);
    RunState partial;
    partial.keep_sites_of([kept_stack](uint32_t stack) { return stack == kept_stack; });
    read_run(path, 0, &partial, [](const RunState&) {});
    ASSERT_EQ(partial.sites().size(), 2u);  // the one kept, after id 0
    ASSERT_EQ(partial.triples().size(), 2u);
    EXPECT_EQ(partial.stream_site_id(1), kept_stack);
    EXPECT_EQ(partial.stream_stack_count(), 2u);
    const Site& kept = partial.sites()[1];
    EXPECT_EQ(kept.live_bytes, whole.sites()[kept_stack].live_bytes);
    EXPECT_EQ(partial.frames(partial.stacks()[kept.stack]).to_vector(),
              whole.frames(whole.stacks()[whole.sites()[kept_stack].stack]).to_vector());
    // Its births are binned as wide as the whole read bins them, whichever site's birth widened them.
    EXPECT_EQ(partial.birth_bin_ns(), whole.birth_bin_ns());
    EXPECT_EQ(bins_of(kept), bins_of(whole.sites()[kept_stack]));
    EXPECT_EQ(partial.live_bytes_by_domain(), whole.live_bytes_by_domain());
  }
  std::filesystem::remove(path);
}

// frames_of() is the offset and type of every frame `reader` reads from where it is.
std::vector<std::pair<uint64_t, FrameType>> frames_of(StreamReader& reader) {
  std::vector<std::pair<uint64_t, FrameType>> frames;
  for (Frame frame; reader.next(&frame);) frames.emplace_back(frame.offset, frame.type);
  return frames;
}

TEST(StreamReader, ARestartReadsTheFileOpenedFirstWhateverItsNameNowHolds) {
  std::string path = write_temp(two_snapshots());
  StreamReader reader(path);
  std::vector<std::pair<uint64_t, FrameType>> first = frames_of(reader);
  ASSERT_EQ(first.size(), 3u);  // the process and two snapshots
  // A rerun writes a new stream under the name (a new file), then the name is gone.
  std::string rerun = write_temp(file_header() + process_frame(99));
  std::filesystem::rename(rerun, path);
  reader.restart();
  EXPECT_EQ(frames_of(reader), first);
  std::filesystem::remove(path);
  reader.restart();
  Frame process;
  ASSERT_TRUE(reader.next(&process));
  EXPECT_EQ(process.index, 0u);
  EXPECT_EQ(process.type, FrameType::kProcess);
}

TEST(StreamReader, AStreamRewrittenInPlaceWhileItIsReadIsAnErrorAndOneThatGrowsIsNot) {
  std::string path = write_temp(two_snapshots());
  StreamReader reader(path);
  ASSERT_EQ(frames_of(reader).size(), 3u);
  // Written on by its process: the same beginning, longer. Read again, it is what it was when
  // opened, so that every read of it agrees.
  std::ofstream(path, std::ios::binary | std::ios::app) << frame(FrameType::kSnapshot, Bytes().section(SectionTag::kInfo, info(2, 3000000000, true)).str());
  reader.restart();
  EXPECT_EQ(frames_of(reader).size(), 3u);
  // Another stream copied onto it: the same file, another process.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file_header() + process_frame(99) + frame(FrameType::kSnapshot, Bytes().section(SectionTag::kInfo, info(0, 1000000000, true)).str());
  try {
    reader.restart();
    ADD_FAILURE() << "restarted on a rewritten stream";
  } catch (const StreamError& error) {
    EXPECT_NE(std::string(error.what()).find("rewritten while it was read"), std::string::npos) << error.what();
  }
  EXPECT_THROW(reader.check_unchanged(), StreamError);
  std::filesystem::remove(path);
}

TEST(StreamReader, StacksSharingTailNodesReadAsTheirWholeFrames) {
  Bytes snapshot;
  snapshot.section(SectionTag::kInfo, info(0, 5, false));
  // Node 1 (outermost) 0x500000, node 2 0x400100 called from it.
  snapshot.section(SectionTag::kStackNodes,
                   Bytes().varint(2).varint(1).varint(1).signed_varint(0x500000).varint(1).signed_varint(-0xfff00));
  // Stack 1: head 0x401000, 0x401020 then node 2; stack 2: head 0x401004 (0x401000 + 4), then node 2.
  snapshot.section(SectionTag::kStacks, Bytes()
                                            .varint(2)
                                            .varint(1).varint(2).signed_varint(0x401000).signed_varint(0x20).varint(2)
                                            .varint(1).varint(1).signed_varint(4).varint(2));
  RunState state = load_run(write_temp(file_header() + process_frame() + frame(FrameType::kSnapshot, snapshot.str())));
  ASSERT_EQ(state.stacks().size(), 3u);
  EXPECT_EQ(state.frames(state.stacks()[1]).to_vector(), (std::vector<uint64_t>{0x401000, 0x401020, 0x400100, 0x500000}));
  EXPECT_EQ(state.frames(state.stacks()[2]).to_vector(), (std::vector<uint64_t>{0x401004, 0x400100, 0x500000}));
}

// A chain of nodes deeper than any stack the runtime writes is refused before it is built.
TEST(StreamReader, StackDeeperThanTheRuntimeWritesIsRefused) {
  Bytes nodes;
  nodes.varint(300).varint(1);
  for (int i = 0; i < 300; ++i) nodes.varint(1).signed_varint(8);  // each the child of the one before
  Bytes snapshot;
  snapshot.section(SectionTag::kInfo, info(0, 5, false));
  snapshot.section(SectionTag::kStackNodes, nodes);
  std::string error = load_error(file_header() + process_frame() + frame(FrameType::kSnapshot, snapshot.str()));
  EXPECT_NE(error.find("stack deeper than 256 frames"), std::string::npos) << error;
}

// A snapshot frame written twice (intact, so no checksum tells) would count its changes twice.
TEST(StreamReader, SnapshotThatDoesNotCloseALaterEpochIsRejected) {
  Bytes first, again;
  first.section(SectionTag::kInfo, info(3, 1000, false));
  again.section(SectionTag::kInfo, info(3, 2000, false));
  std::string bytes = file_header() + process_frame() + frame(FrameType::kSnapshot, first.str()) +
                      frame(FrameType::kSnapshot, again.str());
  std::string error = load_error(bytes);
  EXPECT_NE(error.find("closes epoch 3, not after the previous snapshot's 3"), std::string::npos) << error;
}

TEST(StreamReader, EveryTruncationAndByteFlipLoadsOrFailsCleanly) {
  std::string bytes = two_snapshots();
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::string path = write_temp(bytes.substr(0, length));
    try {
      load_run(path);
    } catch (const StreamError&) {
    }
    std::filesystem::remove(path);
  }
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::string flipped = bytes;
    flipped[at] ^= 0x80;
    std::string path = write_temp(flipped);
    try {
      load_run(path);
    } catch (const StreamError&) {
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace leakscope::report
