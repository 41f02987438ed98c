// File: frame_names.h
//
// Frames' names interned, so that stacks can be added up and matched by their names as sequences
// of ids: the folded and HTML exports by the names flame graphs show, `diff` by the names that
// identify a site across runs. A process of hundreds of thousands of sites then costs a few ids a
// frame, not a string a stack.
#ifndef LEAKSCOPE_REPORT_FRAME_NAMES_H_
#define LEAKSCOPE_REPORT_FRAME_NAMES_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/symbolizer.h"

namespace leakscope::report {

// flame_frame_name() is what a flame graph shows for a frame: the function without its parameters
// (a Python frame with its file and line, as py-spy names them), with no ';' or line break.
std::string flame_frame_name(const SymbolizedFrame& frame);

// signature_frame_name() is what identifies a frame across runs: its function, or its module's
// name and offset when it has none.
std::string signature_frame_name(const SymbolizedFrame& frame);

// FrameNames interns the names `name_of` gives frames: each frame is named once (the symbolizer's
// frames never move, so a frame is known by its address), each distinct name kept once.
class FrameNames {
 public:
  explicit FrameNames(std::string (*name_of)(const SymbolizedFrame&)) : name_of_(name_of) {}

  // id() is the id of `frame`'s name, from 0 in the order names are first met.
  uint32_t id(const SymbolizedFrame& frame);

  // intern() is the id of a name given as text (what a stack holds besides frames: a domain).
  uint32_t intern(std::string name);

  const std::string& name(uint32_t id) const { return *names_[id]; }

  // text_less() orders two stacks of ids as their texts, the names joined by `separator`, order
  // them (with ';', "a;b" comes after "a (x);c").
  bool text_less(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, char separator) const;

 private:
  std::string (*name_of_)(const SymbolizedFrame&);
  std::unordered_map<const SymbolizedFrame*, uint32_t> ids_by_frame_;
  std::unordered_map<std::string, uint32_t> ids_by_name_;
  std::vector<const std::string*> names_;  // the keys of ids_by_name_, which never move
};

// StackHash hashes a stack of name ids, for maps keyed by stacks.
struct StackHash {
  size_t operator()(const std::vector<uint32_t>& names) const {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (uint32_t name : names) hash = (hash ^ name) * 0x100000001b3ull;
    return static_cast<size_t>(hash);
  }
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_FRAME_NAMES_H_
