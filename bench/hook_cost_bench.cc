// Cost of each hooked call, for running once plain and once under the preload:
//   hook_cost_bench --benchmark_format=json
// bench/compare_tools.py does both and reports the ratio per call.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <vector>

namespace {

void malloc_free(benchmark::State& state) {
  size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* block = malloc(size);
    benchmark::DoNotOptimize(block);
    free(block);
  }
}
BENCHMARK(malloc_free)->Arg(16)->Arg(256)->Arg(4096)->Arg(65536);

void new_delete(benchmark::State& state) {
  for (auto _ : state) {
    auto* block = new char[64];
    benchmark::DoNotOptimize(block);
    delete[] block;
  }
}
BENCHMARK(new_delete);

void calloc_free(benchmark::State& state) {
  for (auto _ : state) {
    void* block = calloc(8, 32);
    benchmark::DoNotOptimize(block);
    free(block);
  }
}
BENCHMARK(calloc_free);

void realloc_grow(benchmark::State& state) {
  for (auto _ : state) {
    void* block = malloc(32);
    block = realloc(block, 256);
    benchmark::DoNotOptimize(block);
    free(block);
  }
}
BENCHMARK(realloc_grow);

void posix_memalign_free(benchmark::State& state) {
  for (auto _ : state) {
    void* block = nullptr;
    benchmark::DoNotOptimize(posix_memalign(&block, 64, 128));
    free(block);
  }
}
BENCHMARK(posix_memalign_free);

void mmap_munmap(benchmark::State& state) {
  for (auto _ : state) {
    void* region = mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    benchmark::DoNotOptimize(region);
    munmap(region, 65536);
  }
}
BENCHMARK(mmap_munmap);

// A heap of half a million live blocks, as a service or an interpreter holds, turned over one
// block at a time: each call's record then lies in a table far larger than the caches. Python
// frees mostly what it allocated last (`lifo`); a cache frees in no order (`random`).
void churn_among_live_blocks(benchmark::State& state) {
  constexpr size_t kLive = 500000;
  bool lifo = state.range(0) == 0;
  std::vector<void*> blocks(kLive);
  for (size_t i = 0; i < kLive; ++i) blocks[i] = malloc(16 + i * 37 % 241);
  uint64_t random = 0x2545f4914f6cdd1dull;
  size_t recent = kLive - 1;
  for (auto _ : state) {
    random ^= random << 13;
    random ^= random >> 7;
    random ^= random << 17;
    size_t index = lifo ? (recent + random % 8) % kLive : random % kLive;
    free(blocks[index]);
    blocks[index] = malloc(16 + random % 241);
    benchmark::DoNotOptimize(blocks[index]);
    if (lifo && random % 64 == 0) recent = random % kLive;  // the interpreter moves on
  }
  for (void* block : blocks) free(block);
}
BENCHMARK(churn_among_live_blocks)->Arg(0)->Arg(1)->ArgName("random");

}  // namespace

BENCHMARK_MAIN();
