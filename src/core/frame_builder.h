// File: frame_builder.h
//
// FrameBuilder: one frame of the .lsc stream under construction in internal memory (stream_format.h
// gives the layout), for the snapshot writer and the section writers it calls. Runtime code: never
// allocates through malloc; not thread-safe (the writer holds its lock while it builds).
#ifndef LEAKSCOPE_CORE_FRAME_BUILDER_H_
#define LEAKSCOPE_CORE_FRAME_BUILDER_H_

#include <stdint.h>
#include <string.h>

#include "core/checksum.h"
#include "core/internal_alloc.h"
#include "core/stream_format.h"

namespace leakscope::internal {

// A failed reservation makes the builder sticky-failed; finish() then reports it and nothing is
// written.
class FrameBuilder {
 public:
  void start(FrameType type) {
    bytes_.clear();
    failed_ = !bytes_.resize(kFrameHeaderSize);
    type_ = type;
  }

  void varint(uint64_t value) {
    uint8_t* out = reserve(kMaxVarintSize);
    if (out != nullptr) bytes_.commit_size(static_cast<size_t>(varint_put(out, value) - bytes_.data()));
  }

  void signed_varint(int64_t value) { varint(zigzag_encode(value)); }

  void blob(const void* data, size_t size) {
    varint(size);
    uint8_t* out = reserve(size);
    if (out == nullptr) return;
    memcpy(out, data, size);
    bytes_.commit_size(bytes_.size() + size);
  }

  void string(const char* text) { blob(text, strlen(text)); }

  // A list section is written as tag, length, element count, elements. begin_list() returns a
  // mark for end_list(), which fills in the length, or takes the whole section back when the
  // list is empty: a snapshot in which nothing changed is a few dozen bytes.
  struct SectionMark {
    size_t start;    // where the tag begins
    size_t content;  // where the content begins
  };

  SectionMark begin_list(SectionTag tag, uint64_t count) {
    SectionMark mark{bytes_.size(), 0};
    varint(static_cast<uint64_t>(tag));
    uint8_t* out = reserve(kSectionLengthSize);
    if (out == nullptr) return mark;
    bytes_.commit_size(bytes_.size() + kSectionLengthSize);
    mark.content = bytes_.size();
    varint(count);
    return mark;
  }

  void end_list(SectionMark mark, uint64_t count) {
    if (failed_ || mark.content == 0) return;
    if (count == 0) {
      bytes_.commit_size(mark.start);
      return;
    }
    varint_put_padded(bytes_.data() + mark.content - kSectionLengthSize, bytes_.size() - mark.content);
  }

  // begin_record() and end_record() frame a section that is always written (INFO).
  SectionMark begin_record(SectionTag tag) {
    SectionMark mark = begin_list(tag, 0);
    if (mark.content != 0) bytes_.commit_size(mark.content);  // no element count
    return mark;
  }
  void end_record(SectionMark mark) {
    if (failed_ || mark.content == 0) return;
    varint_put_padded(bytes_.data() + mark.content - kSectionLengthSize, bytes_.size() - mark.content);
  }

  // finish() fills the frame header; returns false if building ran out of memory.
  bool finish() {
    if (failed_) return false;
    size_t payload = bytes_.size() - kFrameHeaderSize;
    if (payload > kMaxFramePayload) return false;
    uint8_t* header = bytes_.data();
    le32_put(header, kFrameMarker);
    le32_put(header + 4, static_cast<uint32_t>(type_));
    le32_put(header + 8, static_cast<uint32_t>(payload));
    uint32_t crc = crc32c_extend(0, header + 4, 8);
    crc = crc32c_extend(crc, header + kFrameHeaderSize, payload);
    le32_put(header + 12, crc);
    return true;
  }

  const uint8_t* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

  // trim() gives back a buffer grown for an unusually large frame (the first snapshot of a process
  // with hundreds of thousands of stacks), so it does not stay mapped for the rest of the run.
  void trim() {
    if (bytes_.size() > kKeptCapacity) bytes_.release();
  }

 private:
  uint8_t* reserve(size_t extra) {
    if (failed_ || !bytes_.reserve(bytes_.size() + extra)) {
      failed_ = true;
      return nullptr;
    }
    return bytes_.data() + bytes_.size();
  }

  InternalArray<uint8_t> bytes_;
  FrameType type_ = FrameType::kSnapshot;
  bool failed_ = false;
  static constexpr size_t kKeptCapacity = size_t{1} << 20;
};

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_FRAME_BUILDER_H_
