// libFuzzer target: any bytes given to the stream reader and the analysis must end in a result or
// a StreamError, never a crash, hang or undefined behaviour; as a Python line table, any bytes
// give a line or none. Built by tests/fuzz/CMakeLists.txt
// with clang and -fsanitize=fuzzer,address,undefined; see docs/ANALYSIS.md for how it is run.
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/stream_format.h"
#include "report/analysis.h"
#include "report/python_lines.h"
#include "report/stream_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;  // fmemopen refuses empty buffers; empty files are a unit test
  std::string table(reinterpret_cast<const char*>(data), size);
  for (uint32_t format : {leakscope::internal::kLineTablePython310, leakscope::internal::kLineTablePython311}) {
    for (uint32_t offset : {0u, 2u, 64u, static_cast<uint32_t>(size * 7)}) {
      (void)leakscope::report::python_line(format, table, static_cast<int>(data[0]) - 128, offset);
    }
  }
  FILE* file = fmemopen(const_cast<uint8_t*>(data), size, "rb");
  if (file == nullptr) return 0;
  try {
    leakscope::report::StreamReader reader("fuzz.lsc", file);
    std::unique_ptr<leakscope::report::RunAnalysis> analysis = leakscope::report::analyze_run(reader);
    (void)analysis;
    // And read again in parts of one site each (report/report_passes.h).
    reader.restart();
    analysis = leakscope::report::analyze_run(reader, leakscope::report::AnalysisOptions{.site_memory = 1, .top = 3});
  } catch (const leakscope::report::StreamError&) {
  }
  return 0;
}
