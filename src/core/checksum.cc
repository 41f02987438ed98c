#include "core/checksum.h"

namespace leakscope::internal {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78;  // CRC-32C, reflected

struct Table {
  uint32_t entries[256];
  constexpr Table() : entries() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t crc = i;
      for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
      entries[i] = crc;
    }
  }
};

constexpr Table kTable;

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = kTable.entries[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace leakscope::internal
