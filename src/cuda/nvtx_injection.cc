// NVTX's injection (NVTX_INJECTION64_PATH, docs/RUNTIME.md): every library built with NVTX v3 asks
// this library, once, for the functions behind its nvtxRangePush*/nvtxRangePop and their domain
// forms. Push/pop ranges nest per thread, so the innermost open range names what the thread is
// doing: it becomes the task of the thread's allocations (name, and the range's integer payload as
// the task's id), after the explicit tasks of the C API. Start/end ranges may cross threads and
// are left alone.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include "core/internal_alloc.h"
#include "core/runtime.h"
#include "core/task_registry.h"
#include "core/thread_registry.h"
#include "core/types.h"
#include "interpose/hook_guard.h"

namespace leakscope::internal {
namespace {

constexpr int kMaxRangeDepth = 64;
constexpr size_t kMaxRangeName = 255;

// The thread's open ranges, innermost last; deeper than kMaxRangeDepth they are counted only.
struct OpenRanges {
  int depth;
  TaskId tasks[kMaxRangeDepth];
};

__thread OpenRanges tls_ranges __attribute__((tls_model("initial-exec")));

// A string registered with nvtxDomainRegisterString*, which later ranges name by its handle.
struct RegisteredName {
  char text[kMaxRangeName + 1];
};

void set_annotated_task(TaskId task) {
  if (!hook_should_record()) return;
  Bookkeeping bookkeeping;
  if (ThreadState* thread = thread_current()) thread->annotated_task = task;
}

int push(const char* name, uint64_t payload) {
  OpenRanges& ranges = tls_ranges;
  int level = ranges.depth++;
  TaskId task = TaskId::kNone;
  if (name != nullptr && hook_should_record()) {
    Bookkeeping bookkeeping;
    task = task_intern(name, payload);
  }
  if (level < kMaxRangeDepth) ranges.tasks[level] = task;
  set_annotated_task(ranges.tasks[level < kMaxRangeDepth ? level : kMaxRangeDepth - 1]);
  return level;
}

int pop() {
  OpenRanges& ranges = tls_ranges;
  if (ranges.depth == 0) return -1;
  int depth = --ranges.depth;
  set_annotated_task(depth == 0 ? TaskId::kNone : ranges.tasks[(depth < kMaxRangeDepth ? depth : kMaxRangeDepth) - 1]);
  return depth;
}

// narrow() copies a wide name as ASCII ('?' for the rest) into `out`.
const char* narrow(const wchar_t* name, char* out) {
  if (name == nullptr) return nullptr;
  size_t length = 0;
  for (; name[length] != L'\0' && length < kMaxRangeName; ++length) {
    out[length] = name[length] > 0 && name[length] < 128 ? static_cast<char>(name[length]) : '?';
  }
  out[length] = '\0';
  return out;
}

uint64_t payload_of(const nvtxEventAttributes_t* attributes) {
  switch (attributes->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: return attributes->payload.ullValue;
    case NVTX_PAYLOAD_TYPE_INT64: return static_cast<uint64_t>(attributes->payload.llValue);
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: return attributes->payload.uiValue;
    case NVTX_PAYLOAD_TYPE_INT32: return static_cast<uint64_t>(static_cast<int64_t>(attributes->payload.iValue));
    default: return 0;
  }
}

int push_attributes(const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr) return push(nullptr, 0);
  char wide[kMaxRangeName + 1];
  const char* name = nullptr;
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: name = attributes->message.ascii; break;
    case NVTX_MESSAGE_TYPE_UNICODE: name = narrow(attributes->message.unicode, wide); break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (attributes->message.registered != nullptr) {
        name = reinterpret_cast<const RegisteredName*>(attributes->message.registered)->text;
      }
      break;
    default: break;
  }
  return push(name, payload_of(attributes));
}

int range_push_a(const char* message) { return push(message, 0); }
int range_push_w(const wchar_t* message) {
  char name[kMaxRangeName + 1];
  return push(narrow(message, name), 0);
}
int range_push_ex(const nvtxEventAttributes_t* attributes) { return push_attributes(attributes); }
int range_pop() { return pop(); }
int domain_range_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* attributes) { return push_attributes(attributes); }
int domain_range_pop(nvtxDomainHandle_t) { return pop(); }

nvtxStringHandle_t register_name(const char* text) {
  Bookkeeping bookkeeping;
  auto* name = static_cast<RegisteredName*>(internal_alloc_permanent(sizeof(RegisteredName)));
  if (name == nullptr || text == nullptr) return nullptr;
  strncpy(name->text, text, kMaxRangeName);
  return reinterpret_cast<nvtxStringHandle_t>(name);
}
nvtxStringHandle_t domain_register_string_a(nvtxDomainHandle_t, const char* text) { return register_name(text); }
nvtxStringHandle_t domain_register_string_w(nvtxDomainHandle_t, const wchar_t* text) {
  char name[kMaxRangeName + 1];
  return register_name(narrow(text, name));
}

template <typename Function>
void install(NvtxFunctionTable table, unsigned size, unsigned slot, Function function) {
  if (table != nullptr && slot < size && table[slot] != nullptr) *table[slot] = reinterpret_cast<NvtxFunctionPointer>(function);
}

}  // namespace
}  // namespace leakscope::internal

// InitializeInjectionNvtx2() is what each library's NVTX calls, once, in the library
// NVTX_INJECTION64_PATH names; it fills that library's function tables. 1: installed; 0 leaves
// NVTX a no-op there (tracking off, or the nvtx option not set).
LS_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  using namespace leakscope::internal;
  // A library's static initializer may make the first NVTX call before leakscope's own ran: the
  // runtime is initialized now (NVTX asks once).
  if (get_export_table == nullptr || !hook_should_record() || !runtime_options().nvtx) return 0;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable core = nullptr;
  unsigned core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0) return 0;
  install(core, core_size, NVTX_CBID_CORE_RangePushA, range_push_a);
  install(core, core_size, NVTX_CBID_CORE_RangePushW, range_push_w);
  install(core, core_size, NVTX_CBID_CORE_RangePushEx, range_push_ex);
  install(core, core_size, NVTX_CBID_CORE_RangePop, range_pop);
  NvtxFunctionTable core2 = nullptr;
  unsigned core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) != 0) {
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domain_range_pop);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, domain_register_string_a);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, domain_register_string_w);
  }
  return 1;
}
