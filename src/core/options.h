// File: options.h
//
// The runtime options from LEAKSCOPE_OPTIONS ("name=value,name=value", as ASAN_OPTIONS), defined
// once in options.inc. Parsing never allocates and never aborts: a bad option yields an error
// text, and the runtime then disables tracking (see runtime.cc).
#ifndef LEAKSCOPE_CORE_OPTIONS_H_
#define LEAKSCOPE_CORE_OPTIONS_H_

#include <stddef.h>
#include <stdint.h>

namespace leakscope::internal {

constexpr size_t kMaxPathLength = 4096;

// Storage per option type.
using OptionBool = bool;
using OptionCount = int64_t;
using OptionDuration = uint64_t;  // nanoseconds
using OptionSize = uint64_t;      // bytes
enum class OptionUnwind : uint8_t { kLibunwind, kFramePointer };
enum class OptionAutomatic : uint8_t { kOff, kOn, kAuto };
using OptionSignal = int;  // a signal number; 0: none
struct OptionPath {
  char text[kMaxPathLength];
};

struct Options {
#define LS_OPTION_STORAGE_bool OptionBool
#define LS_OPTION_STORAGE_count OptionCount
#define LS_OPTION_STORAGE_duration OptionDuration
#define LS_OPTION_STORAGE_size OptionSize
#define LS_OPTION_STORAGE_unwind OptionUnwind
#define LS_OPTION_STORAGE_automatic OptionAutomatic
#define LS_OPTION_STORAGE_signal OptionSignal
#define LS_OPTION_STORAGE_path OptionPath
#define LS_OPTION(type, name, default_text, doc) LS_OPTION_STORAGE_##type name;
#include "core/options.inc"
#undef LS_OPTION
};

// options_set_defaults() fills every option with its default from options.inc.
void options_set_defaults(Options* options);

// options_parse() applies `text` (may be null or empty) over the current values. On a malformed
// or unknown option it writes a one-line reason (no trailing newline) into `error` and returns
// false; `options` may then be partly updated and must not be used.
bool options_parse(const char* text, Options* options, char* error, size_t error_size);

// options_format() writes the effective options as "name=value,..." (NUL-terminated, truncated
// to `size`); returns the length it needed.
size_t options_format(const Options& options, char* out, size_t size);

// options_help_text() is the help=1 text: one line per option with its default and meaning.
const char* options_help_text();

// options_format_size() writes `bytes` as a size option is written (1536KiB, 2GiB, 100).
size_t options_format_size(uint64_t bytes, char* out, size_t size);

// The smallest max_memory: leakscope's tables start with about 8 MiB.
constexpr uint64_t kMinMemoryBudget = uint64_t{16} << 20;

// parse_size_bytes() reads "0", "4096", "512KiB", "64K", "1MB", "2GiB", "1TiB" (multiples are binary).
// Returns false on malformed text.
bool parse_size_bytes(const char* text, size_t length, uint64_t* out);

// parse_duration_ns() reads "250ms", "1s", "1.5m"... Returns false on malformed text.
bool parse_duration_ns(const char* text, size_t length, uint64_t* out);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_OPTIONS_H_
