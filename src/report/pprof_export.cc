#include "report/pprof_export.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <unordered_map>

#include <fmt/format.h>

#include "core/stream_format.h"
#include "src/report/profile.pb.h"  // generated from profile.proto (build tree)
#include "report/verdict.h"

namespace leakscope::report {
namespace {

// A module path as the symbolizer shows it may carry " (missing)" or " (changed)".
std::string module_path(const std::string& shown) {
  size_t note = shown.find(" (");
  return note == std::string::npos ? shown : shown.substr(0, note);
}

std::string hex(const std::string& bytes) {
  std::string out;
  for (unsigned char byte : bytes) out += fmt::format("{:02x}", byte);
  return out;
}

// ProfileWriter writes the profile as a run of Profile messages, which a reader takes as one (the
// wire format appends repeated fields): the header, then each sample on its own as it is made, then
// the tables the samples point into. What it holds is those tables, bounded by the distinct frames
// and modules, never the samples.
class ProfileWriter {
 public:
  ProfileWriter(RunAnalysis& analysis, google::protobuf::io::CodedOutputStream* out) : analysis_(analysis), out_(out) {
    string_id("");
  }

  void write() {
    perftools::profiles::Profile chunk;
    for (const char* type : {"inuse_objects", "inuse_space", "leaked_space"}) {
      auto* sample_type = chunk.add_sample_type();
      sample_type->set_type(string_id(type));
      sample_type->set_unit(string_id(std::string(type) == "inuse_objects" ? "count" : "bytes"));
    }
    chunk.set_default_sample_type(string_id("inuse_space"));
    chunk.mutable_period_type()->set_type(string_id("space"));
    chunk.mutable_period_type()->set_unit(string_id("bytes"));
    uint64_t interval = analysis_.state.process().sample_interval;
    chunk.set_period(static_cast<int64_t>(interval == 0 ? 1 : interval));
    chunk.set_time_nanos(static_cast<int64_t>(analysis_.judged.realtime_ns));
    chunk.set_duration_nanos(static_cast<int64_t>(analysis_.judged.time_ns));
    chunk.add_comment(string_id(fmt::format("leakscope: {} (pid {}), judged at snapshot {}", analysis_.state.process().exe,
                                            analysis_.state.process().pid, analysis_.at.index)));
    chunk.SerializeToCodedStream(out_);
    // Readers take the first mapping for the program's own binary ("File:" in go tool pprof).
    const std::string& exe = analysis_.state.process().exe;
    for (const Module& module : analysis_.state.modules()) {
      if (module.path == exe) {
        mapping_of(exe);
        break;
      }
    }
    for (const SiteReport& site : analysis_.sites) {
      const CapturedSite& taken = analysis_.capture_of(site);
      if (taken.live_bytes <= 0 && taken.live_blocks <= 0) continue;
      const GroupReport& group = analysis_.groups[site.group];
      bool leak = group.verdict == Verdict::kLeak;
      int64_t bytes = analysis_.own_live_bytes(site);
      chunk.Clear();
      auto* sample = chunk.add_sample();
      add_locations(analysis_.symbolizer->frames(analysis_.stack_of(site)), sample);
      sample->add_value(taken.live_blocks);
      sample->add_value(bytes);
      sample->add_value(leak ? bytes : 0);
      add_label(sample, "domain", domain_name(analysis_.domain_of(site)));
      add_label(sample, "verdict", verdict_name(group.verdict));
      chunk.SerializeToCodedStream(out_);
    }
    for (const std::string& text : strings_) tables_.add_string_table(text);
    tables_.SerializeToCodedStream(out_);
  }

 private:
  int64_t string_id(const std::string& text) {
    auto [found, inserted] = string_ids_.emplace(text, static_cast<int64_t>(strings_.size()));
    if (inserted) strings_.push_back(text);
    return found->second;
  }

  void add_label(perftools::profiles::Sample* sample, const char* key, const std::string& value) {
    auto* label = sample->add_label();
    label->set_key(string_id(key));
    label->set_str(string_id(value));
  }

