// File: pprof_export.h
//
// The judged run as a pprof profile (gzipped profile.proto, docs/FORMAT.md): what `go tool
// pprof`, Pyroscope and Grafana read. It holds every live site at the judged snapshot, as
// `report` judges it.
#ifndef LEAKSCOPE_REPORT_PPROF_EXPORT_H_
#define LEAKSCOPE_REPORT_PPROF_EXPORT_H_

#include <ostream>
#include <string>

#include "report/analysis.h"

namespace leakscope::report {

// write_pprof_gzipped() writes the profile, compressed with gzip as pprof readers take it: one
// sample per live site with its frames as locations (inlined calls as lines of one location,
// Python frames as functions of their file), values inuse_objects, inuse_space and leaked_space
// (the site's bytes when its group is a leak), labels domain and verdict; modules as mappings with
// build-ids. Samples are written as they are made: its memory is that of the distinct frames.
void write_pprof_gzipped(RunAnalysis& analysis, std::ostream& out);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_PPROF_EXPORT_H_
