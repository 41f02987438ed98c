#include "report/stream_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/stat.h>

#include "core/checksum.h"

namespace leakscope::report {

using namespace leakscope::internal;

StreamReader::StreamReader(std::string path) : path_(std::move(path)), file_(nullptr, fclose) {
  file_.reset(fopen(path_.c_str(), "rb"));
  if (!file_) throw StreamError(path_ + ": " + std::strerror(errno));
  struct stat status;
  if (fstat(fileno(file_.get()), &status) == 0 && S_ISDIR(status.st_mode)) {
    throw StreamError(path_ + ": is a directory, not a leakscope stream");
  }
  read_file_header();
}

StreamReader::StreamReader(std::string name, FILE* file) : path_(std::move(name)), file_(file, fclose) {
  if (!file_) throw StreamError(path_ + ": cannot be read");
  read_file_header();
}

void StreamReader::read_file_header() {
  if (fseek(file_.get(), 0, SEEK_END) == 0) {
    file_size_ = ftell(file_.get());
    rewind(file_.get());
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
  offset_ = kFileHeaderSize;
}

StreamError StreamReader::error(uint32_t index, uint64_t offset, const std::string& what) const {
  return StreamError(path_ + ": frame " + std::to_string(index) + " at offset " + std::to_string(offset) +
                     ": " + what);
}

bool StreamReader::next(Frame* frame) {
  uint8_t header[kFrameHeaderSize];
  size_t got = fread(header, 1, sizeof(header), file_.get());
  if (got == 0) return false;
  auto torn_here = [&] {
    torn_ = true;
    torn_offset_ = offset_;
    return false;
  };
  if (got < sizeof(header)) return torn_here();
  if (le32_get(header) != kFrameMarker) throw error(index_, offset_, "bad frame marker");
  uint32_t type = le32_get(header + 4);
  uint32_t size = le32_get(header + 8);
  uint32_t checksum = le32_get(header + 12);
  if (size > kMaxFramePayload) throw error(index_, offset_, "frame length " + std::to_string(size) + " is implausible");
  // Never allocate for bytes the file does not have: such a frame can only be torn.
  if (file_size_ >= 0 && offset_ + sizeof(header) + size > static_cast<uint64_t>(file_size_)) return torn_here();
  buffer_.resize(size);
  if (fread(buffer_.data(), 1, size, file_.get()) < size) return torn_here();
  uint32_t computed = crc32c_extend(crc32c_extend(0, header + 4, 8), buffer_.data(), size);
  if (computed != checksum) throw error(index_, offset_, "bad checksum");
  if (type != static_cast<uint32_t>(FrameType::kProcess) && type != static_cast<uint32_t>(FrameType::kSnapshot)) {
    throw error(index_, offset_, "unknown frame type " + std::to_string(type));
  }
  frame->type = static_cast<FrameType>(type);
  frame->index = index_++;
  frame->offset = offset_;
  frame->payload = buffer_.data();
  frame->size = size;
  offset_ += sizeof(header) + size;
  return true;
}

std::vector<SnapshotMark> StreamReader::skim_snapshots() {
  std::vector<SnapshotMark> marks;
  long resume = ftell(file_.get());
  if (resume < 0) return marks;
  for (;;) {
    uint8_t header[kFrameHeaderSize];
    long at = ftell(file_.get());
    size_t got = fread(header, 1, sizeof(header), file_.get());
    auto torn_here = [&] {
      torn_ = true;  // as next() would find it, so that a read that stops earlier still warns
      torn_offset_ = static_cast<uint64_t>(at);
    };
    if (got > 0 && got < sizeof(header)) torn_here();
    if (got < sizeof(header) || le32_get(header) != kFrameMarker) break;
    uint32_t type = le32_get(header + 4), size = le32_get(header + 8);
    if (size > kMaxFramePayload) break;
    long next = at + static_cast<long>(sizeof(header) + size);
    if (file_size_ >= 0 && next > file_size_) {
      torn_here();  // next() skips it too
      break;
    }
    if (type == static_cast<uint32_t>(FrameType::kSnapshot)) {
      // INFO comes first: tag, padded length, then epoch, time, wall time, reason, signal, final.
      uint8_t info[64];
      size_t got = fread(info, 1, std::min<size_t>(sizeof(info), size), file_.get());
      const uint8_t* cursor = info;
      const uint8_t* end = info + got;
      uint64_t tag = 0, length = 0, epoch = 0, time = 0, wall = 0, reason = 0, signal = 0, final = 0;
      if (!varint_get(&cursor, end, &tag) || tag != static_cast<uint64_t>(SectionTag::kInfo) ||
          !varint_get(&cursor, end, &length) || !varint_get(&cursor, end, &epoch) || !varint_get(&cursor, end, &time) ||
          !varint_get(&cursor, end, &wall) || !varint_get(&cursor, end, &reason) || !varint_get(&cursor, end, &signal) ||
          !varint_get(&cursor, end, &final)) {
        break;
      }
      marks.push_back({static_cast<SnapshotReason>(reason), static_cast<uint32_t>(signal), final != 0, time});
    }
    if (fseek(file_.get(), next, SEEK_SET) != 0) break;
  }
  fseek(file_.get(), resume, SEEK_SET);
  return marks;
}

}  // namespace leakscope::report
