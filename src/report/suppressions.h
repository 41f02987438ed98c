// File: suppressions.h
//
// What a leak gate leaves out: the runtime's own residue, which every program has (built in), and
// the rules of a suppressions file (a CUDA driver, the interpreter, a known third-party leak).
// Both match symbolized frames, never addresses, so one file serves every run of a program.
// docs/cli.md gives the file format.
#ifndef LEAKSCOPE_REPORT_SUPPRESSIONS_H_
#define LEAKSCOPE_REPORT_SUPPRESSIONS_H_

#include <stdexcept>
#include <string>
#include <vector>

#include "report/symbolizer.h"

namespace leakscope::report {

// A suppressions file that cannot be read or has a line that is not a rule.
class SuppressionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One rule: a glob (fnmatch) over one field of a frame; `kAny` (LeakSanitizer's `leak:`) matches
// the function, the source file or the module.
struct SuppressionRule {
  enum class Field { kFunction, kFile, kModule, kAny };
  Field field = Field::kAny;
  std::string pattern;
  std::string text;    // the rule as written, "function:*Legacy::init*"
  std::string origin;  // its file
  int line = 0;        // in its file
  mutable bool matched = false;  // by a match() since it was read
};

class Suppressions {
 public:
  Suppressions() = default;

  // parse() reads rules, one per line, `FIELD:GLOB`; blank lines and `#` comments are skipped.
  // Throws SuppressionError naming `origin` and the line.
  static Suppressions parse(const std::string& text, const std::string& origin);
  // load() parses the file at `path`; throws SuppressionError when it cannot be read.
  static Suppressions load(const std::string& path);

  // match() is the first rule that matches any frame of `frames`, or nullptr.
  const SuppressionRule* match(const std::vector<SymbolizedFrame>& frames) const;

  // append() adds the rules of `other` after these (several files, in order).
  void append(const Suppressions& other);

  // unmatched() is the rules no match() has matched: a misspelt or stale rule suppresses nothing.
  std::vector<const SuppressionRule*> unmatched() const;

  bool empty() const { return rules_.empty(); }

 private:
  std::vector<SuppressionRule> rules_;
};

// runtime_residue() says why a site with stack `frames` (innermost first) is the runtime's own
// memory rather than the program's, or returns nullptr: the dynamic loader's bookkeeping (link
// maps, each thread's TLS block) allocated inside ld.so, a stdio buffer, or what the C and C++
// runtime made for itself with no frame of any other module (libstdc++'s emergency exception
// pool of 72,704 bytes).
const char* runtime_residue(const std::vector<SymbolizedFrame>& frames);
// The residue reason of the Go runtime's own mappings, made through cgo's mmap wrapper: its heap
// arenas, goroutine stacks and their metadata. Go never unmaps them, so they only grow, however
// bounded the Go objects inside them are; those objects are Go's heap profile's to name.
extern const char* const kGoRuntimeMappings;
// The same over the symbolizer's own frames (Symbolizer::frames()), which a report reads for every
// site without copying them. Frame is SymbolizedFrame: a template only so that a braced list of
// frames means copies.
template <typename Frame>
const char* runtime_residue(const std::vector<const Frame*>& frames);

class FrameRoles;

// lost_residue() says why the lost blocks of a site with stack `frames` are the runtime's own, or
// returns nullptr: runtime_residue()'s reasons, or blocks made beneath interpreted code with no
// native frame of the program's own between (a reference CPython, torch or an installed extension
// never released). Interpreted code cannot lose a block, so such a loss is never the program's,
// though its reachable blocks at the same site (a list that grows) may be -- unless it called the C
// function itself, through ctypes or cffi (libffi), which is the program's loss.
const char* lost_residue(const std::vector<SymbolizedFrame>& frames, const FrameRoles& roles);
template <typename Frame>
const char* lost_residue(const std::vector<const Frame*>& frames, const FrameRoles& roles);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_SUPPRESSIONS_H_
