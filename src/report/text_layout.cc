#include "report/text_layout.h"

#include <fmt/format.h>

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

std::string wrap(const std::string& text, const std::string& indent, const std::string& first_indent) {
  std::string out, line = first_indent, line_indent = first_indent;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
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
