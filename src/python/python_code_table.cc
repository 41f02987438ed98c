#include "python/python_code_table.h"

#include "core/interpreter.h"
#include "core/intern_table.h"
#include "core/internal_alloc.h"
#include "core/stream_format.h"
#include "python/python_objects.h"

namespace leakscope::internal {
namespace {

// Longest name and file name kept, and the largest line table copied (a larger one is left out:
// its frames then show the function's first line).
constexpr size_t kMaxTextBytes = 1024;
constexpr int64_t kMaxLineTableBytes = 1 << 20;

struct PythonCode {
  PythonCode* next;
  uint64_t hash;
  uint32_t id;
  // The identity: the code object and the objects naming it, as first seen.
  uintptr_t code;
  uintptr_t filename_object;
  uintptr_t name_object;
  int32_t first_line;
  uint32_t name_length;
  uint32_t file_length;
  uint32_t table_length;
  uint32_t table_format;
  bool imports;
  const char* name;
  const char* file;
  const uint8_t* table;
};

constinit InternTable<PythonCode> g_codes;

// The file names CPython gives its frozen import machinery (3.10-3.13): _bootstrap and
// _bootstrap_external.
constexpr char kImportMachineryFile[] = "<frozen importlib._bootstrap";

// The code objects a thread met last, by address: its frame chain is read on every allocation,
// and its outer frames are the same from one allocation to the next, so most frames are found
// here without a walk of the table's shared buckets. Checked against the same identity as the
// table's entries.
struct RecentCode {
  uintptr_t code;
  uintptr_t filename_object;
  uintptr_t name_object;
  int32_t first_line;
  uint32_t id;
  bool imports;
};
constexpr uint32_t kRecentCodeSlots = 64;
__thread RecentCode t_recent_codes[kRecentCodeSlots] __attribute__((tls_model("initial-exec")));

uintptr_t name_object_of(const PythonLayout& layout, uintptr_t code) {
  return read_field<uintptr_t>(code, layout.code_qualname != 0 ? layout.code_qualname : layout.code_name);
}

// make_entry() copies out what names `code`; the texts and the table share one block.
PythonCode* make_entry(const PythonLayout& layout, const PythonTypes& types, uintptr_t code, uintptr_t filename,
                       uintptr_t name, int32_t first_line) {
  char name_text[kMaxTextBytes];
  char file_text[kMaxTextBytes];
  size_t name_length = python_text(layout, types.str, name, name_text, sizeof(name_text));
  size_t file_length = python_text(layout, types.str, filename, file_text, sizeof(file_text));
  uintptr_t table = read_field<uintptr_t>(code, layout.code_line_table);
  int64_t table_length = has_type(table, types.bytes) ? read_field<int64_t>(table, kVarObjectSize) : 0;
  if (table_length < 0 || table_length > kMaxLineTableBytes) table_length = 0;
  size_t size = sizeof(PythonCode) + name_length + file_length + static_cast<size_t>(table_length);
  auto* entry = static_cast<PythonCode*>(internal_alloc_permanent(size));
  if (entry == nullptr) return nullptr;
  char* text = reinterpret_cast<char*>(entry + 1);
  memcpy(text, name_text, name_length);
  memcpy(text + name_length, file_text, file_length);
  auto* table_copy = reinterpret_cast<uint8_t*>(text + name_length + file_length);
  memcpy(table_copy, reinterpret_cast<const void*>(table + kBytesData), static_cast<size_t>(table_length));
  entry->code = code;
  entry->filename_object = filename;
  entry->name_object = name;
  entry->first_line = first_line;
  entry->name = text;
  entry->name_length = static_cast<uint32_t>(name_length);
  entry->file = text + name_length;
  entry->file_length = static_cast<uint32_t>(file_length);
  entry->table = table_copy;
  entry->table_length = static_cast<uint32_t>(table_length);
  entry->table_format = layout.line_table_format;
  entry->imports = file_length >= sizeof(kImportMachineryFile) - 1 &&
                   memcmp(file_text, kImportMachineryFile, sizeof(kImportMachineryFile) - 1) == 0;
  return entry;
}

}  // namespace

bool python_code_table_init() { return g_codes.ready() || g_codes.init(10); }

uint32_t python_code_id(const PythonLayout& layout, const PythonTypes& types, uintptr_t code, bool* imports) {
  uintptr_t filename = read_field<uintptr_t>(code, layout.code_filename);
  uintptr_t name = name_object_of(layout, code);
  int32_t first_line = read_field<int32_t>(code, layout.code_first_line);
  RecentCode& recent = t_recent_codes[(code >> 4) % kRecentCodeSlots];
  if (recent.code == code && recent.filename_object == filename && recent.name_object == name &&
      recent.first_line == first_line && recent.id != 0) {
    *imports = recent.imports;
    return recent.id;
  }
  uint64_t hash = hash_mix(code ^ hash_mix(filename ^ (name << 1) ^ static_cast<uint32_t>(first_line)));
  auto matches = [&](const PythonCode* entry) {
    return entry->code == code && entry->filename_object == filename && entry->name_object == name &&
           entry->first_line == first_line;
  };
  const PythonCode* entry = g_codes.find(hash, matches);
  if (entry == nullptr) {
    entry = g_codes.find_or_insert(hash, matches,
                                   [&] { return make_entry(layout, types, code, filename, name, first_line); });
  }
  if (entry == nullptr || entry->id >= kInterpretedCodeIdLimit) return 0;
  recent = RecentCode{code, filename, name, first_line, entry->id, entry->imports};
  *imports = entry->imports;
  return entry->id;
}

uint32_t interpreter_code_end() { return g_codes.ready() ? g_codes.end_id() : 1; }

bool interpreter_code_get(uint32_t id, InterpretedCode* code) {
  if (!g_codes.ready()) return false;
  const PythonCode* entry = g_codes.get(id);
  if (entry == nullptr) return false;
  code->language = kLanguagePython;
  code->table_format = entry->table_format;
  code->first_line = entry->first_line;
  code->name = entry->name;
  code->name_length = entry->name_length;
  code->file = entry->file;
  code->file_length = entry->file_length;
  code->table = entry->table;
  code->table_length = entry->table_length;
  return true;
}

void interpreter_before_fork() { g_codes.before_fork(); }
void interpreter_after_fork_parent() { g_codes.after_fork_parent(); }
void interpreter_after_fork_child() { g_codes.after_fork_child(); }

}  // namespace leakscope::internal
