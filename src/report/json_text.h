// File: json_text.h
//
// json_text(): a JSON document as text. Strings in a stream are whatever the process had (paths,
// thread names cut by the kernel inside a UTF-8 character, argv): bytes that are not UTF-8 are
// written as U+FFFD instead of failing the whole document.
#ifndef LEAKSCOPE_REPORT_JSON_TEXT_H_
#define LEAKSCOPE_REPORT_JSON_TEXT_H_

#include <string>

#include <nlohmann/json.hpp>

namespace leakscope::report {

inline std::string json_text(const nlohmann::json& document, int indent = 2) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_JSON_TEXT_H_
