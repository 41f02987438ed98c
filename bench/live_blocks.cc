// Keeps COUNT small heap blocks (16-256 B) live from 16 call sites, then exits: what leakscope's
// runtime costs per live block is its own memory at exit divided by COUNT.
//   live_blocks COUNT
#include <cstdio>
#include <cstdlib>
#include <vector>

template <int Site>
__attribute__((noinline)) void* allocate_at(size_t size) {
  return std::malloc(size);
}

using Allocate = void* (*)(size_t);
constexpr Allocate kSites[] = {allocate_at<0>,  allocate_at<1>,  allocate_at<2>,  allocate_at<3>,
                               allocate_at<4>,  allocate_at<5>,  allocate_at<6>,  allocate_at<7>,
                               allocate_at<8>,  allocate_at<9>,  allocate_at<10>, allocate_at<11>,
                               allocate_at<12>, allocate_at<13>, allocate_at<14>, allocate_at<15>};

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: live_blocks COUNT\n");
    return 2;
  }
  long count = std::atol(argv[1]);
  std::vector<void*> blocks;
  blocks.reserve(static_cast<size_t>(count));
  for (long i = 0; i < count; ++i) blocks.push_back(kSites[i % 16](16 + static_cast<size_t>(i * 37) % 241));
  std::printf("%zu\n", blocks.size());
  return 0;  // the blocks stay live into the final snapshot
}
