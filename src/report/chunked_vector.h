// File: chunked_vector.h
//
// ChunkedVector: a vector held in chunks of a fixed power-of-two number of elements, for the
// tables that grow with the number of stacks and sites as a stream is read. It never moves what
// it holds: a std::vector of a few hundred thousand sites copies itself into a buffer twice its
// size as it grows, both held at once, and a std::deque splits it into blocks of a few elements,
// each found by a division. The elements of one chunk are contiguous: a run of them that does not
// cross a multiple of kChunk can be read through one pointer.
#ifndef LEAKSCOPE_REPORT_CHUNKED_VECTOR_H_
#define LEAKSCOPE_REPORT_CHUNKED_VECTOR_H_

#include <cstddef>
#include <memory>
#include <vector>

namespace leakscope::report {

template <typename T, size_t kChunkBits = 12>
class ChunkedVector {
 public:
  static constexpr size_t kChunk = size_t{1} << kChunkBits;

  ChunkedVector() = default;
  explicit ChunkedVector(size_t count) { grow(count); }

  size_t size() const { return size_; }
  T& operator[](size_t index) { return chunks_[index >> kChunkBits][index & (kChunk - 1)]; }
  const T& operator[](size_t index) const { return chunks_[index >> kChunkBits][index & (kChunk - 1)]; }
  T& back() { return (*this)[size_ - 1]; }

  // emplace_back() appends a default element and returns it.
  T& emplace_back() {
    grow(size_ + 1);
    return back();
  }
  void push_back(const T& value) { emplace_back() = value; }

  // grow() appends default elements up to `count`; it never shrinks (a smaller `count` does nothing).
  void grow(size_t count) {
    while (chunks_.size() * kChunk < count) chunks_.push_back(std::make_unique<T[]>(kChunk));
    if (count > size_) size_ = count;
  }

 private:
  // Elements past size_ in the last chunk are default ones, made with it: growing hands them out.
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_CHUNKED_VECTOR_H_
