// Cost of each hooked call, for running once plain and once under the preload:
//   hook_cost_bench --benchmark_format=json
// bench/compare_tools.py does both and reports the ratio per call.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/mman.h>

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

}  // namespace

BENCHMARK_MAIN();
