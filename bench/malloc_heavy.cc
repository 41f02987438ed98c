// A deterministic, malloc-heavy multi-threaded workload for overhead comparisons.
//   malloc_heavy [--threads N] [--ops N] [--small]
// Each thread runs N operations over a bounded live set (4096 slots): mostly malloc/free of mixed
// sizes (16 B..64 KiB, log-spread; 16..256 B with --small), with calloc, realloc and aligned
// allocations mixed in, from call stacks of varying depth (2..24 frames). Prints the elapsed time.
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr int kSlots = 4096;

struct Random {
  uint64_t state;
  uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

size_t pick_size(Random& random, bool small) {
  if (small) return 16 + random.next() % 241;
  int shift = 4 + static_cast<int>(random.next() % 13);  // 16 B .. 64 KiB
  size_t base = size_t{1} << shift;
  return base + random.next() % base;
}

__attribute__((noinline)) void* allocate(Random& random, bool small) {
  size_t size = pick_size(random, small);
  switch (random.next() % 16) {
    case 0: return calloc(1, size);
    case 1: {
      void* block = nullptr;
      return posix_memalign(&block, 64, size) == 0 ? block : nullptr;
    }
    case 2: return aligned_alloc(32, (size + 31) & ~size_t{31});
    default: return malloc(size);
  }
}

// Recurses to vary the stack depth, so stacks are deep, shallow and many.
__attribute__((noinline)) void* allocate_at_depth(Random& random, bool small, int depth) {
  if (depth <= 0) return allocate(random, small);
  void* block = allocate_at_depth(random, small, depth - 1);
  asm volatile("" ::: "memory");  // keep the frame
  return block;
}

void worker(int index, long operations, bool small) {
  Random random{0x9e3779b97f4a7c15ull * (index + 1)};
  std::vector<void*> slots(kSlots, nullptr);
  for (long op = 0; op < operations; ++op) {
    void*& slot = slots[random.next() % kSlots];
    if (slot != nullptr && random.next() % 8 == 0) {
      slot = realloc(slot, pick_size(random, small));
    } else {
      free(slot);
      slot = allocate_at_depth(random, small, static_cast<int>(random.next() % 23));
      if (slot != nullptr) static_cast<char*>(slot)[0] = 1;
    }
  }
  for (void* block : slots) free(block);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  long operations = 1000000;
  bool small = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--ops") == 0 && i + 1 < argc) operations = std::atol(argv[++i]);
    else if (std::strcmp(argv[i], "--small") == 0) small = true;
    else {
      std::fprintf(stderr, "usage: malloc_heavy [--threads N] [--ops N] [--small]\n");
      return 2;
    }
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t, operations / threads, small);
  for (auto& thread : pool) thread.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("threads=%d ops=%ld seconds=%.3f\n", threads, operations, seconds);
  return 0;
}
