#include "report/stream_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checksum.h"

namespace leakscope::report {

using namespace leakscope::internal;

namespace {

constexpr size_t kScanChunk = 64 * 1024;

bool known_type(uint32_t type) {
  return type == static_cast<uint32_t>(FrameType::kProcess) || type == static_cast<uint32_t>(FrameType::kSnapshot) ||
         type == static_cast<uint32_t>(FrameType::kKeySnapshot);
}

}  // namespace

// Cursor walks the frames of a file from an offset, with its own position: each read seeks
// first, so the skim and the main pass can share the FILE.
class StreamReader::Cursor {
 public:
  enum class Read { kFrame, kEnd, kTorn, kDamaged };

  Cursor(FILE* file, int64_t file_size, uint64_t offset) : file_(file), file_size_(file_size), offset_(offset) {}

  // read() reads the frame at the position: kFrame (then the position moves past it), kEnd at a
  // frame boundary at the end of the file, kTorn for a frame cut short by the end, kDamaged (with
  // *fault) for anything else.
  Read read(std::string* fault) {
    uint8_t header[kFrameHeaderSize];
    if (fseek(file_, static_cast<long>(offset_), SEEK_SET) != 0) return Read::kEnd;
    size_t got = fread(header, 1, sizeof(header), file_);
    if (got == 0) return Read::kEnd;
    if (got < sizeof(header)) return Read::kTorn;
    if (le32_get(header) != kFrameMarker) return damaged(fault, "bad frame marker");
    type_ = le32_get(header + 4);
    uint32_t size = le32_get(header + 8);
    if (size > kMaxFramePayload) return damaged(fault, "frame length " + std::to_string(size) + " is implausible");
    // Never allocate for bytes the file does not have. Such a frame is torn when it is the last
    // thing written; when an intact frame follows, its length was damaged instead.
    if (file_size_ >= 0 && offset_ + sizeof(header) + size > static_cast<uint64_t>(file_size_)) {
      if (!scanning_ && intact_frame_after(offset_ + 1)) {
        return damaged(fault, "frame length " + std::to_string(size) + " runs past the end of the file, yet intact frames follow");
      }
      return Read::kTorn;
    }
    payload_.resize(size);
    if (fread(payload_.data(), 1, size, file_) < size) return Read::kTorn;
    if (crc32c_extend(crc32c_extend(0, header + 4, 8), payload_.data(), size) != le32_get(header + 12)) {
      return damaged(fault, "bad checksum");
    }
    if (!known_type(type_)) return damaged(fault, "unknown frame type " + std::to_string(type_));
    frame_offset_ = offset_;
    offset_ += sizeof(header) + size;
    return Read::kFrame;
  }

  // resume() looks past damage at `from` for the next key snapshot, passing over the intact frames
  // before it (counted in *passed): they hold changes against a state that was lost. True when it
  // is found, read and ready (the position is past it).
  bool resume(uint64_t from, uint32_t* passed) {
    return scan(from, [&]() {
      if (type_ == static_cast<uint32_t>(FrameType::kKeySnapshot)) return true;
      ++*passed;
      return false;
    });
  }

  uint64_t offset() const { return offset_; }
  uint64_t frame_offset() const { return frame_offset_; }
  uint32_t type() const { return type_; }
  const std::vector<uint8_t>& payload() const { return payload_; }
  // release_payload() lets go of the last frame's bytes: the room kept for the largest frame read
  // (a key snapshot of a few hundred thousand definitions: megabytes) is not held while a reader
  // works on what it read.
  void release_payload() { std::vector<uint8_t>().swap(payload_); }

 private:
  // intact_frame_after() tells whether a whole frame, of any type, begins at or after `from`; the
  // position is left as it was.
  bool intact_frame_after(uint64_t from) {
    uint64_t position = offset_;
    scanning_ = true;
    bool found = scan(from, [] { return true; });
    scanning_ = false;
    offset_ = position;
    return found;
  }

  // scan() reads each whole frame found at or after `from`, at each place the marker's four bytes
  // appear, until wanted() is true for one (true; the position is past it) or the file ends.
  template <typename Wanted>
  bool scan(uint64_t from, Wanted&& wanted) {
    uint64_t at = from;
    std::vector<uint8_t> chunk(kScanChunk + 3);
    for (;;) {
      // The next place the marker's four bytes appear.
      if (fseek(file_, static_cast<long>(at), SEEK_SET) != 0) return false;
      size_t got = fread(chunk.data(), 1, chunk.size(), file_);
      if (got < 4) return false;
      size_t found = SIZE_MAX;
      for (size_t i = 0; i + 4 <= got; ++i) {
        if (le32_get(chunk.data() + i) == kFrameMarker) {
          found = i;
          break;
        }
      }
      if (found == SIZE_MAX) {
        at += got - 3;
        continue;
      }
      offset_ = at + found;
      std::string fault;
      if (read(&fault) != Read::kFrame) {
        at = at + found + 1;
        continue;
      }
      if (wanted()) return true;
      at = offset_;
    }
  }

