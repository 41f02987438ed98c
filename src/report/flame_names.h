// File: flame_names.h
//
// Frames as flame graphs name them, interned: the folded and HTML exports add live bytes up by
// stacks of these names, so that a process of hundreds of thousands of sites costs a few ids a
// frame there, not a string a stack.
#ifndef LEAKSCOPE_REPORT_FLAME_NAMES_H_
#define LEAKSCOPE_REPORT_FLAME_NAMES_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/symbolizer.h"

namespace leakscope::report {

// flame_frame_name() is what a flame graph shows for a frame: the function without its parameters
// (a Python frame with its file and line, as py-spy names them), with no ';' or line break.
std::string flame_frame_name(const SymbolizedFrame& frame);

class FlameNames {
 public:
  // stack() is `frames` (innermost first, as the symbolizer gives them) as name ids, outermost
  // first.
  void stack(const std::vector<const SymbolizedFrame*>& frames, std::vector<uint32_t>* names);

  const std::string& name(uint32_t id) const { return names_[id]; }

  // text_less() orders two stacks of ids as the text of their folded lines orders them, the names
  // joined by ';' (so "a;b" comes after "a (x);c").
  bool text_less(const uint32_t* a, size_t a_size, const uint32_t* b, size_t b_size) const;

 private:
  uint32_t intern(std::string name);

  std::unordered_map<const SymbolizedFrame*, uint32_t> ids_by_frame_;  // the symbolizer's frames never move
  std::unordered_map<std::string, uint32_t> ids_by_name_;
  std::vector<std::string> names_;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_FLAME_NAMES_H_
