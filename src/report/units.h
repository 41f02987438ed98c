// File: units.h
//
// Human-readable quantities for text output: 1536 -> "1.50 KiB", 3.2e9 ns -> "3.2 s".
#ifndef LEAKSCOPE_REPORT_UNITS_H_
#define LEAKSCOPE_REPORT_UNITS_H_

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace leakscope::report {

inline std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes < 0 ? -bytes : bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  const char* sign = bytes < 0 ? "-" : "";
  if (unit == 0) return fmt::format("{}{} B", sign, static_cast<int64_t>(value));
  return fmt::format("{}{:.2f} {}", sign, value, kUnits[unit]);
}

// format_exact_bytes() writes an exact figure (a leak check's) with thousands separators:
// 1337 -> "1,337 B".
inline std::string format_exact_bytes(uint64_t bytes) {
  std::string digits = std::to_string(bytes);
  std::string text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text + " B";
}

inline std::string format_seconds(uint64_t nanoseconds) {
  return fmt::format("{:.1f} s", static_cast<double>(nanoseconds) / 1e9);
}

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_UNITS_H_
