// File: gate_format.h
//
// How the leak gate's result is written: text for the CI log (one line per limit, PASS or FAIL),
// and JUnit XML for CI systems that show test results (one test case per limit).
#ifndef LEAKSCOPE_REPORT_GATE_FORMAT_H_
#define LEAKSCOPE_REPORT_GATE_FORMAT_H_

#include <string>
#include <utility>
#include <vector>

#include "report/analysis.h"
#include "report/leak_gate.h"

namespace leakscope::report {

// gate_text() is the check's output: the run and the judged snapshot, the leak groups counted and
// those left out, a note when the run was too short to judge, then one PASS/FAIL line per limit
// and a closing verdict line.
std::string gate_text(const RunAnalysis& analysis, const GateResult& result, const std::string& file);

// gate_junit() is one <testsuite> per stream gated (FILE, its result), named "leakscope" (with
// the stream's file name when there are several), with a <testcase> per check, failed ones with a
// <failure> holding its line.
std::string gate_junit(const std::vector<std::pair<std::string, const GateResult*>>& suites);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_GATE_FORMAT_H_
