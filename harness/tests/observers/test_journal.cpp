// The trace journal renders exactly what the trace would have rendered
// from the records themselves: every value type, repeated and changing
// texts (a caller's buffer reused with other contents), shapes that come
// back, a journal cut short (a killed process), and malformed bytes.
#include "journal.h"
#include "trace_encoding.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace verbfault::observers {
namespace {

using record::CallRecord;

struct Pair {
  encoding::TextBuffer journal;
  encoding::TextBuffer expected;
  journal::Writer writer;
  Pair() { EXPECT_TRUE(writer.start(journal)); }
  void add(const CallRecord& record, std::uint64_t seq) {
    ASSERT_TRUE(writer.append(record, seq, journal));
    encoding::render(record, seq, expected);
  }
  std::string rendered(long long* records = nullptr) {
    encoding::TextBuffer out;
    std::string error;
    const long long n = journal::render(journal.view(), out, error);
    EXPECT_GE(n, 0) << error;
    if (records != nullptr) *records = n;
    return std::string(out.view());
  }
};

TEST(Journal, RendersWhatTheRecordsRenderForEveryValueType) {
  Pair pair;
  const ObjectRef qp{ObjectKind::qp, 1};
  std::vector<record::WrSummary> wrs(2);
  wrs[0].wr_id = 7;
  wrs[0].length = 64;
  wrs[0].flags = IBV_SEND_SIGNALED;
  wrs[0].opcode = 0;
  wrs[0].has_flags = true;
  wrs[1].wr_id = ~0ull;
  wrs[1].has_length = false;
  ibv_wc wc[2]{};
  wc[0].wr_id = 9;
  wc[0].status = IBV_WC_SUCCESS;
  wc[0].opcode = IBV_WC_RECV;
  wc[0].byte_len = 64;
  wc[0].wc_flags = IBV_WC_WITH_IMM;
  wc[0].imm_data = 0xdeadbeef;
  wc[0].qp_num = 0x11;
  std::memset(&wc[1], 0xa5, sizeof wc[1]);
  wc[1].status = IBV_WC_WR_FLUSH_ERR;
  wc[1].qp_num = 0x99;
  const record::ObjectId qps[2] = {{0, qp},
                                   {record::kNoSlot, {ObjectKind::qp, record::kUnknownIndex}}};
  pair.add(CallRecord({0, qp})
               .add("call", "post_send")
               .add("wrs", std::span<const record::WrSummary>(wrs))
               .add("ret", -12)
               .add("big", ~0ull)
               .add("flag", true)
               .add("parent", ObjectRef{ObjectKind::pd, 0}),
           0);
  pair.add(CallRecord({1, {ObjectKind::cq, 0}})
               .add("call", "poll_cq")
               .add("max", 16)
               .add("ret", 2)
               .add("wc", record::Completions{wc, qps, 2}),
           123456789);
  long long records = 0;
  EXPECT_EQ(pair.rendered(&records), std::string(pair.expected.view()));
  EXPECT_EQ(records, 2);
}

TEST(Journal, SequenceNumbersAreCountedPerAddedObjectAndStartAgainInAReusedSlot) {
  Pair pair;
  const record::ObjectId qp{0, {ObjectKind::qp, 0}};
  ASSERT_TRUE(pair.writer.object_added(qp, pair.journal));
  for (std::uint64_t seq = 0; seq < 3; ++seq)
    pair.add(CallRecord(qp).add("call", "post_send").add("ret", 0), seq);
  // The QP is gone; a CQ takes its slot: its records count from 0.
  const record::ObjectId cq{0, {ObjectKind::cq, 5}};
  ASSERT_TRUE(pair.writer.object_added(cq, pair.journal));
  pair.add(CallRecord(cq).add("call", "poll_cq").add("max", 1).add("ret", 0), 0);
  pair.add(CallRecord(cq).add("call", "poll_cq").add("max", 1).add("ret", 0), 1);
  // An object the journal never saw added carries its own number.
  pair.add(CallRecord({7, {ObjectKind::pd, 2}}).add("call", "dealloc_pd").add("ret", 0), 42);
  EXPECT_EQ(pair.rendered(), std::string(pair.expected.view()));
}

TEST(Journal, ATextInAReusedBufferIsWrittenAgainWhenItChanges) {
  Pair pair;
  char buffer[16];
  const char* texts[] = {"EAGAIN", "EAGAIN", "ENOMEM",
                         "ENOMEM", "EAGAIN", "a longer text than thirty-one bytes"};
  std::uint64_t seq = 0;
  for (const char* text : texts) {
    std::string long_text;
    std::string_view value;
    if (std::strlen(text) < sizeof buffer) {
      std::strcpy(buffer, text);  // the same address every time
      value = buffer;
    } else {
      long_text = text;
      value = long_text;
    }
    pair.add(CallRecord({0, {ObjectKind::qp, 0}}).add("call", "post_send").add("errno", value),
             seq++);
  }
  EXPECT_EQ(pair.rendered(), std::string(pair.expected.view()));
}

TEST(Journal, AJournalCutShortRendersTheWholeRecordsBeforeTheCut) {
  Pair pair;
  for (std::uint64_t seq = 0; seq < 3; ++seq)
    pair.add(
        CallRecord({0, {ObjectKind::cq, 0}}).add("call", "poll_cq").add("max", 4).add("ret", 0),
        seq);
  const std::string whole(pair.journal.view());
  encoding::TextBuffer out;
  std::string error;
  // Cut inside the last record: two records come back, no error.
  EXPECT_EQ(journal::render(std::string_view(whole).substr(0, whole.size() - 1), out, error), 2)
      << error;
  // A zero byte where a tag is due (the unwritten rest of a mapping) ends it.
  std::string padded = whole + std::string(64, '\0');
  out.clear();
  EXPECT_EQ(journal::render(padded, out, error), 3) << error;
  EXPECT_EQ(std::string(out.view()), std::string(pair.expected.view()));
}

// A SIGKILL stops the writer at any byte: what it had stored is in the
// mapping, the rest of it is zeros (journal.h). Cut at every byte of a
// journal with every kind of entry (shapes, objects, each value type,
// repeated texts), the zero-filled journal must render whole records
// only, the first ones of the run: never an error, never a record whose
// missing bytes read as zeros.
TEST(Journal, AJournalCutAtAnyByteAndZeroFilledRendersAPrefixOfWholeRecords) {
  Pair pair;
  const ObjectRef qp{ObjectKind::qp, 1};
  ASSERT_TRUE(pair.writer.object_added({3, qp}, pair.journal));
  record::WrSummary wrs[1];
  wrs[0].wr_id = 7;
  wrs[0].length = 64;
  wrs[0].flags = IBV_SEND_SIGNALED;
  wrs[0].opcode = 1;
  wrs[0].has_flags = true;
  ibv_wc wc[1] = {};
  wc[0].wr_id = 300;
  wc[0].byte_len = 4096;
  wc[0].qp_num = 17;
  const record::ObjectId wc_qp[1] = {{3, qp}};
  for (std::uint64_t seq = 0; seq < 3; ++seq) {
    pair.add(CallRecord({3, qp})
                 .add("call", "post_send")
                 .add("wrs", std::span<const record::WrSummary>(wrs))
                 .add("ret", 300 + static_cast<int>(seq))
                 .add("errno", seq == 1 ? "EINVAL" : "ENOMEM"),
             seq);
    pair.add(CallRecord({0, {ObjectKind::cq, 2}})
                 .add("call", "poll_cq")
                 .add("max", 4)
                 .add("wcs", record::Completions{wc, wc_qp, 1})
                 .add("armed", seq != 1)
                 .add("qp", qp)
                 .add("ret", 1),
             seq);
  }
  const std::string whole(pair.journal.view());
  const std::string expected(pair.expected.view());
  for (std::size_t cut = 0; cut <= whole.size(); ++cut) {
    const std::string killed = whole.substr(0, cut) + std::string(whole.size() - cut + 64, '\0');
    encoding::TextBuffer out;
    std::string error;
    const long long records = journal::render(killed, out, error);
    ASSERT_GE(records, 0) << "cut at byte " << cut << ": " << error;
    const std::string text(out.view());
    EXPECT_EQ(expected.substr(0, text.size()), text) << "cut at byte " << cut;
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "cut at byte " << cut;
    if (cut == whole.size()) {
      EXPECT_EQ(text, expected);
    }
  }
}

TEST(Journal, BytesThatAreNotAJournalAreAnErrorOfOneLine) {
  encoding::TextBuffer out;
  std::string error;
  EXPECT_EQ(journal::render("{\"obj\":\"qp#0\"}\n", out, error), -1);
  EXPECT_NE(error.find("not a verbfault trace journal"), std::string::npos) << error;
  std::string bad(journal::kMagic);
  bad += "X";
  EXPECT_EQ(journal::render(bad, out, error), -1);
  EXPECT_NE(error.find("malformed journal"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace verbfault::observers
