// File: site_summary.h
//
// One site whole, as dump, report and diff show it: live bytes and blocks, who owns them by thread
// and by task name, and when they were born. Built for the sites shown, from their captures
// (report/site_capture.h).
#ifndef LEAKSCOPE_REPORT_SITE_SUMMARY_H_
#define LEAKSCOPE_REPORT_SITE_SUMMARY_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "report/leak_entropy.h"
#include "report/run_state.h"

namespace leakscope::report {

struct ThreadShare {
  uint32_t thread = 0;
  std::string name;
  int64_t tid = 0;
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;
};

struct TaskShare {
  std::string name;  // empty: no task
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;
};

struct SiteSummary {
  uint32_t site = 0;
  Domain domain = Domain::kHeap;
  uint32_t stack = 0;
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;
  uint64_t allocations = 0;            // blocks allocated so far, freed or not
  uint64_t temporary_allocations = 0;  // blocks freed in the epoch they were born in
  std::vector<ThreadShare> threads;  // by live bytes, largest first
  std::vector<TaskShare> tasks;      // by live bytes, largest first
  std::vector<LiveByBirth> births;   // live bytes by birth time, oldest first, nonzero only
  int64_t inner_bytes = 0;           // of a cuda site: c10_cuda bytes inside its blocks
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_SITE_SUMMARY_H_
