// Every heap API leaks an exact, known amount in alloc_patterns; the dump must show exactly that
// at the leaking function, and nothing of the balanced churn beside it.
#include <gtest/gtest.h>

#include "harness.h"

namespace leakscope::testing {
namespace {

struct PatternRun {
  nlohmann::json dump;
  std::string stdout_text;
};

PatternRun run_pattern(const std::string& mode, const std::map<std::string, std::string>& env = {}) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--", fixture("alloc_patterns"), mode}, env);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  PatternRun run{dump(file), outcome.out};
  EXPECT_TRUE(sites_at(run.dump, "churn_balanced").empty()) << "balanced churn reported live";
  return run;
}

void expect_site(const nlohmann::json& document, const std::string& function, int64_t bytes, int64_t blocks,
                 const std::string& domain = "heap") {
  nlohmann::json site = site_at(document, function);
  EXPECT_EQ(site["live_bytes"], bytes) << function;
  EXPECT_EQ(site["live_blocks"], blocks) << function;
  EXPECT_EQ(site["domain"], domain) << function;
}

TEST(HeapLeaksAreExact, MallocLeakIsCountedAtItsFunction) {
  PatternRun run = run_pattern("malloc");
  expect_site(run.dump, "leak_with_malloc", 100 * 1000, 100);
  EXPECT_NE(run.stdout_text.find("live_delta=100000 "), std::string::npos) << run.stdout_text;
}

TEST(HeapLeaksAreExact, CallocLeakCountsCountTimesSize) {
  PatternRun run = run_pattern("calloc");
  expect_site(run.dump, "leak_with_calloc", 50 * 770, 50);
}

TEST(HeapLeaksAreExact, ReallocChainEndsAsOneBlockOfItsLastSize) {
  PatternRun run = run_pattern("realloc");
  expect_site(run.dump, "grow_with_realloc", 10 * 4096, 10);
  EXPECT_NE(run.stdout_text.find("live_delta=40960 "), std::string::npos) << run.stdout_text;
}

TEST(HeapLeaksAreExact, EveryAlignedVariantIsTracked) {
  PatternRun run = run_pattern("aligned");
  expect_site(run.dump, "leak_with_posix_memalign", 7 * 1000, 7);
  expect_site(run.dump, "leak_with_aligned_alloc", 6 * 1024, 6);
  expect_site(run.dump, "leak_with_memalign", 5 * 3000, 5);
  expect_site(run.dump, "leak_with_valloc", 4 * 5000, 4);
  expect_site(run.dump, "leak_with_pvalloc", 3 * 8192, 3);  // pvalloc gives whole pages
}

TEST(HeapLeaksAreExact, OperatorNewIsSeenThroughLibstdcxx) {
  PatternRun run = run_pattern("new");
  // frames[0] is the caller of operator new, not operator new itself.
  expect_site(run.dump, "leak_with_new", 20 * 32, 20);
  expect_site(run.dump, "leak_with_new_array", 30 * 333, 30);
  // Plus the 20 string buffers of 101 bytes that std::string allocates.
  EXPECT_NE(run.stdout_text.find("live_delta=12650 "), std::string::npos) << run.stdout_text;
}

TEST(HeapLeaksAreExact, SameLeakUnderJemallocPreloadedAfterLeakscope) {
  const std::string jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
  PatternRun run = run_pattern("malloc", {{"LD_PRELOAD", jemalloc}});
  EXPECT_NE(run.stdout_text.find("allocator=jemalloc"), std::string::npos) << "jemalloc was not below leakscope";
  expect_site(run.dump, "leak_with_malloc", 100 * 1000, 100);
  EXPECT_NE(run.stdout_text.find("live_delta=100000 "), std::string::npos) << run.stdout_text;
}

// jemalloc's own API, as a program linked with it calls it: blocks grown in place, freed with
// their size or without it, leave nothing; what mallocx and rallocx keep is exact.
TEST(HeapLeaksAreExact, JemallocsOwnApiIsTrackedAsTheMallocFamilyIs) {
  PatternRun run = run_pattern("jemalloc", {{"LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}});
  EXPECT_NE(run.stdout_text.find("allocator=jemalloc"), std::string::npos) << "jemalloc was not below leakscope";
  expect_site(run.dump, "leak_with_mallocx", 40 * 1000, 40);
  expect_site(run.dump, "leak_zeroed_and_aligned_with_mallocx", 10 * 500, 10);
  expect_site(run.dump, "grow_with_rallocx", 12 * 4096, 12);
  EXPECT_TRUE(sites_at(run.dump, "churn_with_sized_frees").empty()) << run.dump.dump().substr(0, 2000);
  EXPECT_NE(run.stdout_text.find("live_delta=" + std::to_string(40 * 1000 + 10 * 500 + 12 * 4096) + " "), std::string::npos)
      << run.stdout_text;
}

// A program that declares jemalloc's API weak finds leakscope's exports when jemalloc is not
// there: the malloc family serves them, recorded the same.
TEST(HeapLeaksAreExact, JemallocsApiWithoutJemallocIsServedByTheMallocFamily) {
  PatternRun run = run_pattern("jemalloc");
  EXPECT_NE(run.stdout_text.find("allocator=other"), std::string::npos) << run.stdout_text;
  expect_site(run.dump, "leak_with_mallocx", 40 * 1000, 40);
  expect_site(run.dump, "leak_zeroed_and_aligned_with_mallocx", 10 * 500, 10);
  expect_site(run.dump, "grow_with_rallocx", 12 * 4096, 12);
  EXPECT_TRUE(sites_at(run.dump, "churn_with_sized_frees").empty()) << run.dump.dump().substr(0, 2000);
}

// In sampled mode most calls go unrecorded; the memory jemalloc maps for itself while serving
// them is still its own, not the program's mmap.
TEST(HeapLeaksAreExact, SampledModeLeavesAPreloadedAllocatorsOwnMappingsUncounted) {
  std::string file = scratch_dir() + "/sampled.lsc";
  Outcome outcome = leakscope({"run", "--sample", "64KiB", "-o", file, "--", fixture("sampling_sites")},
                              {{"LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json document = dump(file, {"--at", "end"});
  EXPECT_GT(document["live_bytes_by_domain"].value("heap", 0), 0);
  EXPECT_EQ(document["live_bytes_by_domain"].value("mmap", 0), 0);
  EXPECT_EQ(document["live_bytes_by_domain"].value("brk", 0), 0);
}

TEST(HeapLeaksAreExact, InlinedFunctionIsAFrameOfItsOwn) {
  PatternRun run = run_pattern("inlined");
  nlohmann::json site = site_at(run.dump, "make_inlined_block");
  EXPECT_EQ(site["live_bytes"], 9 * 777);
  EXPECT_EQ(site["frames"][0]["inlined"], true);
  EXPECT_NE(site["frames"][0]["file"].get<std::string>().find("alloc_patterns.cc"), std::string::npos);
  EXPECT_EQ(site["frames"][1]["function"], "keep_inlined_blocks");
  EXPECT_EQ(site["frames"][1]["inlined"], false);
  EXPECT_GT(site["frames"][1]["line"].get<int>(), site["frames"][0]["line"].get<int>());  // the call site
}

// clang writes no .debug_aranges unless asked (-gdwarf-aranges), and libdw finds a compilation
// unit by address through them: the same program without them is named by the same files, lines
// and inlined calls.
TEST(HeapLeaksAreExact, FramesHaveTheirLinesWithoutTheAddressRangesClangLeavesOut) {
  std::string program = scratch_dir() + "/alloc_patterns_without_aranges";
  Outcome copied = run_program({"objcopy", "--remove-section=.debug_aranges", fixture("alloc_patterns"), program});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  Outcome sections = run_program({"readelf", "-S", program});
  ASSERT_EQ(sections.out.find(".debug_aranges"), std::string::npos);
  std::string file = scratch_dir() + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--", program, "inlined"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  nlohmann::json stripped = site_at(dump(file), "make_inlined_block");
  nlohmann::json whole = site_at(run_pattern("inlined").dump, "make_inlined_block");
  ASSERT_FALSE(stripped["frames"][0]["line"].is_null()) << stripped.dump();
  for (size_t i = 0; i < 3; ++i) {
    for (const char* field : {"function", "file", "line", "inlined"}) {
      EXPECT_EQ(stripped["frames"][i][field], whole["frames"][i][field]) << i << " " << field;
    }
  }
}

TEST(HeapLeaksAreExact, FramePointerUnwindingGivesTheSameFigures) {
  PatternRun run = run_pattern("malloc", {{"LEAKSCOPE_OPTIONS", "unwind=fp"}});
  nlohmann::json site = site_at(run.dump, "leak_with_malloc");
  EXPECT_EQ(site["live_bytes"], 100 * 1000);
  EXPECT_EQ(site["live_blocks"], 100);
  EXPECT_EQ(site["frames"][1]["function"], "main");
}

// A start-up on one thread is recorded through the writer's queue (docs/RUNTIME.md), the first
// worker thread applying what is queued before it records anything: the same figures as any.
TEST(HeapLeaksAreExact, AStartUpOnOneThreadAndThePoolAfterItAreExactBlockForBlock) {
  std::string file = scratch_dir() + "/run.lsc";
  Outcome outcome = leakscope({"run", "-o", file, "--", fixture("one_thread_start_up")});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.out, "served\n");
  nlohmann::json document = dump(file, {"--at", "end"});
  expect_site(document, "fill_table", 20000 * 40, 20000);
  EXPECT_TRUE(sites_at(document, "parse_configuration").empty()) << "freed tokens reported live";
  expect_site(document, "grow_buffer", 128 * 1024, 1);
  expect_site(document, "load_weights", 8 << 20, 8);
  expect_site(document, "log_request", 300 * 100, 300);
  EXPECT_TRUE(sites_at(document, "make_batch").empty()) << "the batch the workers freed reported live";
  nlohmann::json kept = site_at(document, "worker_keep");
  EXPECT_EQ(kept["live_bytes"], 4 * 250 * 64);
  EXPECT_EQ(kept["live_blocks"], 4 * 250);
  EXPECT_EQ(kept["threads"].size(), 4u);
}

TEST(MappedMemoryIsTracked, PartialMunmapSplitsAndTrimsMappings) {
  PatternRun run = run_pattern("mmap");
  const int64_t page = 4096;
  // Two mmap calls, two sites: 8 mappings with a 2-page hole (8 pages, 2 blocks each), and 3
  // mappings trimmed to 4 pages (sites come largest first).
  std::vector<nlohmann::json> partly = sites_at(run.dump, "map_and_unmap_partly");
  ASSERT_EQ(partly.size(), 2u);
  EXPECT_EQ(partly[0]["live_bytes"], 8 * 8 * page);
  EXPECT_EQ(partly[0]["live_blocks"], 8 * 2);
  EXPECT_EQ(partly[1]["live_bytes"], 3 * 4 * page);
  EXPECT_EQ(partly[1]["live_blocks"], 3);
  EXPECT_EQ(partly[0]["domain"], "mmap");
  expect_site(run.dump, "grow_with_mremap", 2 * 16 * page, 2, "mmap");
  EXPECT_TRUE(sites_at(run.dump, "map_and_unmap_whole").empty());
  EXPECT_NE(run.stdout_text.find("mapped_delta=442368"), std::string::npos) << run.stdout_text;
}

TEST(MappedMemoryIsTracked, SbrkGrowthAndShrinkAreTheBrkDomain) {
  PatternRun run = run_pattern("brk");
  expect_site(run.dump, "grow_with_sbrk", 4 * 8192 - 4096, 4, "brk");
}

}  // namespace
}  // namespace leakscope::testing
