#include "report/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace leakscope::report {

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

  const char* symbol_at(uint64_t address);
  ~ModuleDebug() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

namespace {

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
  return qualified_name(&declaration, plain);
}

// Inlined calls around `address`: outer frames with the call site of each inlined function.
struct InlineChain {
  std::vector<std::string> names;   // innermost first: the inlined functions, then their host
  std::vector<std::string> files;   // call site of names[i] in names[i + 1]
  std::vector<int> lines;
};

InlineChain inline_chain(Dwfl_Module* module, Dwarf_Addr address) {
  InlineChain chain;
  Dwarf_Addr bias = 0;
  Dwarf_Die* unit = dwfl_module_addrdie(module, address, &bias);
  if (unit == nullptr) return chain;
  Dwarf_Die* scopes = nullptr;
  int count = dwarf_getscopes(unit, address - bias, &scopes);
  if (count <= 0) return chain;
  // dwarf_getscopes() stops at the innermost inlined instance; the DIEs that contain that
  // instance (further inlined calls, then the host function) come from dwarf_getscopes_die().
  Dwarf_Die* innermost = nullptr;
  for (int i = 0; i < count && innermost == nullptr; ++i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) innermost = &scopes[i];
  }
  Dwarf_Die* containing = nullptr;
  int depth = innermost != nullptr ? dwarf_getscopes_die(innermost, &containing) : 0;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  dwarf_getsrcfiles(unit, &files, &file_count);
  for (int i = 0; i < depth; ++i) {
    int tag = dwarf_tag(&containing[i]);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
    chain.names.push_back(die_name(&containing[i]));
    if (tag == DW_TAG_subprogram) break;
    Dwarf_Attribute attribute;
    Dwarf_Word file = 0, line = 0;
    const char* file_name = nullptr;
    if (dwarf_formudata(dwarf_attr(&containing[i], DW_AT_call_file, &attribute), &file) == 0 && files != nullptr) {
      file_name = dwarf_filesrc(files, file, nullptr, nullptr);
    }
    dwarf_formudata(dwarf_attr(&containing[i], DW_AT_call_line, &attribute), &line);
    chain.files.push_back(file_name != nullptr ? file_name : "");
    chain.lines.push_back(static_cast<int>(line));
  }
  free(containing);
  free(scopes);
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

Symbolizer::Symbolizer(const RunState& state) : state_(state), debug_(state.modules().size()) {}

Symbolizer::~Symbolizer() = default;

const Module* Symbolizer::module_for(uint64_t address, uint32_t epoch) const {
  const Module* fallback = nullptr;
  for (const Module& module : state_.modules()) {
    if (!module.contains(address)) continue;
    bool alive = module.load_epoch <= epoch && (!module.unloaded || module.unload_epoch >= epoch);
    if (alive) return &module;
    fallback = &module;  // the latest one loaded there
  }
  return fallback;
}

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

const std::vector<SymbolizedFrame>& Symbolizer::symbolize(uint64_t address, uint32_t epoch) {
  const Module* module = module_for(address, epoch);
  uint64_t key = address ^ (static_cast<uint64_t>(module != nullptr ? module->id + 1 : 0) << 52);
  if (auto found = frames_.find(key); found != frames_.end()) return found->second;
  std::vector<SymbolizedFrame>& frames = frames_[key];
  SymbolizedFrame frame;
  frame.address = address;
  if (address == internal::kSmallSignalStackFrame) {
    frame.function = "[no stack: allocated on a signal stack too small to unwind]";
    frames.push_back(frame);
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
  bool in_unit = dwfl_module_addrdie(debug.module, lookup, &unit_bias) != nullptr;
  if (Dwfl_Line* line = in_unit ? dwfl_module_getsrc(debug.module, lookup) : nullptr) {
    int number = 0;
    const char* file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr);
    if (file != nullptr) frame.file = file;
    frame.line = number;
  }
  InlineChain chain = inline_chain(debug.module, lookup);
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

std::vector<SymbolizedFrame> Symbolizer::stack(uint32_t id) {
  std::vector<SymbolizedFrame> frames;
  if (id < state_.stacks().size()) {
    const Stack& stack = state_.stacks()[id];
    for (uint64_t address : stack.frames) {
      // leakscope's own frames (the main it hands __libc_start_main) are no part of the program's.
      const Module* module = module_for(address, stack.first_epoch);
      if (module != nullptr && is_leakscope_module(module->path)) continue;
      const std::vector<SymbolizedFrame>& expanded = symbolize(address, stack.first_epoch);
      frames.insert(frames.end(), expanded.begin(), expanded.end());
    }
  }
  size_t first = 0;
  while (first + 1 < frames.size() && is_allocator_entry(frames[first].function)) ++first;
  frames.erase(frames.begin(), frames.begin() + static_cast<long>(first));
  return frames;
}

std::vector<SymbolizedFrame> Symbolizer::find_frames(uint32_t id, size_t count,
                                                     const std::function<bool(const std::string&)>& skip_module,
                                                     const std::function<bool(const SymbolizedFrame&)>& accept) {
  std::vector<SymbolizedFrame> found;
  if (id >= state_.stacks().size()) return found;
  const Stack& stack = state_.stacks()[id];
  for (uint64_t address : stack.frames) {
    const Module* module = module_for(address, stack.first_epoch);
    if (module != nullptr && (skip_module(module->path) || is_leakscope_module(module->path))) continue;
    for (const SymbolizedFrame& frame : symbolize(address, stack.first_epoch)) {
      if (!accept(frame)) continue;
      found.push_back(frame);
      if (found.size() == count) return found;
    }
  }
  return found;
}

}  // namespace leakscope::report
