// File: stream_reader.h
//
// Reads a .lsc stream frame by frame, in constant memory: the only code that parses the framing
// (docs/FORMAT.md). A frame cut short at the end of the file (the process was killed while
// writing it) is reported through torn() and skipped; anything else wrong is a StreamError whose
// message is one line naming the file, the frame and the fault.
#ifndef LEAKSCOPE_REPORT_STREAM_READER_H_
#define LEAKSCOPE_REPORT_STREAM_READER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/stream_format.h"

namespace leakscope::report {

class StreamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Frame {
  internal::FrameType type;
  uint32_t index;   // 0-based position in the file
  uint64_t offset;  // of the frame header
  const uint8_t* payload;
  size_t size;
};

// What skim_snapshots() reads of one snapshot: its INFO's first fields.
struct SnapshotMark {
  internal::SnapshotReason reason;
  uint32_t signal_number;
  bool final;
  uint64_t time_ns;
};

class StreamReader {
 public:
  // Opens `path` and checks the file header. Throws StreamError (missing, empty, foreign or a
  // newer format version).
  explicit StreamReader(std::string path);

  // Reads an already open stream (taking ownership of `file`); `name` is used in messages.
  StreamReader(std::string name, FILE* file);

  // next() reads the following frame into *frame (valid until the next call). Returns false at
  // the end of the stream, including a torn last frame. Throws StreamError on a corrupt frame.
  bool next(Frame* frame);

  // skim_snapshots() lists the reason, finality and time of every snapshot from the current
  // position on, reading only each frame's header and its INFO section, and then returns to the
  // current position; next() still reads and checks every frame. It stops quietly at anything
  // it cannot read (the full pass reports it). Empty when the stream is not seekable.
  std::vector<SnapshotMark> skim_snapshots();

  bool torn() const { return torn_; }
  uint64_t torn_offset() const { return torn_offset_; }
  const std::string& path() const { return path_; }

  // error() builds the one-line message for a fault in frame `index`.
  StreamError error(uint32_t index, uint64_t offset, const std::string& what) const;

 private:
  void read_file_header();

  std::string path_;
  std::unique_ptr<FILE, int (*)(FILE*)> file_;
  std::vector<uint8_t> buffer_;
  uint64_t offset_ = 0;
  int64_t file_size_ = -1;  // when the stream is seekable: frames claiming more are torn
  uint32_t index_ = 0;
  bool torn_ = false;
  uint64_t torn_offset_ = 0;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_STREAM_READER_H_
