#include "report/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "core/stream_format.h"
#include "report/python_lines.h"

namespace leakscope::report {

namespace {

// Set while symbolize() may call into libdw (inside_debug_library()); read by a signal handler.
std::atomic<int> g_inside_debug_library{0};

struct InsideDebugLibrary {
  InsideDebugLibrary() { g_inside_debug_library.fetch_add(1, std::memory_order_relaxed); }
  ~InsideDebugLibrary() { g_inside_debug_library.fetch_sub(1, std::memory_order_relaxed); }
  InsideDebugLibrary(const InsideDebugLibrary&) = delete;
  InsideDebugLibrary& operator=(const InsideDebugLibrary&) = delete;
};

// The subprogram and inlined-subroutine DIEs of one compilation unit, as a tree by address.
struct ScopeTree {
  struct Node {
    Dwarf_Off die;
    int tag;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end)
    std::vector<int> children;
  };
  std::vector<Node> nodes;
  std::vector<std::pair<uint64_t, int>> roots;  // each top-level range's begin, and its node; sorted

  bool contains(const Node& node, uint64_t address) const {
    for (const auto& [begin, end] : node.ranges) {
      if (address >= begin && address < end) return true;
    }
    return false;
  }
};

}  // namespace

bool inside_debug_library() { return g_inside_debug_library.load(std::memory_order_relaxed) > 0; }

struct Symbolizer::ModuleDebug {
  struct Symbol {
    uint64_t address;
    uint64_t size;
    const char* name;  // owned by libdw, valid while dwfl lives
  };

  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  std::string label;  // what frames show as their module
  // Function symbols by address, built once: libdw's own lookup scans the whole table per address,
  // which takes minutes on a library with hundreds of thousands of symbols (libtorch).
  std::vector<Symbol> symbols;
  bool symbols_indexed = false;
  // The functions and inlined calls of each compilation unit by address, built once per unit:
  // libdw's dwarf_getscopes() walks the whole unit per address, seconds per thousand addresses in
  // a unit such as CPython's ceval.c.
  std::unordered_map<Dwarf_Off, ScopeTree> scope_trees;
  // Compilation units by address, built once, for a module whose units libdw cannot find by
  // address: it looks them up in .debug_aranges, which clang does not write by default.
  struct UnitRange {
    Dwarf_Addr begin, end;  // in the module's DWARF addresses
    Dwarf_Die* unit;        // owned by libdw
  };
  std::vector<UnitRange> unit_ranges;
  Dwarf_Addr unit_bias = 0;
  bool units_indexed = false;

