// File: checksum.h
//
// CRC-32C (Castagnoli), the checksum of every .lsc frame. Table-driven; thread-safe,
// allocation-free, async-signal-safe.
#ifndef LEAKSCOPE_CORE_CHECKSUM_H_
#define LEAKSCOPE_CORE_CHECKSUM_H_

#include <stddef.h>
#include <stdint.h>

namespace leakscope::internal {

// crc32c_extend() continues a CRC over more bytes; start with crc = 0.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_CHECKSUM_H_
