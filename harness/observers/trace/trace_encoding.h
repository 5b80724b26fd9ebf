// A trace record's JSON rendering (the hash: trace_hash.h).
#pragma once

#include "call_record.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace verbfault::observers::encoding {

// Where JSON is rendered: a growable byte buffer that is never zero-filled
// (rendering reserves room ahead, then writes through a pointer).
class TextBuffer {
 public:
  // Room for `bytes` more bytes: where to write them.
  char* reserve(std::size_t bytes) {
    if (capacity_ - size_ < bytes) grow(bytes);
    return data_.get() + size_;
  }
  // The bytes written up to `end` (a pointer reserve() returned, advanced)
  // are kept.
  void commit(const char* end) { size_ = static_cast<std::size_t>(end - data_.get()); }
  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::string_view view() const { return {data_.get(), size_}; }
  void clear() { size_ = 0; }

 private:
  void grow(std::size_t bytes);
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// Renders `record` with sequence number `seq` as one JSON object and a
// newline, appended to `out`.
void render(const record::CallRecord& record, std::uint64_t seq, TextBuffer& out);

}  // namespace verbfault::observers::encoding
