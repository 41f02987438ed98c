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

uint32_t crc32c_bytewise(uint32_t crc, const unsigned char* bytes, size_t size) {
  for (size_t i = 0; i < size; ++i) crc = kTable.entries[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

// SSE4.2 has an instruction for exactly this polynomial: 8 bytes per step instead of 1.
__attribute__((target("sse4.2"))) uint32_t crc32c_hardware(uint32_t crc, const unsigned char* bytes, size_t size) {
  uint64_t wide = crc;
  for (; size >= 8; size -= 8, bytes += 8) {
    uint64_t word;
    __builtin_memcpy(&word, bytes, 8);
    wide = __builtin_ia32_crc32di(wide, word);
  }
  crc = static_cast<uint32_t>(wide);
  for (; size > 0; --size, ++bytes) crc = __builtin_ia32_crc32qi(crc, *bytes);
  return crc;
}

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) {
  // Resolved once; __builtin_cpu_supports only reads what the CPU reported at start.
  static const bool hardware = [] {
    __builtin_cpu_init();  // safe to call early, before libgcc's own constructor ran
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  const auto* bytes = static_cast<const unsigned char*>(data);
  crc = ~crc;
  crc = hardware ? crc32c_hardware(crc, bytes, size) : crc32c_bytewise(crc, bytes, size);
  return ~crc;
}

}  // namespace leakscope::internal
