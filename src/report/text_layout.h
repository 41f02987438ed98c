// File: text_layout.h
//
// Text for a 100-column terminal: widths counted in characters (UTF-8), not bytes, and words
// wrapped to fit.
#ifndef LEAKSCOPE_REPORT_TEXT_LAYOUT_H_
#define LEAKSCOPE_REPORT_TEXT_LAYOUT_H_

#include <cstddef>
#include <string>

namespace leakscope::report {

constexpr size_t kWidth = 100;

// text_columns() is how many characters `text` takes (UTF-8 continuation bytes not counted).
size_t text_columns(const std::string& text);

// one_line() is a name given by the program (a thread's, an NVTX range's) as one line of text can
// show it: control characters written as escapes (`\n`, `\t`, `\x1b`), so that a name cannot
// break a report's lines or colour a terminal.
std::string one_line(const std::string& name);

// wrap() breaks `text` at spaces into lines of at most kWidth columns, each ending in a newline,
// the first starting with `first_indent` and the others with `indent`. A word longer than a line
// gets a line of its own.
std::string wrap(const std::string& text, const std::string& indent, const std::string& first_indent);
inline std::string wrap(const std::string& text, const std::string& indent) { return wrap(text, indent, indent); }

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_TEXT_LAYOUT_H_