  Read damaged(std::string* fault, const std::string& what) {
    *fault = what;
    return Read::kDamaged;
  }

  FILE* file_;
  int64_t file_size_;
  uint64_t offset_;
  uint64_t frame_offset_ = 0;
  uint32_t type_ = 0;
  std::vector<uint8_t> payload_;
  bool scanning_ = false;  // in intact_frame_after(): a frame past the end is only torn
};

StreamReader::StreamReader(std::string path) : path_(std::move(path)), file_(nullptr, fclose) {
  // Not blocking: a FIFO nobody writes to would hold the open forever.
  int descriptor = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (descriptor < 0) throw StreamError(path_ + ": " + std::strerror(errno));
  struct stat status;
  if (fstat(descriptor, &status) == 0 && !S_ISREG(status.st_mode)) {
    close(descriptor);
    if (S_ISDIR(status.st_mode)) throw StreamError(path_ + ": is a directory, not a leakscope stream");
    // A stream is read more than once (where its snapshots are, then each one): it must be a file.
    throw StreamError(path_ + ": is not a regular file (a pipe or a device); save the stream to a file and read that");
  }
  fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK);
  file_.reset(fdopen(descriptor, "rb"));
  if (!file_) {
    close(descriptor);
    throw StreamError(path_ + ": " + std::strerror(errno));
  }
  read_file_header();
}

StreamReader::StreamReader(std::string name, FILE* file) : path_(std::move(name)), file_(file, fclose) {
  if (!file_) throw StreamError(path_ + ": cannot be read");
  read_file_header();
}

StreamReader::~StreamReader() = default;

void StreamReader::read_file_header() {
  if (fseek(file_.get(), 0, SEEK_END) == 0) {
    file_size_ = ftell(file_.get());
    rewind(file_.get());
  }
  if (file_size_ > 0) {
    constexpr int64_t kOpeningBytes = 4096;
    opening_.resize(static_cast<size_t>(std::min(file_size_, kOpeningBytes)));
    if (pread(fileno(file_.get()), opening_.data(), opening_.size(), 0) != static_cast<ssize_t>(opening_.size())) opening_.clear();
  }
  uint8_t header[kFileHeaderSize];
  size_t got = fread(header, 1, sizeof(header), file_.get());
  if (got == 0) throw StreamError(path_ + ": empty file (the process wrote nothing; was it traced?)");
  if (got < sizeof(kFileMagic) || memcmp(header, kFileMagic, sizeof(kFileMagic)) != 0) {
    throw StreamError(path_ + ": not a leakscope stream (bad magic)");
  }
  if (got < sizeof(header)) throw StreamError(path_ + ": truncated file header");
  uint32_t version = le32_get(header + 8);
  if (version != kFormatVersion) {
    throw StreamError(path_ + ": unsupported format version " + std::to_string(version) +
                      " (this leakscope reads version " + std::to_string(kFormatVersion) + ")");
  }
  cursor_ = std::make_unique<Cursor>(file_.get(), file_size_, kFileHeaderSize);
}

void StreamReader::check_unchanged() const {
  if (file_size_ < 0) return;
  int descriptor = fileno(file_.get());
  struct stat status;
  std::vector<uint8_t> now(opening_.size());
  bool same = fstat(descriptor, &status) == 0 && status.st_size >= file_size_ &&
              pread(descriptor, now.data(), now.size(), 0) == static_cast<ssize_t>(now.size()) && now == opening_;
  if (!same) throw StreamError(path_ + ": rewritten while it was read; read a copy that nothing writes to");
}

void StreamReader::restart() {
  check_unchanged();
  cursor_ = std::make_unique<Cursor>(file_.get(), file_size_, kFileHeaderSize);
  index_ = 0;
  finished_ = false;
}

StreamError StreamReader::error(uint32_t index, uint64_t offset, const std::string& what) const {
  return StreamError(path_ + ": frame " + std::to_string(index) + " at offset " + std::to_string(offset) +
                     ": " + what);
}

