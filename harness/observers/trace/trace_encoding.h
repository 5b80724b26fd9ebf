// The compact form of a trace record, and its JSON rendering.
//
// A record is a run of 64-bit words:
//   header   object kind | object index << 8 | field count << 40
//   seq      the record's per-object sequence number
//   per field:
//     key    length | value type << 8 | unsigned << 15 | first 5 bytes << 24,
//            then the rest of the key's bytes, 8 per word
//     value  integer, flag, object (kind | index << 8): one word;
//            text: min(length, 255) | first 7 bytes << 8 (a length of
//            255 or more follows in a word), then 8 bytes per word;
//            work requests: count, then 3 words each;
//            completions: count, then 5 words each.
// Bytes are packed little-endian, so the words, and the hash over them,
// do not depend on where strings or records sit in memory.
#pragma once

#include "call_record.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace verbfault::observers::encoding {

// Appends `record` with sequence number `seq` to `out`.
void encode(const record::CallRecord& record, std::uint64_t seq, std::vector<std::uint64_t>& out);

// Renders the record that starts at words[0] as one JSON object (no
// newline) appended to `out`; returns how many words it used.
std::size_t render(std::span<const std::uint64_t> words, std::string& out);

}  // namespace verbfault::observers::encoding