  const char* symbol_at(uint64_t address);
  // unit_at() is the compilation unit holding `address`, or null; *bias is what the module's DWARF
  // addresses are moved by.
  Dwarf_Die* unit_at(Dwarf_Addr address, Dwarf_Addr* bias);
  ~ModuleDebug() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

namespace {

// startup_phase_name() names the marker frame of a start-up stack (stream_format.h), or nullptr.
const char* startup_phase_name(uint64_t address) {
  switch (address) {
    case internal::kBeforeMainFrame: return "[before main; outer frames left out (startup_depth)]";
    case internal::kLibraryLoadFrame: return "[in dlopen; frames in between left out (startup_depth)]";
    case internal::kImportFrame: return "[import; frames in between left out (startup_depth)]";
    default: return nullptr;
  }
}

const Dwfl_Callbacks kOfflineCallbacks = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    nullptr,
};

// die_name() is the demangled linkage name of a subprogram or inlined-subroutine DIE (following
// its abstract origin), or its plain name when it has none.
std::string die_name(Dwarf_Die* die);

// demangle() demangles a C++ symbol; anything else (a C function named `f` or `i`, which the
// demangler would read as the types float and int) stays as it is.
std::string demangle(const char* name) {
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

// declaring_die() follows abstract origins and out-of-line definitions to the DIE that declares
// the function, which sits inside its namespaces and classes.
Dwarf_Die declaring_die(Dwarf_Die* die) {
  Dwarf_Die current = *die;
  for (int hops = 0; hops < 4; ++hops) {
    Dwarf_Attribute attribute;
    Dwarf_Die next;
    if ((dwarf_attr(&current, DW_AT_abstract_origin, &attribute) != nullptr ||
         dwarf_attr(&current, DW_AT_specification, &attribute) != nullptr) &&
        dwarf_formref_die(&attribute, &next) != nullptr) {
      current = next;
      continue;
    }
    break;
  }
  return current;
}

// qualified_name() is `name` with the namespaces and classes that enclose `declaration`, for
// functions that have no linkage name (internal linkage, such as those in an anonymous namespace).
std::string qualified_name(Dwarf_Die* declaration, const char* name) {
  Dwarf_Die* scopes = nullptr;
  int count = dwarf_getscopes_die(declaration, &scopes);
  std::string qualified;
  for (int i = count - 1; i >= 1; --i) {  // scopes[0] is the declaration itself
    int tag = dwarf_tag(&scopes[i]);
    const char* scope_name = dwarf_diename(&scopes[i]);
    if (tag == DW_TAG_namespace) {
      qualified += scope_name != nullptr ? scope_name : "(anonymous namespace)";
      qualified += "::";
    } else if ((tag == DW_TAG_class_type || tag == DW_TAG_structure_type || tag == DW_TAG_union_type) &&
               scope_name != nullptr) {
      qualified += scope_name;
      qualified += "::";
    }
  }
  std::free(scopes);
  return qualified + name;
}

bool is_cplusplus(int language) {
  switch (language) {
    case DW_LANG_C_plus_plus:
    case DW_LANG_C_plus_plus_03:
    case DW_LANG_C_plus_plus_11:
    case DW_LANG_C_plus_plus_14:
      return true;
    default:
      return language < 0;  // not said: as before, look
  }
}

std::string die_name(Dwarf_Die* die) {
  Dwarf_Attribute attribute;
  for (int name : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (dwarf_attr_integrate(die, name, &attribute) != nullptr) {
      if (const char* linkage = dwarf_formstring(&attribute)) return demangle(linkage);
    }
  }
  const char* plain = dwarf_diename(die);
  if (plain == nullptr && dwarf_attr_integrate(die, DW_AT_name, &attribute) != nullptr) plain = dwarf_formstring(&attribute);
  if (plain == nullptr) return "";
  Dwarf_Die declaration = declaring_die(die);
  // Only C++ encloses functions in namespaces and classes; finding a DIE's enclosing scopes
  // walks its unit from the start, which in a C library with full debug info (a source-built
  // libpython) took seconds a report.
  Dwarf_Die unit;
  if (dwarf_diecu(&declaration, &unit, nullptr, nullptr) != nullptr && !is_cplusplus(dwarf_srclang(&unit))) return plain;
  return qualified_name(&declaration, plain);
}

bool is_function_scope(int tag) { return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine; }

// add_scopes() adds the function scopes among the children of `parent_die` to `tree`, under node
// `parent` (-1: top level), looking through lexical blocks, namespaces and classes.
void add_scopes(Dwarf_Die* parent_die, int parent, ScopeTree& tree, int depth) {
  if (depth > 64) return;
  Dwarf_Die child;
  if (dwarf_child(parent_die, &child) != 0) return;
  do {
    int tag = dwarf_tag(&child);
    if (is_function_scope(tag)) {
      ScopeTree::Node node{dwarf_dieoffset(&child), tag, {}, {}};
      Dwarf_Addr base = 0, begin = 0, end = 0;
      for (ptrdiff_t at = 0; (at = dwarf_ranges(&child, at, &base, &begin, &end)) > 0;) {
        if (begin < end) node.ranges.emplace_back(begin, end);
      }
      int index = static_cast<int>(tree.nodes.size());
      bool placed = !node.ranges.empty();
      if (placed) {
        tree.nodes.push_back(std::move(node));
        if (parent < 0) {
          for (const auto& range : tree.nodes[index].ranges) tree.roots.emplace_back(range.first, index);
        } else {
          tree.nodes[parent].children.push_back(index);
        }
      }
      add_scopes(&child, placed ? index : parent, tree, depth + 1);
    } else if (tag == DW_TAG_lexical_block || tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
               tag == DW_TAG_structure_type || tag == DW_TAG_union_type) {
      add_scopes(&child, parent, tree, depth + 1);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

ScopeTree build_scope_tree(Dwarf_Die* unit) {
  ScopeTree tree;
  add_scopes(unit, -1, tree, 0);
  std::sort(tree.roots.begin(), tree.roots.end());
  return tree;
}

// scope_path() is the chain of function scopes containing `address`, outermost first.
std::vector<int> scope_path(const ScopeTree& tree, uint64_t address) {
  std::vector<int> path;
  auto after = std::upper_bound(tree.roots.begin(), tree.roots.end(), std::make_pair(address, INT32_MAX));
  int node = -1;
  // Top-level functions do not overlap: the one that starts last at or before the address.
  for (auto it = after; it != tree.roots.begin() && node < 0;) {
    --it;
    if (tree.contains(tree.nodes[it->second], address)) node = it->second;
    if (after - it > 8) break;
  }
  while (node >= 0) {
    path.push_back(node);
    int next = -1;
    for (int child : tree.nodes[node].children) {
      if (tree.contains(tree.nodes[child], address)) {
        next = child;
        break;
      }
    }
    node = next;
  }
  return path;
}

// Inlined calls around `address`: outer frames with the call site of each inlined function.
struct InlineChain {
  std::vector<std::string> names;   // innermost first: the inlined functions, then their host
  std::vector<std::string> files;   // call site of names[i] in names[i + 1]
  std::vector<int> lines;
};

// inline_chain() reads the functions inlined at `address` in `unit`, whose addresses are moved by
// `bias`.
InlineChain inline_chain(Dwfl_Module* module, std::unordered_map<Dwarf_Off, ScopeTree>& trees, Dwarf_Die* unit,
                         Dwarf_Addr bias, Dwarf_Addr address) {
  InlineChain chain;
  Dwarf* dwarf = dwfl_module_getdwarf(module, &bias);
  if (dwarf == nullptr) return chain;
  auto found = trees.find(dwarf_dieoffset(unit));
  if (found == trees.end()) found = trees.emplace(dwarf_dieoffset(unit), build_scope_tree(unit)).first;
  const ScopeTree& tree = found->second;
  std::vector<int> path = scope_path(tree, address - bias);
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  dwarf_getsrcfiles(unit, &files, &file_count);
  for (size_t i = path.size(); i-- > 0;) {
    Dwarf_Die die;
    if (dwarf_offdie(dwarf, tree.nodes[path[i]].die, &die) == nullptr) break;
    chain.names.push_back(die_name(&die));
    if (tree.nodes[path[i]].tag == DW_TAG_subprogram) break;
    Dwarf_Attribute attribute;
    Dwarf_Word file = 0, line = 0;
    const char* file_name = nullptr;
    if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_file, &attribute), &file) == 0 && files != nullptr) {
      file_name = dwarf_filesrc(files, file, nullptr, nullptr);
    }
    dwarf_formudata(dwarf_attr(&die, DW_AT_call_line, &attribute), &line);
    chain.files.push_back(file_name != nullptr ? file_name : "");
    chain.lines.push_back(static_cast<int>(line));
  }
  return chain;
}

bool is_leakscope_module(const std::string& path) {
  size_t slash = path.rfind('/');
  return path.compare(slash == std::string::npos ? 0 : slash + 1, 12, "libleakscope") == 0;
}

}  // namespace

const char* Symbolizer::ModuleDebug::symbol_at(uint64_t address) {
  if (!symbols_indexed) {
    symbols_indexed = true;
    int count = dwfl_module_getsymtab(module);
    for (int i = 0; i < count; ++i) {
      GElf_Sym symbol;
      GElf_Addr value = 0;
      const char* name = dwfl_module_getsym_info(module, i, &symbol, &value, nullptr, nullptr, nullptr);
      int type = GELF_ST_TYPE(symbol.st_info);
      if (name == nullptr || name[0] == '\0' || (type != STT_FUNC && type != STT_GNU_IFUNC) || value == 0) continue;
      symbols.push_back({value, symbol.st_size, name});
    }
    std::sort(symbols.begin(), symbols.end(), [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  }
  auto after = std::upper_bound(symbols.begin(), symbols.end(), address,
                                [](uint64_t value, const Symbol& symbol) { return value < symbol.address; });
  if (after == symbols.begin()) return nullptr;
  const Symbol& candidate = *(after - 1);
  if (candidate.size != 0 && address >= candidate.address + candidate.size) return nullptr;
  return candidate.name;
}

bool is_allocator_entry(const std::string& function) {
  static const char* const kEntries[] = {"operator new", "std::__new_allocator<", "__gnu_cxx::new_allocator<",
                                         "std::allocator_traits<", "std::allocator<"};
  for (const char* entry : kEntries) {
    if (function.rfind(entry, 0) == 0) return true;
  }
  return false;
}

Symbolizer::Symbolizer(const RunState& state) : state_(&state), debug_(state.modules().size()) {}

Symbolizer::~Symbolizer() = default;

void Symbolizer::rebind(const RunState& state) {
  state_ = &state;
  frames_.clear();
  segments_modules_ = 0;
  if (debug_.size() < state.modules().size()) debug_.resize(state.modules().size());
}

void Symbolizer::index_segments() const {
  const std::vector<Module>& modules = state_->modules();
  segments_.clear();
  for (uint32_t index = 0; index < modules.size(); ++index) {
    for (const ModuleSegment& segment : modules[index].segments) {
      uint64_t begin = modules[index].base + segment.vaddr;
      if (segment.memsz > 0) segments_.push_back(SegmentEntry{begin, begin + segment.memsz, index, 0});
    }
  }
  std::sort(segments_.begin(), segments_.end(),
            [](const SegmentEntry& a, const SegmentEntry& b) { return a.begin < b.begin; });
  uint64_t max_end = 0;
  for (SegmentEntry& entry : segments_) max_end = entry.max_end = std::max(max_end, entry.end);
  segments_modules_ = modules.size();
}

// module_for() is the module loaded at `address` at `epoch`: of those ever there, the first that
// was alive then, else the latest one loaded there.
const Module* Symbolizer::module_for(uint64_t address, uint32_t epoch) const {
  if ((address & internal::kInterpretedFrameTag) != 0) return nullptr;
  const std::vector<Module>& modules = state_->modules();
  if (segments_modules_ != modules.size()) index_segments();
  auto after = std::upper_bound(segments_.begin(), segments_.end(), address,
                                [](uint64_t value, const SegmentEntry& entry) { return value < entry.begin; });
  uint32_t alive = UINT32_MAX;
  const Module* fallback = nullptr;
  // Entries before `after` begin at or below the address; none further back reaches it once the
  // largest end so far is at or below it.
  for (auto it = after; it != segments_.begin();) {
    --it;
    if (it->max_end <= address) break;
    if (address >= it->end) continue;
    const Module& module = modules[it->module];
    if (module.load_epoch <= epoch && (!module.unloaded || module.unload_epoch >= epoch)) {
      alive = std::min(alive, it->module);
    } else if (fallback == nullptr || it->module > fallback - modules.data()) {
      fallback = &module;
    }
  }
  return alive != UINT32_MAX ? &modules[alive] : fallback;
}

Dwarf_Die* Symbolizer::ModuleDebug::unit_at(Dwarf_Addr address, Dwarf_Addr* bias) {
  // The address ranges' table can name a unit that does not hold the address: a Go program's own
  // units have no entries there, and its C units' entries led every Go address to gcc_mmap.c.
  if (Dwarf_Die* unit = dwfl_module_addrdie(module, address, bias); unit != nullptr && dwarf_haspc(unit, address - *bias) > 0) {
    return unit;
  }
  if (!units_indexed) {
    units_indexed = true;
    for (Dwarf_Die* unit = nullptr; (unit = dwfl_module_nextcu(module, unit, &unit_bias)) != nullptr;) {
      Dwarf_Addr base = 0, begin = 0, end = 0;
      for (ptrdiff_t offset = 0; (offset = dwarf_ranges(unit, offset, &base, &begin, &end)) > 0;) {
        if (begin < end) unit_ranges.push_back({begin, end, unit});
      }
    }
    std::sort(unit_ranges.begin(), unit_ranges.end(),
              [](const UnitRange& a, const UnitRange& b) { return a.begin < b.begin; });
  }
  *bias = unit_bias;
  Dwarf_Addr relative = address - unit_bias;
  auto after = std::upper_bound(unit_ranges.begin(), unit_ranges.end(), relative,
                                [](Dwarf_Addr wanted, const UnitRange& range) { return wanted < range.begin; });
  // Ranges of different units do not overlap; the one starting last at or before the address is
  // the only one that can hold it.
  if (after == unit_ranges.begin() || relative >= std::prev(after)->end) return nullptr;
  return std::prev(after)->unit;
}

namespace {

// is_regular_file() tells whether `path` is a file that can be read for symbols: a stream may name
// anything as a module, and a FIFO opened for reading waits for a writer forever.
bool is_regular_file(const std::string& path) {
  int descriptor = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (descriptor < 0) return false;
  struct stat status {};
  bool regular = fstat(descriptor, &status) == 0 && S_ISREG(status.st_mode);
  close(descriptor);
  return regular;
}

}  // namespace

Symbolizer::ModuleDebug& Symbolizer::debug_for(const Module& module) {
  std::unique_ptr<ModuleDebug>& slot = debug_[module.id];
  if (slot) return *slot;
  slot = std::make_unique<ModuleDebug>();
  ModuleDebug& debug = *slot;
  debug.label = module.path;
  if (module.path.empty() || module.path[0] != '/') {
    if (module.path.empty()) debug.label = "[unknown]";
    return debug;  // the vdso and anonymous code have no file
  }
  if (!is_regular_file(module.path)) {
    debug.label = module.path + " (missing)";
    return debug;
  }
  debug.dwfl = dwfl_begin(&kOfflineCallbacks);
  if (debug.dwfl == nullptr) return debug;
  dwfl_report_begin(debug.dwfl);
  debug.module = dwfl_report_elf(debug.dwfl, module.path.c_str(), module.path.c_str(), -1, module.base, false);
  dwfl_report_end(debug.dwfl, nullptr, nullptr);
  if (debug.module == nullptr) {
    debug.label = module.path + " (missing)";
    return debug;
  }
  const unsigned char* bits = nullptr;
  GElf_Addr where = 0;
  int length = dwfl_module_build_id(debug.module, &bits, &where);
  bool matches = module.build_id.empty() ||
                 (length == static_cast<int>(module.build_id.size()) && std::memcmp(bits, module.build_id.data(), length) == 0);
  if (!matches) {
    debug.label = module.path + " (changed since the run)";
    debug.module = nullptr;
  }
  return debug;
}

SymbolizedFrame Symbolizer::interpreted_frame(uint64_t address) const {
  SymbolizedFrame frame;
  frame.address = address;
  uint32_t id = static_cast<uint32_t>((address & ~internal::kInterpretedFrameTag) >> 32);
  uint32_t offset = static_cast<uint32_t>(address);
  const std::vector<Code>& codes = state_->codes();
  if (id >= codes.size() || !codes[id].known) {
    frame.function = "[unknown Python code]";
    frame.language = "python";
    frame.module = "python";
    return frame;
  }
  const Code& code = codes[id];
  frame.function = code.name;
  frame.file = code.file;
  int line = python_line(code.table_format, code.table, code.first_line, offset);
  frame.line = line > 0 ? line : code.first_line;
  frame.language = code.language == internal::kLanguagePython ? "python" : "interpreted";
  frame.module = frame.language;
  return frame;
}

const std::vector<SymbolizedFrame>& Symbolizer::symbolize(uint64_t address, uint32_t epoch) {
  const Module* module = module_for(address, epoch);
  uint64_t key = address ^ (static_cast<uint64_t>(module != nullptr ? module->id + 1 : 0) << 52);
  if (auto found = frames_.find(key); found != frames_.end()) return found->second;
  InsideDebugLibrary inside;
  std::vector<SymbolizedFrame>& frames = frames_[key];
  SymbolizedFrame frame;
  frame.address = address;
  if (address == internal::kSmallSignalStackFrame) {
    frame.function = "[no stack: allocated on a signal stack too small to unwind]";
    frames.push_back(frame);
    return frames;
  }
  if (address == internal::kOverBudgetFrame) {
    frame.function = "[new stacks past leakscope's max_memory]";
    frames.push_back(frame);
    return frames;
  }
  if (address == internal::kFreeListFrame) {
    frame.function = "[kept on the interpreter's free lists]";
    frames.push_back(frame);
    return frames;
  }
  if (address == internal::kPythonArenaFrame) {
    frame.function = "[the interpreter's arenas for small objects]";
    frames.push_back(frame);
    return frames;
  }
  if (address == internal::kPythonFrameStackFrame) {
    frame.function = "[the interpreter's stack of frames]";
    frames.push_back(frame);
    return frames;
  }
  if (const char* phase = startup_phase_name(address)) {
    frame.function = phase;
    frames.push_back(frame);
    return frames;
  }
  if ((address & internal::kInterpretedFrameTag) != 0) {
    frames.push_back(interpreted_frame(address));
    return frames;
  }
  if (module == nullptr) {
    frame.module = "[unknown]";
    frames.push_back(frame);
    return frames;
  }
  frame.module_offset = address - module->base;
  ModuleDebug& debug = debug_for(*module);
  frame.module = debug.label;
  if (debug.module == nullptr) {
    frames.push_back(frame);
    return frames;
  }
  // A return address points after the call; the call itself is one byte before.
  Dwarf_Addr lookup = address - 1;
  if (const char* name = debug.symbol_at(lookup)) frame.function = demangle(name);
  // Only an address inside a compilation unit has a line: otherwise (crt1.o's _start, code
  // without debug info) the line table's nearest entry belongs to some other function.
  Dwarf_Addr unit_bias = 0;
  Dwarf_Die* unit = debug.unit_at(lookup, &unit_bias);
  if (unit == nullptr) {
    frames.push_back(frame);
    return frames;
  }
  if (Dwarf_Line* line = dwarf_getsrc_die(unit, lookup - unit_bias)) {
    int number = 0;
    const char* file = dwarf_linesrc(line, nullptr, nullptr);
    dwarf_lineno(line, &number);
    if (file != nullptr) frame.file = file;
    frame.line = number;
  }
  InlineChain chain = inline_chain(debug.module, debug.scope_trees, unit, unit_bias, lookup);
  if (chain.names.size() <= 1) {
    frames.push_back(frame);
    return frames;
  }
  // The innermost function sits at the address's own line; each outer one at the call site of
  // the function inlined into it. DWARF names the host function better than the nearest symbol.
  std::string file = frame.file;
  int line = frame.line;
  for (size_t i = 0; i < chain.names.size(); ++i) {
    SymbolizedFrame part = frame;
    bool outermost = i + 1 == chain.names.size();
    if (!chain.names[i].empty()) part.function = chain.names[i];
    part.file = file;
    part.line = line;
    part.inlined = !outermost;
    frames.push_back(part);
    if (i < chain.files.size()) {
      file = chain.files[i];
      line = chain.lines[i];
    }
  }
  return frames;
}

std::vector<const SymbolizedFrame*> Symbolizer::frames(uint32_t id) {
  std::vector<const SymbolizedFrame*> frames;
  if (id < state_->stacks().size()) {
    const Stack& stack = state_->stacks()[id];
    for (uint64_t address : state_->frames(stack)) {
      // leakscope's own frames (the main it hands __libc_start_main) are no part of the program's.
      const Module* module = module_for(address, stack.first_epoch);
      if (module != nullptr && is_leakscope_module(module->path)) continue;
      for (const SymbolizedFrame& frame : symbolize(address, stack.first_epoch)) frames.push_back(&frame);
    }
  }
  size_t first = 0;
  // The frames a start-up stack kept before its marker are all it has of the allocation: they stay.
  while (first + 1 < frames.size() && is_allocator_entry(frames[first]->function) &&
         !internal::is_startup_marker(frames[first + 1]->address)) {
    ++first;
  }
  frames.erase(frames.begin(), frames.begin() + static_cast<long>(first));
  return frames;
}

std::vector<SymbolizedFrame> Symbolizer::stack(uint32_t id) {
  std::vector<SymbolizedFrame> frames;
  for (const SymbolizedFrame* frame : this->frames(id)) frames.push_back(*frame);
  return frames;
}

std::vector<const SymbolizedFrame*> Symbolizer::find_frames(uint32_t id, size_t count,
                                                            const std::function<bool(const std::string&)>& skip_module,
                                                            const std::function<bool(const SymbolizedFrame&)>& accept) {
  std::vector<const SymbolizedFrame*> found;
  if (id >= state_->stacks().size()) return found;
  const Stack& stack = state_->stacks()[id];
  for (uint64_t address : state_->frames(stack)) {
    const Module* module = module_for(address, stack.first_epoch);
    if (module != nullptr && (skip_module(module->path) || is_leakscope_module(module->path))) continue;
    for (const SymbolizedFrame& frame : symbolize(address, stack.first_epoch)) {
      if (!accept(frame)) continue;
      found.push_back(&frame);
      if (found.size() == count) return found;
    }
  }
  return found;
}

void Symbolizer::visit_frames(uint32_t id, const std::function<bool(const SymbolizedFrame&)>& visit) {
  if (id >= state_->stacks().size()) return;
  const Stack& stack = state_->stacks()[id];
  for (uint64_t address : state_->frames(stack)) {
    const Module* module = module_for(address, stack.first_epoch);
    if (module != nullptr && is_leakscope_module(module->path)) continue;
    for (const SymbolizedFrame& frame : symbolize(address, stack.first_epoch)) {
      if (!visit(frame)) return;
    }
  }
}

bool Symbolizer::runs_python_function(uint32_t id, const std::string& function, const std::string& file_prefix) const {
  if (id >= state_->stacks().size()) return false;
  // Only the code's name and file: no line table is decoded for it.
  const std::vector<Code>& codes = state_->codes();
  for (uint64_t address : state_->frames(state_->stacks()[id])) {
    if ((address & internal::kInterpretedFrameTag) == 0) continue;
    uint32_t code = static_cast<uint32_t>((address & ~internal::kInterpretedFrameTag) >> 32);
    if (code >= codes.size() || !codes[code].known) continue;
    if (codes[code].name == function && codes[code].file.compare(0, file_prefix.size(), file_prefix) == 0) return true;
  }
  return false;
}

}  // namespace leakscope::report
