// A heap for measuring a leak check: COUNT blocks of SIZE bytes, each holding POINTERS pointers to
// random other blocks; a quarter are kept by a global table, the rest only through each other (or
// lost). Returns from main with everything live, so that the teardown mark's check scans it all.
//   leak_check_heap COUNT SIZE POINTERS
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

void** g_kept;  // the rooted quarter

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: leak_check_heap COUNT SIZE POINTERS\n");
    return 2;
  }
  size_t count = std::strtoul(argv[1], nullptr, 10);
  size_t size = std::strtoul(argv[2], nullptr, 10);
  size_t pointers = std::strtoul(argv[3], nullptr, 10);
  if (size < (pointers + 1) * sizeof(void*)) {
    std::fprintf(stderr, "SIZE must hold POINTERS + 1 pointers\n");
    return 2;
  }
  void** blocks = static_cast<void**>(std::malloc(count * sizeof(void*)));
  for (size_t i = 0; i < count; ++i) {
    blocks[i] = std::malloc(size);
    std::memset(blocks[i], 0, size);
  }
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < count; ++i) {
    void** words = static_cast<void**>(blocks[i]);
    for (size_t p = 0; p < pointers; ++p) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      words[1 + p] = blocks[state % count];
    }
  }
  g_kept = static_cast<void**>(std::malloc(count / 4 * sizeof(void*) + 1));
  for (size_t i = 0; i < count / 4; ++i) g_kept[i] = blocks[i * 4];
  std::free(blocks);
  std::printf("%zu blocks of %zu bytes\n", count, size);
  return 0;
}
