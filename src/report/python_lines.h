// File: python_lines.h
//
// The source line of an instruction in CPython code, from the line table the runtime copied out
// of the code object (docs/FORMAT.md, INTERPRETED_CODE): the (byte delta, line delta) pairs of
// CPython 3.10, or the location table of 3.11 and later. The same answers as the interpreter's
// own PyCode_Addr2Line.
#ifndef LEAKSCOPE_REPORT_PYTHON_LINES_H_
#define LEAKSCOPE_REPORT_PYTHON_LINES_H_

#include <cstdint>
#include <string>

namespace leakscope::report {

// python_line() is the line of the instruction at `byte_offset`, or -1 when the table gives it
// none (or is cut short); `format` is stream_format.h's kLineTablePython310 or ...311.
int python_line(uint32_t format, const std::string& table, int first_line, uint32_t byte_offset);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_PYTHON_LINES_H_
