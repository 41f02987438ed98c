// File: json_writer.h
//
// Writes a JSON object exactly as json_text() formats the whole document (keys in order, indent
// 2), while the members that are long arrays are made item by item as they are written: a report
// that lists every site of a process with a few hundred thousand never holds them all as one
// document. The same object can be had whole (json_of()), for callers and tests that read it.
#ifndef LEAKSCOPE_REPORT_JSON_WRITER_H_
#define LEAKSCOPE_REPORT_JSON_WRITER_H_

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace leakscope::report {

class JsonItems;

// The members of an object that are arrays made item by item: each function is called once with
// the JsonItems to give them to.
using JsonArrays = std::vector<std::pair<std::string, std::function<void(JsonItems&)>>>;

// JsonItems: takes one array's items in order, writing each as it comes or adding it to a
// document.
class JsonItems {
 public:
  // item() gives a whole item; object() an object item with arrays of its own made item by item.
  void item(const nlohmann::json& value);
  void object(const nlohmann::json& members, const JsonArrays& arrays);

 private:
  friend void write_json(std::FILE*, const nlohmann::json&, const JsonArrays&);
  friend nlohmann::json json_of(const nlohmann::json&, const JsonArrays&);
  JsonItems(std::FILE* out, size_t depth) : out_(out), depth_(depth) {}
  explicit JsonItems(nlohmann::json* array) : array_(array) {}
  // write_object() writes an object whose opening brace stands at `depth`.
  static void write_object(std::FILE* out, size_t depth, const nlohmann::json& members, const JsonArrays& arrays);
  void next();  // the separator and indent before an item, when writing
  void end();   // the array's end, when writing

  std::FILE* out_ = nullptr;
  size_t depth_ = 0;  // of the array, when writing
  bool empty_ = true;
  nlohmann::json* array_ = nullptr;  // when making a document
};

// write_json() writes the object of `members` and `arrays` to `out` (no newline after it).
void write_json(std::FILE* out, const nlohmann::json& members, const JsonArrays& arrays);

// json_of() is that object as a document.
nlohmann::json json_of(const nlohmann::json& members, const JsonArrays& arrays);

// indented() is `text` with every line after the first indented by `spaces`: a value's text as
// it stands nested that deep.
std::string indented(const std::string& text, size_t spaces);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_JSON_WRITER_H_
