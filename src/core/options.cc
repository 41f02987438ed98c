#include "core/options.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

namespace leakscope::internal {
namespace {

bool parse_bool(const char* text, size_t length, OptionBool* out) {
  if (length == 1 && (text[0] == '0' || text[0] == '1')) {
    *out = text[0] == '1';
    return true;
  }
  if (length == 4 && memcmp(text, "true", 4) == 0) return *out = true, true;
  if (length == 5 && memcmp(text, "false", 5) == 0) return *out = false, true;
  return false;
}

bool parse_count(const char* text, size_t length, OptionCount* out) {
  if (length == 0 || length > 12) return false;
  int64_t value = 0;
  for (size_t i = 0; i < length; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
  }
  *out = value;
  return true;
}

bool parse_duration(const char* text, size_t length, OptionDuration* out) {
  return parse_duration_ns(text, length, out);
}

bool parse_size(const char* text, size_t length, OptionSize* out) { return parse_size_bytes(text, length, out); }

bool parse_unwind(const char* text, size_t length, OptionUnwind* out) {
  if (length == 9 && memcmp(text, "libunwind", 9) == 0) return *out = OptionUnwind::kLibunwind, true;
  if (length == 2 && memcmp(text, "fp", 2) == 0) return *out = OptionUnwind::kFramePointer, true;
  return false;
}

bool parse_automatic(const char* text, size_t length, OptionAutomatic* out) {
  if (length == 4 && memcmp(text, "auto", 4) == 0) return *out = OptionAutomatic::kAuto, true;
  bool on = false;
  if (!parse_bool(text, length, &on)) return false;
  *out = on ? OptionAutomatic::kOn : OptionAutomatic::kOff;
  return true;
}

// A signal by number, by name with or without SIG, or as SIGRTMIN+N / SIGRTMAX-N; 0 is none.
// Only the signals a program can catch: not SIGKILL, SIGSTOP, nor glibc's own real-time ones.
bool parse_signal(const char* text, size_t length, OptionSignal* out) {
  static const struct {
    const char* name;
    int number;
  } kNames[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
                {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},   {"CHLD", SIGCHLD}, {"CONT", SIGCONT},
                {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},   {"URG", SIGURG},   {"XCPU", SIGXCPU},
                {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
                {"PWR", SIGPWR},   {"SYS", SIGSYS}};
  if (length >= 3 && memcmp(text, "SIG", 3) == 0) {
    text += 3;
    length -= 3;
  }
  int number = -1;
  OptionCount offset = 0;
  if (length >= 5 && (memcmp(text, "RTMIN", 5) == 0 || memcmp(text, "RTMAX", 5) == 0)) {
    bool from_min = text[4] == 'N';
    number = from_min ? SIGRTMIN : SIGRTMAX;
    if (length > 5) {
      if (text[5] != (from_min ? '+' : '-') || !parse_count(text + 6, length - 6, &offset) || offset > 64) return false;
      number = from_min ? number + static_cast<int>(offset) : number - static_cast<int>(offset);
    }
    if (number < SIGRTMIN || number > SIGRTMAX) return false;
  } else if (length > 0 && text[0] >= '0' && text[0] <= '9') {
    if (!parse_count(text, length, &offset) || offset > SIGRTMAX) return false;
    number = static_cast<int>(offset);
    if (number == 0) return *out = 0, true;
    if (number >= __SIGRTMIN && number < SIGRTMIN) return false;  // glibc's own
  } else {
    for (const auto& name : kNames) {
      if (strlen(name.name) == length && memcmp(name.name, text, length) == 0) number = name.number;
    }
  }
  if (number <= 0 || number == SIGKILL || number == SIGSTOP) return false;
  *out = number;
  return true;
}

bool parse_path(const char* text, size_t length, OptionPath* out) {
  if (length == 0 || length >= kMaxPathLength) return false;
  memcpy(out->text, text, length);
  out->text[length] = '\0';
  return true;
}

// What a well-formed value of each type looks like, for error messages.
constexpr const char* kExpected_bool = "0 or 1";
constexpr const char* kExpected_count = "a whole number";
constexpr const char* kExpected_duration = "a duration such as 500ms or 2s";
constexpr const char* kExpected_path = "a non-empty path";
constexpr const char* kExpected_unwind = "libunwind or fp";
constexpr const char* kExpected_automatic = "0, 1 or auto";
constexpr const char* kExpected_signal = "a signal such as SIGUSR2, 12 or SIGRTMIN+4, or 0 for none";
constexpr const char* kExpected_size = "a size such as 0, 4096, 512KiB or 1M";

size_t format_bool(OptionBool value, char* out, size_t size) {
  return static_cast<size_t>(snprintf(out, size, "%d", value ? 1 : 0));
}
size_t format_count(OptionCount value, char* out, size_t size) {
  return static_cast<size_t>(snprintf(out, size, "%lld", static_cast<long long>(value)));
}
size_t format_duration(OptionDuration value, char* out, size_t size) {
  static const struct {
    const char* unit;
    uint64_t ns;
  } kUnits[] = {{"h", 3600000000000ull}, {"m", 60000000000ull}, {"s", 1000000000ull},
                {"ms", 1000000ull},      {"us", 1000ull},        {"ns", 1ull}};
  for (const auto& unit : kUnits) {
    if (value != 0 && value % unit.ns == 0) {
      return static_cast<size_t>(
          snprintf(out, size, "%llu%s", static_cast<unsigned long long>(value / unit.ns), unit.unit));
    }
  }
  return static_cast<size_t>(snprintf(out, size, "0s"));
}
size_t format_size(OptionSize value, char* out, size_t size) {
  static const struct {
    const char* unit;
    uint64_t bytes;
  } kUnits[] = {{"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}};
  for (const auto& unit : kUnits) {
    if (value != 0 && value % unit.bytes == 0) {
      return static_cast<size_t>(snprintf(out, size, "%llu%s", static_cast<unsigned long long>(value / unit.bytes), unit.unit));
    }
  }
  return static_cast<size_t>(snprintf(out, size, "%llu", static_cast<unsigned long long>(value)));
}

size_t format_unwind(OptionUnwind value, char* out, size_t size) {
  return static_cast<size_t>(snprintf(out, size, "%s", value == OptionUnwind::kFramePointer ? "fp" : "libunwind"));
}

size_t format_automatic(OptionAutomatic value, char* out, size_t size) {
  const char* text = value == OptionAutomatic::kAuto ? "auto" : value == OptionAutomatic::kOn ? "1" : "0";
  return static_cast<size_t>(snprintf(out, size, "%s", text));
}

size_t format_signal(OptionSignal value, char* out, size_t size) {
  return static_cast<size_t>(snprintf(out, size, "%d", value));
}

size_t format_path(const OptionPath& value, char* out, size_t size) {
  return static_cast<size_t>(snprintf(out, size, "%s", value.text));
}

bool validate(const Options& options, char* error, size_t error_size) {
  if (options.depth < 1 || options.depth > 128) {
    snprintf(error, error_size, "LEAKSCOPE_OPTIONS: depth=%lld is outside 1..128",
             static_cast<long long>(options.depth));
    return false;
  }
  if (options.startup_depth < 0 || options.startup_depth > 128) {
    snprintf(error, error_size, "LEAKSCOPE_OPTIONS: startup_depth=%lld is outside 0..128",
             static_cast<long long>(options.startup_depth));
    return false;
  }
  if (options.interval < 10000000ull) {
    snprintf(error, error_size, "LEAKSCOPE_OPTIONS: interval must be at least 10ms");
    return false;
  }
  if (options.stop_signal == 0 || options.stop_signal == options.leak_check_signal) {
    snprintf(error, error_size, "LEAKSCOPE_OPTIONS: stop_signal must be a signal of its own, not 0 nor leak_check_signal");
    return false;
  }
  if (options.max_memory != 0 && options.max_memory < kMinMemoryBudget) {
    snprintf(error, error_size, "LEAKSCOPE_OPTIONS: max_memory must be 0 (none) or at least 16MiB (leakscope starts with about 8 MiB)");
    return false;
  }
  return true;
}

}  // namespace

size_t options_format_size(uint64_t bytes, char* out, size_t size) { return format_size(bytes, out, size); }

bool parse_size_bytes(const char* text, size_t length, uint64_t* out) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < length && text[i] >= '0' && text[i] <= '9') {
    if (value > (1ull << 40)) return false;
    value = value * 10 + static_cast<uint64_t>(text[i++] - '0');
  }
  if (i == 0) return false;
  // Binary multiples however written: K, KB, KiB (and M, G, T alike); B or nothing for bytes.
  static const struct {
    char letter;
    uint64_t scale;
  } kMultiples[] = {{'K', 1ull << 10}, {'M', 1ull << 20}, {'G', 1ull << 30}, {'T', 1ull << 40}};
  const char* unit = text + i;
  size_t unit_length = length - i;
  if (unit_length == 0 || (unit_length == 1 && unit[0] == 'B')) {
    *out = value;
    return true;
  }
  for (const auto& multiple : kMultiples) {
    if (unit[0] != multiple.letter) continue;
    bool spelled = unit_length == 1 || (unit_length == 2 && unit[1] == 'B') ||
                   (unit_length == 3 && unit[1] == 'i' && unit[2] == 'B');
    if (!spelled || __builtin_mul_overflow(value, multiple.scale, out)) return false;
    return true;
  }
  return false;
}

bool parse_duration_ns(const char* text, size_t length, uint64_t* out) {
  size_t i = 0;
  uint64_t whole = 0;
  while (i < length && text[i] >= '0' && text[i] <= '9') {
    if (whole > 1000000000000ull) return false;
    whole = whole * 10 + static_cast<uint64_t>(text[i++] - '0');
  }
  if (i == 0) return false;
  uint64_t fraction = 0, fraction_scale = 1;
  if (i < length && text[i] == '.') {
    ++i;
    while (i < length && text[i] >= '0' && text[i] <= '9' && fraction_scale < 1000000000ull) {
      fraction = fraction * 10 + static_cast<uint64_t>(text[i++] - '0');
      fraction_scale *= 10;
    }
  }
  const char* unit = text + i;
  size_t unit_length = length - i;
  uint64_t scale;
  if (unit_length == 2 && memcmp(unit, "ns", 2) == 0) scale = 1;
  else if (unit_length == 2 && memcmp(unit, "us", 2) == 0) scale = 1000;
  else if (unit_length == 2 && memcmp(unit, "ms", 2) == 0) scale = 1000000;
  else if (unit_length == 1 && unit[0] == 's') scale = 1000000000ull;
  else if (unit_length == 1 && unit[0] == 'm') scale = 60000000000ull;
  else if (unit_length == 1 && unit[0] == 'h') scale = 3600000000000ull;
  else return false;
  *out = whole * scale + fraction * scale / fraction_scale;
  return true;
}

// Every default is well-formed; options_test checks that each one parses.
void options_set_defaults(Options* options) {
#define LS_OPTION(type, name, default_text, doc) \
  parse_##type(default_text, sizeof(default_text) - 1, &options->name);
#include "core/options.inc"
#undef LS_OPTION
}

bool options_parse(const char* text, Options* options, char* error, size_t error_size) {
  if (text == nullptr) return validate(*options, error, error_size);
  const char* cursor = text;
  while (*cursor != '\0') {
    const char* end = strchr(cursor, ',');
    if (end == nullptr) end = cursor + strlen(cursor);
    const char* equals = static_cast<const char*>(memchr(cursor, '=', static_cast<size_t>(end - cursor)));
    if (end == cursor) {  // tolerate "a=1,,b=2" and a trailing comma
      cursor = *end == ',' ? end + 1 : end;
      continue;
    }
    if (equals == nullptr) {
      snprintf(error, error_size, "LEAKSCOPE_OPTIONS: '%.*s' is not of the form name=value",
               static_cast<int>(end - cursor), cursor);
      return false;
    }
    size_t name_length = static_cast<size_t>(equals - cursor);
    const char* value = equals + 1;
    size_t value_length = static_cast<size_t>(end - value);
    bool known = false;
#define LS_OPTION(type, name, default_text, doc)                                                   \
  if (!known && name_length == sizeof(#name) - 1 && memcmp(cursor, #name, name_length) == 0) {     \
    known = true;                                                                                  \
    if (!parse_##type(value, value_length, &options->name)) {                                      \
      snprintf(error, error_size, "LEAKSCOPE_OPTIONS: bad value '%.*s' for %s (expected %s)",      \
               static_cast<int>(value_length), value, #name, kExpected_##type);                    \
      return false;                                                                                \
    }                                                                                              \
  }
#include "core/options.inc"
#undef LS_OPTION
    if (!known) {
      snprintf(error, error_size, "LEAKSCOPE_OPTIONS: unknown option '%.*s' (help=1 lists them)",
               static_cast<int>(name_length), cursor);
      return false;
    }
    cursor = *end == ',' ? end + 1 : end;
  }
  return validate(*options, error, error_size);
}

size_t options_format(const Options& options, char* out, size_t size) {
  size_t used = 0;
  char value[kMaxPathLength];
#define LS_OPTION(type, name, default_text, doc)                                               \
  format_##type(options.name, value, sizeof(value));                                           \
  used += static_cast<size_t>(snprintf(out + (used < size ? used : size),                      \
                                       used < size ? size - used : 0, "%s%s=%s",               \
                                       used == 0 ? "" : ",", #name, value));
#include "core/options.inc"
#undef LS_OPTION
  return used;
}

const char* options_help_text() {
  return "leakscope options (LEAKSCOPE_OPTIONS=name=value,name=value):\n"
#define LS_OPTION(type, name, default_text, doc) "  " #name "=" default_text "\n      " doc "\n"
#include "core/options.inc"
#undef LS_OPTION
      ;
}

}  // namespace leakscope::internal
