// File: unwrapped.h
//
// unwrapped() joins the lines that leakscope's text output wrapped at 100 columns (a continuation
// starts with three spaces or more), so that a test finds a long line whole.
#ifndef LEAKSCOPE_TESTS_SUPPORT_UNWRAPPED_H_
#define LEAKSCOPE_TESTS_SUPPORT_UNWRAPPED_H_

#include <string>

namespace leakscope::testing {

inline std::string unwrapped(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 4, "\n   ") == 0) {
      while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
      out += ' ';
      continue;
    }
    out += text[i];
  }
  return out;
}

}  // namespace leakscope::testing

#endif  // LEAKSCOPE_TESTS_SUPPORT_UNWRAPPED_H_
