#include "python/python_layout.h"

#include <string.h>

namespace leakscope::internal {
namespace {

constexpr char kDebugCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};

// Word indexes of the fields read from 3.13's _Py_DebugOffsets (a struct of uint64 words).
constexpr size_t kDebugFreeThreaded = 2;
constexpr size_t kDebugThreadCurrentFrame = 23;
constexpr size_t kDebugThreadId = 24;
constexpr size_t kDebugThreadDatastackChunk = 26;
constexpr size_t kDebugFramePrevious = 29;
constexpr size_t kDebugFrameExecutable = 30;
constexpr size_t kDebugFrameInstruction = 31;
constexpr size_t kDebugFrameOwner = 33;
constexpr size_t kDebugCodeFilename = 35;
constexpr size_t kDebugCodeName = 36;
constexpr size_t kDebugCodeQualname = 37;
constexpr size_t kDebugCodeLineTable = 38;
constexpr size_t kDebugCodeFirstLine = 39;
constexpr size_t kDebugCodeBytecode = 43;

uint64_t debug_word(const uint8_t* runtime, size_t index) {
  uint64_t value;
  memcpy(&value, runtime + 8 * index, sizeof(value));
  return value;
}

void set_310(PythonLayout* l) {
  l->tstate_thread_id = 176;
  l->top_frame = 24;
  l->frame_code = 32;
  l->frame_previous = 24;
  l->frame_instruction = 96;
  l->instruction_is_index = true;
  l->boundary = EvalBoundary::kEveryFrame;
  l->code_first_line = 40;
  l->code_filename = 104;
  l->code_name = 112;
  l->code_line_table = 120;
  l->line_table_format = kLineTablePython310;
  l->ascii_data = 48;
  l->compact_utf8_length = 48;
  l->compact_utf8 = 56;
  l->compact_data = 72;
}

// The _PyInterpreterFrame and code object fields shared by 3.11-3.13, before each version's own.
void set_311_family(PythonLayout* l) {
  l->frame_instruction = 56;
  l->code_filename = 112;
  l->code_name = 120;
  l->code_qualname = 128;
  l->code_line_table = 136;
  l->line_table_format = kLineTablePython311;
}

}  // namespace

bool python_layout_for(int minor, const uint8_t* runtime, PythonLayout* layout) {
  PythonLayout l;
  l.minor = minor;
  switch (minor) {
    case 10:
      set_310(&l);
      break;
    case 11:
      set_311_family(&l);
      l.tstate_thread_id = 152;
      l.tstate_cframe = 56;
      l.tstate_datastack_chunk = 296;
      l.top_frame = 8;
      l.frame_code = 32;
      l.frame_previous = 48;
      l.frame_is_entry = 68;
      l.frame_owner = 69;
      l.boundary = EvalBoundary::kIsEntry;
      l.code_first_line = 72;
      l.code_bytecode = 184;
      l.code_first_traceable = 168;
      l.ascii_data = 48;
      l.compact_utf8_length = 48;
      l.compact_utf8 = 56;
      l.compact_data = 72;
      break;
    case 12:
      set_311_family(&l);
      l.tstate_thread_id = 136;
      l.tstate_cframe = 56;
      l.tstate_datastack_chunk = 232;
      l.top_frame = 0;
      l.frame_code = 0;
      l.frame_previous = 8;
      l.frame_owner = 70;
      l.boundary = EvalBoundary::kShimFrame;
      l.code_first_line = 68;
      l.code_bytecode = 192;
      l.code_first_traceable = 176;
      l.ascii_data = 40;
      l.compact_utf8_length = 40;
      l.compact_utf8 = 48;
      l.compact_data = 56;
      break;
    case 13:
      set_311_family(&l);
      l.tstate_thread_id = 152;
      l.tstate_datastack_chunk = 232;
      l.top_frame = 72;
      l.frame_code = 0;
      l.frame_previous = 8;
      l.frame_owner = 70;
      l.boundary = EvalBoundary::kShimFrame;
      l.code_first_line = 68;
      l.code_bytecode = 200;
      l.code_first_traceable = 184;
      l.ascii_data = 40;
      l.compact_utf8_length = 40;
      l.compact_utf8 = 48;
      l.compact_data = 56;
      // The interpreter's own word for each field it publishes.
      if (memcmp(runtime, kDebugCookie, sizeof(kDebugCookie)) != 0) return false;
      if (debug_word(runtime, kDebugFreeThreaded) != 0) return false;
      l.top_frame = debug_word(runtime, kDebugThreadCurrentFrame);
      l.tstate_thread_id = debug_word(runtime, kDebugThreadId);
      l.tstate_datastack_chunk = debug_word(runtime, kDebugThreadDatastackChunk);
      l.frame_previous = debug_word(runtime, kDebugFramePrevious);
      l.frame_code = debug_word(runtime, kDebugFrameExecutable);
      l.frame_instruction = debug_word(runtime, kDebugFrameInstruction);
      l.frame_owner = debug_word(runtime, kDebugFrameOwner);
      l.code_filename = debug_word(runtime, kDebugCodeFilename);
      l.code_name = debug_word(runtime, kDebugCodeName);
      l.code_qualname = debug_word(runtime, kDebugCodeQualname);
      l.code_line_table = debug_word(runtime, kDebugCodeLineTable);
      l.code_first_line = debug_word(runtime, kDebugCodeFirstLine);
      l.code_bytecode = debug_word(runtime, kDebugCodeBytecode);
      break;
    default:
      return false;
  }
  *layout = l;
  return true;
}

}  // namespace leakscope::internal