void StreamReader::note_damage(const DamagedSpan& span) {
  for (const DamagedSpan& known : damaged_) {
    if (known.begin == span.begin) return;
  }
  damaged_.push_back(span);
}

bool StreamReader::next(Frame* frame) {
  if (finished_) return false;
  uint64_t at = cursor_->offset();
  std::string fault;
  switch (cursor_->read(&fault)) {
    case Cursor::Read::kEnd:
      cursor_->release_payload();
      return false;
    case Cursor::Read::kTorn:
      torn_ = true;
      torn_offset_ = at;
      cursor_->release_payload();
      return false;
    case Cursor::Read::kDamaged: {
      if (at == kFileHeaderSize) throw error(0, at, fault);  // the process frame: no state to resume from
      DamagedSpan span;
      span.begin = at;
      span.fault = fault;
      span.resumed = cursor_->resume(at + 1, &span.frames_passed);
      span.end = span.resumed ? cursor_->frame_offset() : static_cast<uint64_t>(std::max<int64_t>(file_size_, 0));
      note_damage(span);
      if (!span.resumed) {
        finished_ = true;
        cursor_->release_payload();
        return false;
      }
      break;
    }
    case Cursor::Read::kFrame:
      break;
  }
  frame->type = static_cast<FrameType>(cursor_->type());
  frame->index = index_++;
  frame->offset = cursor_->frame_offset();
  frame->payload = cursor_->payload().data();
  frame->size = cursor_->payload().size();
  return true;
}

std::vector<SnapshotMark> StreamReader::skim_snapshots() {
  std::vector<SnapshotMark> marks;
  if (file_size_ < 0) return marks;
  Cursor cursor(file_.get(), file_size_, cursor_->offset());
  for (;;) {
    uint64_t at = cursor.offset();
    std::string fault;
    Cursor::Read read = cursor.read(&fault);
    if (read == Cursor::Read::kDamaged) {
      if (at == kFileHeaderSize) break;  // next() reports it
      DamagedSpan span;
      span.begin = at;
      span.fault = fault;
      span.resumed = cursor.resume(at + 1, &span.frames_passed);
      span.end = span.resumed ? cursor.frame_offset() : static_cast<uint64_t>(file_size_);
      note_damage(span);
      if (!span.resumed) break;
    } else if (read == Cursor::Read::kTorn) {
      torn_ = true;
      torn_offset_ = at;
      break;
    } else if (read != Cursor::Read::kFrame) {
      break;
    }
    if (cursor.type() == static_cast<uint32_t>(FrameType::kProcess)) continue;
    // INFO comes first: tag, padded length, then epoch, time, wall time, reason, signal, final,
    // seven RSS figures, leakscope's own memory, the heap blocks tracked, then (in newer streams)
    // the reserved bytes, budget stage, peak own memory, device tracking, the blocks parked and the
    // host heap bytes.
    const uint8_t* field = cursor.payload().data();
    const uint8_t* end = field + cursor.payload().size();
    uint64_t tag = 0, length = 0, epoch = 0, time = 0, wall = 0, reason = 0, signal = 0, final = 0;
    if (!varint_get(&field, end, &tag) || tag != static_cast<uint64_t>(SectionTag::kInfo) || !varint_get(&field, end, &length)) {
      break;
    }
    // Fields a stream's INFO does not hold (an older writer's) are not read from what follows it.
    if (length < static_cast<uint64_t>(end - field)) end = field + length;
    if (!varint_get(&field, end, &epoch) || !varint_get(&field, end, &time) || !varint_get(&field, end, &wall) ||
        !varint_get(&field, end, &reason) || !varint_get(&field, end, &signal) || !varint_get(&field, end, &final)) {
      break;
    }
    uint64_t figure = 0, blocks = 0;
    bool figures = true;
    for (int i = 0; i < 8 && figures; ++i) figures = varint_get(&field, end, &figure);
    if (!figures || !varint_get(&field, end, &blocks)) blocks = 0;  // damage, said when the snapshot is read
    uint64_t parked = 0, heap_bytes = 0;
    bool later = true;
    for (int i = 0; i < 4 && later; ++i) later = varint_get(&field, end, &figure);
    if (!later || !varint_get(&field, end, &parked) || parked > blocks) parked = 0;
    if (!later || !varint_get(&field, end, &heap_bytes)) heap_bytes = 0;
    marks.push_back({static_cast<SnapshotReason>(reason), static_cast<uint32_t>(signal), final != 0, time, blocks, parked,
                     heap_bytes});
  }
  return marks;
}

}  // namespace leakscope::report
