// File: stream_format.h
//
// The .lsc stream, byte for byte in docs/FORMAT.md: a 16-byte file header, then frames, each
// written whole with one write(2). This header holds the constants and the varint primitives that
// the snapshot writer (runtime) and the stream reader (report) share; nothing else parses frames.
//
//   file header  magic "\x89LSC\r\n\x1a\n" | u32 version | u32 flags (0)
//   frame        u32 kFrameMarker | u32 type | u32 payload length | u32 crc32c(type, length, payload)
//                payload
//
// Integers inside payloads are unsigned LEB128 varints; signed values are zigzag-encoded.
// A snapshot payload is a list of sections (varint tag, varint length, bytes) so that readers skip
// sections they do not know.
#ifndef LEAKSCOPE_CORE_STREAM_FORMAT_H_
#define LEAKSCOPE_CORE_STREAM_FORMAT_H_

#include <stddef.h>
#include <stdint.h>

namespace leakscope::internal {

inline constexpr unsigned char kFileMagic[8] = {0x89, 'L', 'S', 'C', '\r', '\n', 0x1a, '\n'};
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kFileHeaderSize = 16;
constexpr uint32_t kFrameMarker = 0x5246534c;  // "LSFR" in file order
constexpr size_t kFrameHeaderSize = 16;
constexpr uint32_t kMaxFramePayload = 1u << 30;

enum class FrameType : uint32_t {
  kProcess = 1,      // once, first: who is being traced (see FORMAT.md)
  kSnapshot = 2,     // the state at the end of one epoch, as sections, against the one before
  kKeySnapshot = 3,  // the same, whole: every definition again, counters and births absolute, so
                     // a reader can resume at it after a damaged frame
};

// A key snapshot is written at most every kKeySnapshotEvery snapshots, and only once the stream
// has grown since the last by twice what a key would take (snapshot_writer.cc), so keys stay a
// third of the stream at most.
constexpr uint32_t kKeySnapshotEvery = 64;

enum class SectionTag : uint32_t {
  kInfo = 1,
  kModuleLoads = 2,
  kModuleUnloads = 3,
  kStacks = 4,
  kThreads = 5,
  kTasks = 6,
  kSites = 7,
  kTriples = 8,
  kCounters = 9,
  kBirths = 10,
  kLifetimes = 11,
  kTemporaries = 12,
  kInterpretedCode = 13,
  kStackNodes = 14,
  kLeakCheck = 15,  // a reachability scan's results (leak_check, docs/FORMAT.md)
  kDevices = 16,     // per device: live bytes of the device domains, the driver's figures
  kInnerBlocks = 17, // per cuda site: the c10_cuda blocks inside its blocks
};

// What started the reachability scan a LEAK_CHECK section reports.
enum class LeakCheckTrigger : uint32_t {
  kTeardown = 0,  // the teardown mark, with leak_check=1
  kRequest = 1,   // leakscope_leak_check() (the C API, the Python package)
  kSignal = 2,    // the leak_check_signal option's signal
};

// Whether device memory is tracked (INFO): the `cuda` option's outcome so far.
enum class DeviceTracking : uint32_t {
  kNotAsked = 0,    // the cuda option is off
  kWaiting = 1,     // asked; the process has not initialized CUDA (yet)
  kTracking = 2,    // leakscope is CUPTI's subscriber
  kNoCupti = 3,     // asked, but no libcupti could be loaded
  kCuptiHeld = 4,   // asked, but another tool holds CUPTI's one subscriber slot
  kCuptiFailed = 5, // asked, but CUPTI refused the subscription otherwise
  kNotBuilt = 6,    // asked, but this libleakscope was built without CUDA
};

// LEAK_CHECK flags.
constexpr uint64_t kLeakCheckMmapRoots = 1;  // the program's own anonymous mappings were roots

// Why a snapshot was taken (INFO section).
enum class SnapshotReason : uint32_t {
  kPeriodic = 0,
  kOnDemand = 1,        // leakscope_snapshot_now()
  kExit = 2,            // the final one after exit() or a return from main (the library destructor)
  kSignal = 3,          // a fatal signal; the signal number is in the INFO section
  kTeardown = 4,        // teardown begins: exit() called, or the interpreter began finalizing
  kUnderscoreExit = 5,  // the final one at _exit() or _Exit(): no atexit handler or destructor ran
  kExec = 6,            // the last one before exec replaces the program (not final: exec may fail)
  kMainReturned = 7,    // teardown begins at main's return: main's own locals are already destroyed
  kQuickExit = 8,       // the final one at quick_exit(): at_quick_exit handlers run after it
  kHighWater = 9,       // tracked host or device memory rose well above every snapshot before (high_water)
  kBeforeCollection = 10,  // an interpreter collects its garbage a last time next, before its teardown
};

// A stack frame with this bit set is a frame of interpreted code, not a return address:
// bits 32-62 hold the code id (INTERPRETED_CODE), bits 0-31 the byte offset of the instruction
// it runs in that code.
constexpr uint64_t kInterpretedFrameTag = uint64_t{1} << 63;
constexpr uint64_t kInterpretedCodeIdLimit = uint64_t{1} << 31;

inline uint64_t interpreted_frame(uint32_t code_id, uint32_t offset) {
  return kInterpretedFrameTag | static_cast<uint64_t>(code_id) << 32 | offset;
}

// INTERPRETED_CODE: the language, and how its line table reads.
constexpr uint32_t kLanguagePython = 1;
constexpr uint32_t kLineTablePython310 = 1;  // CPython 3.10's (byte delta, line delta) pairs
constexpr uint32_t kLineTablePython311 = 2;  // CPython 3.11+'s location table

// THREADS flags: the thread has exited; the thread is new in a slot that held another before it
// (docs/FORMAT.md).
constexpr uint64_t kThreadExited = 1;
constexpr uint64_t kThreadFollowsAnother = 2;

// A stack that holds only this frame was not taken: the allocation was made on an alternate
// signal stack too small for an unwind (docs/FORMAT.md, STACKS).
constexpr uint64_t kSmallSignalStackFrame = 1;

// A stack that holds only this frame stands for every stack first seen after leakscope's own
// memory reached its budget (max_memory, docs/RUNTIME.md): counted, not told apart.
constexpr uint64_t kOverBudgetFrame = 2;

// A stack that holds only this frame stands for blocks their runtime keeps on free lists of its
// own after the program let go of them, to hand out again (CPython's tuples, docs/PYTHON.md).
constexpr uint64_t kFreeListFrame = 6;

// A stack that holds only this frame stands for the arenas CPython's small-object allocator maps,
// in a run that does not record the objects carved from them one by one (sampled mode,
// python_malloc=0, an allocator the user chose; docs/PYTHON.md).
constexpr uint64_t kPythonArenaFrame = 7;

// A stack that holds only this frame stands for what CPython maps through its arena allocator
// other than arenas, in a run that records its objects one by one (whose arenas are then mapped
// inside a recorded call, and not counted again): the chunks of its frames' data stack (3.11+).
constexpr uint64_t kPythonFrameStackFrame = 8;

// A stack of an allocation made during start-up is cut (the startup_depth option, docs/RUNTIME.md):
// its innermost frames, then one of these markers saying what was starting, then the code that
// started it when it is known (the Python code that imports, the caller of dlopen).
constexpr uint64_t kBeforeMainFrame = 3;   // the program's and its libraries' initializers
constexpr uint64_t kLibraryLoadFrame = 4;  // dlopen: a library's initializers
constexpr uint64_t kImportFrame = 5;       // an import of interpreted code
inline bool is_startup_marker(uint64_t frame) {
  return frame == kBeforeMainFrame || frame == kLibraryLoadFrame || frame == kImportFrame;
}
// A block this large keeps its whole stack, start-up or not.
constexpr uint64_t kStartupWholeStackBytes = 64 * 1024;

// Frames kept of a stack first seen once leakscope's own memory neared its budget.
constexpr int kBudgetStackDepth = 16;

// A varint takes at most this many bytes.
constexpr size_t kMaxVarintSize = 10;
// Section lengths are written in this many bytes, padded, so they can be filled in afterwards.
constexpr size_t kSectionLengthSize = 5;

inline uint8_t* varint_put(uint8_t* out, uint64_t value) {
  while (value >= 0x80) {
    *out++ = static_cast<uint8_t>(value | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<uint8_t>(value);
  return out;
}

// varint_put_padded() writes `value` (< 2^35) in exactly kSectionLengthSize bytes.
inline void varint_put_padded(uint8_t* out, uint64_t value) {
  for (size_t i = 0; i + 1 < kSectionLengthSize; ++i) {
    out[i] = static_cast<uint8_t>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out[kSectionLengthSize - 1] = static_cast<uint8_t>(value & 0x7f);
}

// varint_get() reads one varint; false on truncation or a value over 64 bits.
inline bool varint_get(const uint8_t** cursor, const uint8_t* end, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*cursor >= end) return false;
    uint8_t byte = *(*cursor)++;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

inline uint64_t zigzag_encode(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}
inline int64_t zigzag_decode(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

inline void le32_put(uint8_t* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
inline uint32_t le32_get(const uint8_t* in) {
  return static_cast<uint32_t>(in[0]) | static_cast<uint32_t>(in[1]) << 8 |
         static_cast<uint32_t>(in[2]) << 16 | static_cast<uint32_t>(in[3]) << 24;
}

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_STREAM_FORMAT_H_
