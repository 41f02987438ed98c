#include "core/stream_format.h"

#include <gtest/gtest.h>

#include "core/checksum.h"
#include "core/proc_stats.h"

namespace leakscope::internal {
namespace {

TEST(StreamFormat, VarintsRoundTripAtEveryLength) {
  for (uint64_t value : {0ull, 1ull, 127ull, 128ull, 300ull, 1ull << 35, ~0ull}) {
    uint8_t buffer[kMaxVarintSize];
    uint8_t* end = varint_put(buffer, value);
    const uint8_t* cursor = buffer;
    uint64_t read = 0;
    ASSERT_TRUE(varint_get(&cursor, end, &read));
    EXPECT_EQ(read, value);
    EXPECT_EQ(cursor, end);
    const uint8_t* short_cursor = buffer;
    if (end - buffer > 1) EXPECT_FALSE(varint_get(&short_cursor, end - 1, &read));
  }
}

TEST(StreamFormat, PaddedVarintReadsAsAnOrdinaryOne) {
  uint8_t buffer[kSectionLengthSize];
  varint_put_padded(buffer, 1234567);
  const uint8_t* cursor = buffer;
  uint64_t value = 0;
  ASSERT_TRUE(varint_get(&cursor, buffer + sizeof(buffer), &value));
  EXPECT_EQ(value, 1234567u);
}

TEST(StreamFormat, ZigzagKeepsSmallMagnitudesSmall) {
  EXPECT_EQ(zigzag_encode(0), 0u);
  EXPECT_EQ(zigzag_encode(-1), 1u);
  EXPECT_EQ(zigzag_encode(1), 2u);
  for (int64_t value : std::initializer_list<int64_t>{-5000000000ll, -3ll, 0ll, 7ll, INT64_MAX, INT64_MIN}) EXPECT_EQ(zigzag_decode(zigzag_encode(value)), value);
}

TEST(StreamFormat, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c_extend(0, "123456789", 9), 0xe3069283u);
  uint32_t split = crc32c_extend(crc32c_extend(0, "12345", 5), "6789", 4);
  EXPECT_EQ(split, 0xe3069283u);
}

TEST(ProcStats, FieldsAreReadInBytes) {
  const char* status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t    1024 kB\nRssAnon:\t 512 kB\n";
  EXPECT_EQ(proc_stats_field_bytes(status, "VmRSS"), 1024u * 1024u);
  EXPECT_EQ(proc_stats_field_bytes(status, "VmHWM"), 2048u * 1024u);
  EXPECT_EQ(proc_stats_field_bytes(status, "Rss"), 0u);  // only whole names match
  ProcStats stats;
  proc_stats_read(&stats, true);
  EXPECT_GT(stats.rss_bytes, 0u);
  EXPECT_GT(stats.pss_bytes, 0u);
  EXPECT_GE(stats.hwm_bytes, stats.rss_bytes);
}

}  // namespace
}  // namespace leakscope::internal