  uint64_t function_id(const SymbolizedFrame& frame) {
    std::string name = frame.function.empty() ? fmt::format("{:#x}", frame.module_offset) : frame.function;
    std::string key = name + '\0' + frame.file;
    auto found = function_ids_.find(key);
    if (found != function_ids_.end()) return found->second;
    auto* function = tables_.add_function();
    function->set_id(static_cast<uint64_t>(tables_.function_size()));
    function->set_name(string_id(name));
    function->set_system_name(string_id(name));
    function->set_filename(string_id(frame.file));
    function_ids_.emplace(key, function->id());
    return function->id();
  }

  // mapping_id() is the mapping of `frame`'s module, 0 for frames of no module (Python frames,
  // start-up markers).
  uint64_t mapping_id(const SymbolizedFrame& frame) {
    std::string path = module_path(frame.module);
    if (path.empty() || !frame.language.empty() || internal::is_startup_marker(frame.address)) return 0;
    return mapping_of(path);
  }

  uint64_t mapping_of(const std::string& path) {
    auto found = mapping_ids_.find(path);
    if (found != mapping_ids_.end()) return found->second;
    auto* mapping = tables_.add_mapping();
    mapping->set_id(static_cast<uint64_t>(tables_.mapping_size()));
    mapping->set_filename(string_id(path));
    for (const Module& module : analysis_.state.modules()) {
      if (module.path != path) continue;
      mapping->set_build_id(string_id(hex(module.build_id)));
      for (const ModuleSegment& segment : module.segments) {
        if ((segment.flags & 1) == 0) continue;  // PF_X: the code the addresses are in
        mapping->set_memory_start(module.base + segment.vaddr);
        mapping->set_memory_limit(module.base + segment.vaddr + segment.memsz);
        mapping->set_file_offset(segment.file_offset);
        break;
      }
      break;
    }
    mapping->set_has_functions(true);
    mapping->set_has_filenames(true);
    mapping->set_has_line_numbers(true);
    mapping->set_has_inline_frames(true);
    mapping_ids_.emplace(path, mapping->id());
    return mapping->id();
  }

  // add_locations() puts `frames` into `sample`, innermost first: a run of inlined frames and
  // the frame they were inlined into is one location of several lines.
  void add_locations(const std::vector<const SymbolizedFrame*>& frames, perftools::profiles::Sample* sample) {
    size_t begin = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (frames[i]->inlined && i + 1 < frames.size()) continue;
      uint64_t address = frames[i]->address;
      auto found = location_ids_.find(address);
      if (found == location_ids_.end()) {
        auto* location = tables_.add_location();
        location->set_id(static_cast<uint64_t>(tables_.location_size()));
        location->set_mapping_id(mapping_id(*frames[i]));
        if (location->mapping_id() != 0) location->set_address(address);
        for (size_t f = begin; f <= i; ++f) {
          auto* line = location->add_line();
          line->set_function_id(function_id(*frames[f]));
          line->set_line(frames[f]->line);
        }
        found = location_ids_.emplace(address, location->id()).first;
      }
      sample->add_location_id(found->second);
      begin = i + 1;
    }
  }

  RunAnalysis& analysis_;
  google::protobuf::io::CodedOutputStream* out_;
  perftools::profiles::Profile tables_;  // mappings, locations, functions, then the strings
  std::vector<std::string> strings_;
  std::unordered_map<std::string, int64_t> string_ids_;
  std::unordered_map<std::string, uint64_t> function_ids_;
  std::unordered_map<std::string, uint64_t> mapping_ids_;
  std::unordered_map<uint64_t, uint64_t> location_ids_;
};

}  // namespace

void write_pprof_gzipped(RunAnalysis& analysis, std::ostream& out) {
  google::protobuf::io::OstreamOutputStream file(&out);
  google::protobuf::io::GzipOutputStream::Options options;
  options.format = google::protobuf::io::GzipOutputStream::GZIP;
  google::protobuf::io::GzipOutputStream gzipped(&file, options);
  {
    google::protobuf::io::CodedOutputStream coded(&gzipped);
    ProfileWriter(analysis, &coded).write();
  }
  gzipped.Close();
}

}  // namespace leakscope::report
