// File: text_file.h
//
// A small input file the user names (a suppressions file, a baseline report), read whole, with
// the reason it cannot be when it cannot: the system's own words for a missing or forbidden file,
// and a plain one for a directory, a pipe or a device.
#ifndef LEAKSCOPE_REPORT_TEXT_FILE_H_
#define LEAKSCOPE_REPORT_TEXT_FILE_H_

#include <string>

namespace leakscope::report {

// read_text_file() reads `path` into *text and returns true, or sets *why and returns false.
bool read_text_file(const std::string& path, std::string* text, std::string* why);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_TEXT_FILE_H_
