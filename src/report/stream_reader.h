// File: stream_reader.h
//
// Reads a .lsc stream frame by frame, in constant memory: the only code that parses the framing
// (docs/FORMAT.md). A frame cut short at the end of the file (the process was killed while
// writing it) is reported through torn() and skipped. A damaged frame (a wrong marker, length,
// checksum or type: a flipped bit, a bad sector) loses nothing before it: the reader reports the
// damaged span (damaged()) and resumes at the next key snapshot, which holds the whole state, or
// ends there when none follows. Only a damaged file header or process frame is a StreamError, whose
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
  uint32_t index;   // 0-based position among the frames read
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
  uint64_t tracked_blocks;  // heap blocks in the allocation table (INFO)
  uint64_t parked_blocks;   // of those, kept on a runtime's free lists (INFO; 0 in older streams)
  uint64_t host_heap_bytes;  // live in the heap and c10_cpu domains (INFO; 0 in older streams)
};

// A stretch of the file that could not be read, and where reading went on.
struct DamagedSpan {
  uint64_t begin = 0;         // offset of the first damaged frame
  uint64_t end = 0;           // offset of the key snapshot read next, or the file's size
  std::string fault;          // what was wrong with the first frame ("bad checksum", ...)
  uint32_t frames_passed = 0;  // intact frames in between, passed over: no key came before them
  bool resumed = false;       // a key snapshot followed
};

class StreamReader {
 public:
  // Opens `path` and checks the file header. Throws StreamError (missing, a directory, empty,
  // foreign or a newer format version).
  explicit StreamReader(std::string path);

  // Reads an already open stream (taking ownership of `file`); `name` is used in messages.
  StreamReader(std::string name, FILE* file);
  ~StreamReader();

  // next() reads the following intact frame into *frame (valid until the next call). Returns
  // false at the end of the stream, including a torn last frame and damage no key snapshot
  // follows. Throws StreamError when the process frame is damaged.
  bool next(Frame* frame);

  // skim_snapshots() lists the reason, finality and time of every snapshot next() will return
  // from the current position on (passing over damage as next() does), checking each frame but
  // parsing only its INFO section, and then returns to the current position. Empty when the
  // stream is not seekable.
  std::vector<SnapshotMark> skim_snapshots();
  // restart() goes back to the first frame, to read the stream again through the file opened
  // first: a file replaced or deleted under the same name since is not read in its place. What
  // was found torn or damaged stays known. Throws StreamError when the file was rewritten in place
  // (check_unchanged()).
  void restart();
  // check_unchanged() throws StreamError when the file no longer begins as it did when opened, or
  // is shorter: rewritten in place (`cp` onto it) while it was read, so that what a later read
  // gives would be another stream's. A stream still being written only grows, and passes.
  void check_unchanged() const;

  // What next() or skim_snapshots() met: a torn last frame, damaged spans (each once).
  bool torn() const { return torn_; }
  // A stream read while its process writes it (a metrics scrape) ends in a frame half written as
  // a matter of course: set_being_written() says so, and readers then keep quiet about it.
  void set_being_written() { being_written_ = true; }
  bool being_written() const { return being_written_; }
  uint64_t torn_offset() const { return torn_offset_; }
  const std::vector<DamagedSpan>& damaged() const { return damaged_; }
  const std::string& path() const { return path_; }

  // error() builds the one-line message for a fault in frame `index`.
  StreamError error(uint32_t index, uint64_t offset, const std::string& what) const;

 private:
  class Cursor;
  void read_file_header();
  void note_damage(const DamagedSpan& span);

  std::string path_;
  std::unique_ptr<FILE, int (*)(FILE*)> file_;
  int64_t file_size_ = -1;  // when the stream is seekable: frames claiming more are torn
  std::vector<uint8_t> opening_;  // its first bytes when opened (the header and process frame among them)
  std::unique_ptr<Cursor> cursor_;
  uint32_t index_ = 0;     // of the next frame next() returns
  bool finished_ = false;  // next() met damage nothing follows
  bool torn_ = false;
  bool being_written_ = false;
  uint64_t torn_offset_ = 0;
  std::vector<DamagedSpan> damaged_;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_STREAM_READER_H_
