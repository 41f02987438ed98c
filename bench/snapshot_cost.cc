// What one snapshot costs a process holding many live blocks: keeps COUNT small heap blocks (16-216
// B) from 512 call sites, then 20 times frees every 50th block, allocates it again and takes a
// snapshot through the C API, and prints the mean time a snapshot took. Under the preload only:
//   leakscope run -- snapshot_cost [COUNT]   (default 2 000 000)
#include <dlfcn.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace {

template <int Site>
__attribute__((noinline)) void* allocate_at(size_t size) {
  void* block = std::malloc(size);
  asm volatile("" : : "r"(block) : "memory");  // one call site each, not merged
  return block;
}

template <int... Sites>
constexpr auto site_table(std::integer_sequence<int, Sites...>) {
  return std::array<void* (*)(size_t), sizeof...(Sites)>{allocate_at<Sites>...};
}

constexpr auto kSites = site_table(std::make_integer_sequence<int, 512>{});

}  // namespace

int main(int argc, char** argv) {
  long count = argc > 1 ? std::atol(argv[1]) : 2'000'000;
  auto snapshot_now = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "leakscope_snapshot_now"));
  if (count <= 0 || snapshot_now == nullptr) {
    std::fprintf(stderr, "usage: leakscope run -- snapshot_cost [COUNT]\n");
    return 2;
  }
  std::vector<void*> blocks;
  blocks.reserve(static_cast<size_t>(count));
  for (long i = 0; i < count; ++i) blocks.push_back(kSites[(i * 7919) % kSites.size()](16 + (i * 37) % 200));
  constexpr int kRounds = 20;
  std::chrono::duration<double, std::milli> spent{};
  for (int round = 0; round < kRounds; ++round) {
    for (long i = round; i < count; i += 50) {
      std::free(blocks[i]);
      blocks[i] = kSites[i % kSites.size()](24);
    }
    auto start = std::chrono::steady_clock::now();
    if (snapshot_now() != 0) {
      std::fprintf(stderr, "snapshot_cost: leakscope_snapshot_now() failed\n");
      return 1;
    }
    spent += std::chrono::steady_clock::now() - start;
  }
  std::printf("%ld live blocks: a snapshot took %.1f ms (mean of %d)\n", count, spent.count() / kRounds, kRounds);
  for (void* block : blocks) std::free(block);
  return 0;
}
