#include "report/text_layout.h"

#include <fmt/format.h>

#include <cctype>
#include <string>

namespace leakscope::report {

std::string one_line(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out;
}

size_t text_columns(const std::string& text) {
  size_t count = 0;
  for (unsigned char c : text) count += (c & 0xc0) != 0x80;
  return count;
}

namespace {

// is_amount() is true for a word that is a number ("250.00", "+2.66", "3").
bool is_amount(const std::string& text, size_t begin, size_t end) {
  if (begin < end && (text[begin] == '+' || text[begin] == '-')) ++begin;
  bool digit = false;
  for (size_t i = begin; i < end; ++i) {
    if (text[i] >= '0' && text[i] <= '9') {
      digit = true;
    } else if (text[i] != '.') {
      return false;
    }
  }
  return digit;
}

// starts_with_unit() is true when the word at `begin` is a size's unit ("MiB", "B/min", "KiB)").
bool starts_with_unit(const std::string& text, size_t begin) {
  for (const char* unit : {"B", "KiB", "MiB", "GiB", "TiB"}) {
    size_t length = std::char_traits<char>::length(unit);
    if (text.compare(begin, length, unit) != 0) continue;
    char after = begin + length < text.size() ? text[begin + length] : ' ';
    if (!std::isalnum(static_cast<unsigned char>(after))) return true;
  }
  return false;
}

}  // namespace

std::string wrap(const std::string& text, const std::string& indent, const std::string& first_indent) {
  std::string out, line = first_indent, line_indent = first_indent;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    // A size stays on one line with its unit: "250.00 MiB", never "250.00" above "MiB".
    if (end < text.size() && is_amount(text, start, end) && starts_with_unit(text, end + 1)) {
      end = text.find(' ', end + 1);
      if (end == std::string::npos) end = text.size();
    }
    std::string word = text.substr(start, end - start);
    if (line.size() > line_indent.size() && text_columns(line) + 1 + text_columns(word) > kWidth) {
      out += line + "\n";
      line = line_indent = indent;
    }
    if (line.size() > line_indent.size()) line += ' ';
    line += word;
    start = end + 1;
  }
  if (line.size() > line_indent.size()) out += line + "\n";
  return out;
}

}  // namespace leakscope::report
