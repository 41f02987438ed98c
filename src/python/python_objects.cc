#include "python/python_objects.h"

namespace leakscope::internal {
namespace {

// PyASCIIObject.state: kind (bytes per character) in bits 2-4, compact bit 5, ascii bit 6.
constexpr size_t kUnicodeLength = 16;
constexpr size_t kUnicodeState = 32;
constexpr uint32_t kKindShift = 2;
constexpr uint32_t kKindMask = 7;
constexpr uint32_t kCompact = 1u << 5;
constexpr uint32_t kAscii = 1u << 6;

// put_utf8() appends code point `c` to out[*length], if it fits whole.
bool put_utf8(uint32_t c, char* out, size_t capacity, size_t* length) {
  char bytes[4];
  size_t count;
  if (c < 0x80) {
    bytes[0] = static_cast<char>(c);
    count = 1;
  } else if (c < 0x800) {
    bytes[0] = static_cast<char>(0xc0 | c >> 6);
    bytes[1] = static_cast<char>(0x80 | (c & 0x3f));
    count = 2;
  } else if (c < 0x10000) {
    bytes[0] = static_cast<char>(0xe0 | c >> 12);
    bytes[1] = static_cast<char>(0x80 | (c >> 6 & 0x3f));
    bytes[2] = static_cast<char>(0x80 | (c & 0x3f));
    count = 3;
  } else {
    bytes[0] = static_cast<char>(0xf0 | c >> 18);
    bytes[1] = static_cast<char>(0x80 | (c >> 12 & 0x3f));
    bytes[2] = static_cast<char>(0x80 | (c >> 6 & 0x3f));
    bytes[3] = static_cast<char>(0x80 | (c & 0x3f));
    count = 4;
  }
  if (*length + count > capacity) return false;
  memcpy(out + *length, bytes, count);
  *length += count;
  return true;
}

}  // namespace

size_t python_text(const PythonLayout& layout, const void* str_type, uintptr_t object, char* out, size_t capacity) {
  if (!has_type(object, str_type)) return 0;
  uint32_t state = read_field<uint32_t>(object, kUnicodeState);
  if ((state & kCompact) == 0) return 0;
  int64_t characters = read_field<int64_t>(object, kUnicodeLength);
  if (characters <= 0) return 0;
  if ((state & kAscii) != 0) {
    size_t length = static_cast<size_t>(characters) < capacity ? static_cast<size_t>(characters) : capacity;
    memcpy(out, reinterpret_cast<const void*>(object + layout.ascii_data), length);
    return length;
  }
  // Non-ASCII: the UTF-8 form may not exist yet (making it allocates), so encode the characters.
  uint32_t kind = state >> kKindShift & kKindMask;
  uintptr_t data = object + layout.compact_data;
  size_t length = 0;
  for (int64_t i = 0; i < characters; ++i) {
    uint32_t c;
    if (kind == 1) {
      c = read_field<uint8_t>(data, static_cast<size_t>(i));
    } else if (kind == 2) {
      c = read_field<uint16_t>(data, static_cast<size_t>(i) * 2);
    } else if (kind == 4) {
      c = read_field<uint32_t>(data, static_cast<size_t>(i) * 4);
    } else {
      return length;
    }
    if (!put_utf8(c, out, capacity, &length)) break;
  }
  return length;
}

}  // namespace leakscope::internal
