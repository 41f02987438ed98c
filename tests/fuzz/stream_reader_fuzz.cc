// libFuzzer target: any bytes given to the stream reader and the analysis must end in a result or
// a StreamError, never a crash, hang or undefined behaviour. Built by tests/fuzz/CMakeLists.txt
// with clang and -fsanitize=fuzzer,address,undefined; see docs/ANALYSIS.md for how it is run.
#include <cstdint>
#include <cstdio>

#include "report/analysis.h"
#include "report/stream_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;  // fmemopen refuses empty buffers; empty files are a unit test
  FILE* file = fmemopen(const_cast<uint8_t*>(data), size, "rb");
  if (file == nullptr) return 0;
  try {
    leakscope::report::StreamReader reader("fuzz.lsc", file);
    std::unique_ptr<leakscope::report::RunAnalysis> analysis = leakscope::report::analyze_run(reader);
    (void)analysis;
  } catch (const leakscope::report::StreamError&) {
  }
  return 0;
}
