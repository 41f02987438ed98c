#include "core/internal_alloc.h"

#include <gtest/gtest.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

namespace leakscope::internal {
namespace {

bool all_zero(const void* memory, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(memory);
  for (size_t i = 0; i < size; ++i) {
    if (bytes[i] != 0) return false;
  }
  return true;
}

// A large block given back is kept mapped and handed out again, zeroed, for the same size (the
// writer's scratch arrays come and go at every snapshot), up to a bound.
TEST(InternalAlloc, ALargeBlockGivenBackIsReusedZeroedUpToABound) {
  constexpr size_t kSize = 40000;
  void* first = internal_alloc(kSize);
  ASSERT_NE(first, nullptr);
  memset(first, 0xab, kSize);
  size_t mapped = internal_mapped_bytes();
  internal_free(first, kSize);
  EXPECT_EQ(internal_mapped_bytes(), mapped) << "a kept mapping still counts as the runtime's memory";
  void* again = internal_alloc(kSize);
  EXPECT_EQ(again, first);
  EXPECT_TRUE(all_zero(again, kSize));
  EXPECT_EQ(internal_mapped_bytes(), mapped);
  internal_free(again, kSize);

  // What is kept is bounded: giving back far more than the limit unmaps the rest, so the mapped
  // total falls back to within a few MiB of where it started.
  constexpr size_t kLarge = size_t{1} << 20;
  size_t before = internal_mapped_bytes();
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) {
    void* block = internal_alloc(kLarge + static_cast<size_t>(i) * 4096);  // sizes no kept one matches
    ASSERT_NE(block, nullptr);
    blocks.push_back(block);
  }
  EXPECT_GE(internal_mapped_bytes(), before + 64 * kLarge);
  for (int i = 0; i < 64; ++i) internal_free(blocks[static_cast<size_t>(i)], kLarge + static_cast<size_t>(i) * 4096);
  EXPECT_LE(internal_mapped_bytes(), before + (size_t{8} << 20));
}

// resident_pages() counts the pages of [memory, memory + size) that are in memory now.
size_t resident_pages(void* memory, size_t size) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((size + page - 1) / page);
  if (mincore(memory, size, in_core.data()) != 0) return 0;
  size_t resident = 0;
  for (unsigned char flags : in_core) resident += flags & 1;
  return resident;
}

// A table's slots as it grows come with their pages in: probed before they are written, pages
// faulted in one at a time would each be faulted twice (read as the zero page, then written).
TEST(InternalAlloc, APopulatedBlockComesWithItsPagesInAndZeroed) {
  constexpr size_t kSize = (size_t{3} << 20) + 12345;  // no size any kept mapping has
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t pages = (kSize + page - 1) / page;
  void* plain = internal_alloc(kSize);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(resident_pages(plain, kSize), 0u) << "a plain block's pages come at first touch";
  void* populated = internal_alloc_populated(kSize);
  ASSERT_NE(populated, nullptr);
  EXPECT_EQ(resident_pages(populated, kSize), pages);
  EXPECT_TRUE(all_zero(populated, kSize));
  internal_free(plain, kSize);
  internal_free(populated, kSize);
}

}  // namespace
}  // namespace leakscope::internal
