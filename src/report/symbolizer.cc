#include "report/symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <cstring>

namespace leakscope::report {

struct Symbolizer::ModuleDebug {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  std::string label;  // what frames show as their module
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

std::string demangle(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

}  // namespace

bool is_allocator_entry(const std::string& function) {
  return function.rfind("operator new", 0) == 0;
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

SymbolizedFrame Symbolizer::symbolize(uint64_t address, uint32_t epoch) {
  SymbolizedFrame frame;
  frame.address = address;
  const Module* module = module_for(address, epoch);
  if (module == nullptr) {
    frame.module = "[unknown]";
    return frame;
  }
  uint64_t key = address ^ (static_cast<uint64_t>(module->id) << 52);
  if (auto found = frames_.find(key); found != frames_.end()) return found->second;
  frame.module_offset = address - module->base;
  ModuleDebug& debug = debug_for(*module);
  frame.module = debug.label;
  if (debug.module != nullptr) {
    // A return address points after the call; the call itself is one byte before.
    Dwarf_Addr lookup = address - 1;
    GElf_Off offset = 0;
    GElf_Sym symbol;
    const char* name = dwfl_module_addrinfo(debug.module, lookup, &offset, &symbol, nullptr, nullptr, nullptr);
    if (name != nullptr) frame.function = demangle(name);
    if (Dwfl_Line* line = dwfl_module_getsrc(debug.module, lookup)) {
      int number = 0;
      const char* file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr);
      if (file != nullptr) frame.file = file;
      frame.line = number;
    }
  }
  frames_.emplace(key, frame);
  return frame;
}

const std::vector<SymbolizedFrame>& Symbolizer::stack(uint32_t id) {
  if (auto found = stacks_.find(id); found != stacks_.end()) return found->second;
  std::vector<SymbolizedFrame> frames;
  if (id < state_.stacks().size()) {
    const Stack& stack = state_.stacks()[id];
    for (uint64_t address : stack.frames) frames.push_back(symbolize(address, stack.first_epoch));
  }
  size_t first = 0;
  while (first + 1 < frames.size() && is_allocator_entry(frames[first].function)) ++first;
  frames.erase(frames.begin(), frames.begin() + static_cast<long>(first));
  return stacks_.emplace(id, std::move(frames)).first->second;
}

}  // namespace leakscope::report
