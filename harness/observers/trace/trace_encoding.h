// The compact form of a trace record, and its JSON rendering.
//
// A record is a run of 64-bit words, each either hashed (it is part of
// what the trace hash covers) or a side word (only kept for rendering):
//   header   object kind | object index << 8 | field count << 40   hashed
//   seq      the record's per-object sequence number                hashed
//   per field:
//     key    the key's compile-time id ^ its value type << 56       hashed
//            the key's text: address | length << 48 | type << 56    side
//     value  integer, flag, object (kind | index << 8): one word;
//            text: min(length, 255) | first 7 bytes << 8 (a length of
//            255 or more follows in a word), then 8 bytes per word;
//            work requests: count, then 3 words each;
//            completions: count, then 5 words each.                 hashed
// Bytes are packed little-endian and keys are hashed by id, so the hash
// does not depend on where strings or records sit in memory. Without a
// trace file nothing is stored: the words are hashed as they are made.
#pragma once

#include "call_record.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace verbfault::observers::encoding {

// Hashes `record` with sequence number `seq` into `hash` (FNV-1a over its
// hashed words) and, when `out` is not null, appends all its words to it.
void encode(const record::CallRecord& record, std::uint64_t seq, std::uint64_t& hash,
            std::vector<std::uint64_t>* out);

// Renders the record that starts at words[0] as one JSON object (no
// newline) appended to `out`; returns how many words it used.
std::size_t render(std::span<const std::uint64_t> words, std::string& out);

}  // namespace verbfault::observers::encoding
