// F05 (Derecho-Project/derecho issue 141): after a peer died, the flush
// completions of the posted receives gave a garbage index, and indexing
// the completion entries with it crashed an unrelated node (segfault).
//
//   field_failure_F05 buggy|fixed
//
// A receiver, one polling thread: the peer writes into one of 4 slots and
// says which in the immediate data; the receiver's polling loop takes the
// slot index from wc.imm_data, counts the message in that slot's
// completion entry and posts the slot's receive again. The plan kills the
// receiving QP's peer while receives are posted (flush qp#1 nth=6: before
// the second re-post the QP goes to ERR, and every posted receive comes
// back flushed). imm_data is not defined for an error completion
// (ibv_poll_cq(3)); the simulated device leaves 0xa5a5a5a5 there, and the
// buggy loop indexes its 4 entries with it: SIGSEGV. The fixed loop checks
// the status first: a flushed receive means the connection is gone.
#include "loopback_pair.h"

#include <vector>

namespace {

using field_failures::fail;
using field_failures::Pair;

constexpr uint32_t kSlots = 4;
constexpr uint64_t kMessages = 8;
constexpr uint64_t kFirstReceive = 1000;

struct CompletionEntry {
  uint64_t messages = 0;
};

void f05(bool fixed) {
  Pair p;
  std::vector<CompletionEntry> entries(kSlots);
  for (uint32_t slot = 0; slot < kSlots; ++slot)
    if (p.receive(p.b, kFirstReceive + slot, slot)) fail("ibv_post_recv", errno);
  uint64_t sent = 0, received = 0;
  bool connected = true;
  while (connected && received < kMessages) {
    if (sent < kMessages && sent - received < kSlots) {
      const uint32_t slot = uint32_t(sent % kSlots);
      if (p.send(p.a, ++sent, 8, &slot)) fail("ibv_post_send", errno);
    }
    ibv_wc wc[4];
    const int n = p.poll(4, wc);
    for (int i = 0; i < n && connected; ++i) {
      if (wc[i].qp_num != p.b->qp_num) continue;  // the sender's side
      if (fixed && wc[i].status != IBV_WC_SUCCESS) {
        std::printf("field_failure_F05: peer gone (%s)\n", ibv_wc_status_str(wc[i].status));
        connected = false;
        break;
      }
      const uint32_t slot = wc[i].imm_data;  // undefined on error
      ++entries[slot].messages;
      ++received;
      (void)p.receive(p.b, kFirstReceive + slot, slot);
    }
  }
  p.teardown();
  std::printf("field_failure_F05: %llu messages received\n",
              static_cast<unsigned long long>(received));
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f05);
}
