#include "report/json_writer.h"

#include <map>

#include "report/json_text.h"

namespace leakscope::report {
namespace {

std::string indent(size_t depth) { return std::string(2 * depth, ' '); }

void put(std::FILE* out, const std::string& text) { std::fwrite(text.data(), 1, text.size(), out); }

}  // namespace

void JsonItems::write_object(std::FILE* out, size_t depth, const nlohmann::json& members, const JsonArrays& arrays) {
  // The members in the order a document keeps its keys in, the arrays among them: each key's
  // value, or the function that makes its items.
  std::map<std::string, std::pair<const nlohmann::json*, const std::function<void(JsonItems&)>*>> keys;
  for (const auto& [key, value] : members.items()) keys[key].first = &value;
  for (const auto& [key, make] : arrays) keys[key].second = &make;
  if (keys.empty()) {
    put(out, "{}");
    return;
  }
  bool first = true;
  for (const auto& [key, member] : keys) {
    put(out, (first ? "{\n" : ",\n") + indent(depth + 1) + json_text(nlohmann::json(key)) + ": ");
    first = false;
    if (member.second == nullptr) {
      put(out, indented(json_text(*member.first), 2 * (depth + 1)));
      continue;
    }
    JsonItems items(out, depth + 1);
    (*member.second)(items);
    items.end();
  }
  put(out, "\n" + indent(depth) + "}");
}

std::string indented(const std::string& text, size_t spaces) {
  std::string result;
  result.reserve(text.size());
  for (char c : text) {
    result += c;
    if (c == '\n') result.append(spaces, ' ');
  }
  return result;
}

void JsonItems::next() {
  put(out_, (empty_ ? "[\n" : ",\n") + indent(depth_ + 1));
  empty_ = false;
}

void JsonItems::end() { put(out_, empty_ ? "[]" : "\n" + indent(depth_) + "]"); }

void JsonItems::item(const nlohmann::json& value) {
  if (array_ != nullptr) {
    array_->push_back(value);
    return;
  }
  next();
  put(out_, indented(json_text(value), 2 * (depth_ + 1)));
}

void JsonItems::object(const nlohmann::json& members, const JsonArrays& arrays) {
  if (array_ != nullptr) {
    array_->push_back(json_of(members, arrays));
    return;
  }
  next();
  write_object(out_, depth_ + 1, members, arrays);
}

void write_json(std::FILE* out, const nlohmann::json& members, const JsonArrays& arrays) {
  JsonItems::write_object(out, 0, members, arrays);
}

nlohmann::json json_of(const nlohmann::json& members, const JsonArrays& arrays) {
  nlohmann::json object = members.is_null() ? nlohmann::json::object() : members;
  for (const auto& [key, make] : arrays) {
    nlohmann::json array = nlohmann::json::array();
    JsonItems items(&array);
    make(items);
    object[key] = std::move(array);
  }
  return object;
}

}  // namespace leakscope::report
