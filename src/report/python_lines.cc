#include "report/python_lines.h"

#include "core/stream_format.h"

namespace leakscope::report {
namespace {

// 3.10: a range of `byte delta` bytes and its line, `line delta` from the last (-128: no line).
// Empty ranges only move the line.
int line_310(const std::string& table, int first_line, uint32_t offset) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(table.data());
  size_t size = table.size() & ~size_t{1};
  int computed = first_line;
  uint64_t end = 0;
  for (size_t i = 0; i < size; i += 2) {
    uint64_t start = end;
    end += bytes[i];
    int delta = static_cast<int8_t>(bytes[i + 1]);
    int line = -1;
    if (delta != -128) {
      computed += delta;
      line = computed;
    }
    if (start < end && offset < end) return line;
  }
  return -1;
}

// 3.11+: entries of one head byte 1cccclll (lll + 1 code units, code cccc) and their varints.
// Codes 0-9 keep the line (one column byte follows), 10-12 add code - 10 (two column bytes), 13
// adds a signed varint (no columns), 14 adds a signed varint (then end line and two columns), 15
// has no line.
class LocationReader {
 public:
  LocationReader(const uint8_t* bytes, size_t size) : at_(bytes), end_(bytes + size) {}
  bool done() const { return at_ >= end_; }
  uint8_t head() { return *at_++; }
  uint64_t varint() {
    uint64_t value = 0;
    int shift = 0;
    while (at_ < end_) {
      uint8_t byte = *at_++;
      value |= static_cast<uint64_t>(byte & 63) << shift;
      shift += 6;
      if ((byte & 64) == 0 || shift > 60) break;
    }
    return value;
  }
  int64_t signed_varint() {
    uint64_t value = varint();
    return (value & 1) != 0 ? -static_cast<int64_t>(value >> 1) : static_cast<int64_t>(value >> 1);
  }
  // skip_to_next_entry() passes over what is left of an entry: every byte before the next head.
  void skip_to_next_entry() {
    while (at_ < end_ && (*at_ & 128) == 0) ++at_;
  }

 private:
  const uint8_t* at_;
  const uint8_t* end_;
};

constexpr int64_t kMaxLine = int64_t{1} << 30;

int line_311(const std::string& table, int first_line, uint32_t offset) {
  LocationReader reader(reinterpret_cast<const uint8_t*>(table.data()), table.size());
  int64_t computed = first_line;
  uint64_t end = 0;
  while (!reader.done()) {
    uint8_t head = reader.head();
    if ((head & 128) == 0) return -1;  // not at an entry: a damaged table
    int code = head >> 3 & 15;
    uint64_t start = end;
    end += (static_cast<uint64_t>(head & 7) + 1) * 2;
    int64_t line = -1;
    if (code == 15) {
      line = -1;
    } else {
      if (code == 13 || code == 14) {
        int64_t delta = reader.signed_varint();
        if (delta > kMaxLine || delta < -kMaxLine) return -1;  // no source has such lines: damaged
        computed += delta;
      } else if (code >= 10) {
        computed += code - 10;
      }
      if (computed > kMaxLine || computed < -kMaxLine) return -1;
      line = computed;
    }
    reader.skip_to_next_entry();
    if (offset >= start && offset < end) return static_cast<int>(line);
  }
  return -1;
}

}  // namespace

int python_line(uint32_t format, const std::string& table, int first_line, uint32_t byte_offset) {
  if (format == internal::kLineTablePython310) return line_310(table, first_line, byte_offset);
  if (format == internal::kLineTablePython311) return line_311(table, first_line, byte_offset);
  return -1;
}

}  // namespace leakscope::report
