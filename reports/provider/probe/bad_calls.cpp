// The errno of calls that must fail. Most man pages say only that the
// call fails ("returns NULL", "the value of errno on failure"); where they
// name no errno, a check conforms when the call fails, and the errno it
// gave is the observed value (the side-by-side table compares them). The
// rules: ibv_reg_mr(3) (REMOTE_WRITE needs LOCAL_WRITE), the device limits
// of ibv_query_device(3) (max_cqe, max_qp_wr, max_sge), ibv_post_send(3)
// and IBA 11.4.1 (a WR the QP cannot take is an immediate error: too many
// SGEs, inline data above max_inline_data, a full queue, a QP whose state
// takes no WRs: IBA 10.3.1 lets RESET take none and INIT only receives),
// and the destroys that fail while something still uses the object
// (ibv_alloc_pd(3), ibv_create_cq(3), ibv_create_comp_channel(3),
// ibv_create_srq(3)).
#include "areas.h"
#include "verbs_kit.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace verbfault::probe {

namespace {

// A call that must fail: conforms when it does; the errno is the value.
Check must_fail(const About& about, int err) {
  return Check{about.id,
               about.title,
               about.spec,
               about.expected,
               outcome(err),
               errno_name(err),
               err != 0 ? Verdict::conforms : Verdict::deviates,
               ""};
}

int errno_or_unknown() {
  return errno != 0 ? errno : -1;
}

}  // namespace

void probe_bad_calls(const std::string& device, CheckSink& sink) {
  std::string why;
  auto dev = open_device(device, &why);
  ibv_cq* cq = dev ? ibv_create_cq(dev->ctx, 256, nullptr, nullptr, 0) : nullptr;
  const About reg_access{"bad_calls.reg_mr_remote_write_without_local_write",
                         "ibv_reg_mr with IBV_ACCESS_REMOTE_WRITE and no LOCAL_WRITE",
                         "ibv_reg_mr(3)", "fails with EINVAL"};
  if (cq == nullptr) {
    sink.add(inconclusive(reg_access, dev ? "ibv_create_cq failed" : why));
    return;
  }
  std::vector<uint8_t> bytes(4096);
  {
    errno = 0;
    ibv_mr* mr = ibv_reg_mr(dev->pd, bytes.data(), bytes.size(), IBV_ACCESS_REMOTE_WRITE);
    sink.add(errno_check(reg_access, EINVAL, mr ? 0 : errno_or_unknown()));
  }
  {
    const About about{"bad_calls.reg_mr_unmapped", "ibv_reg_mr of an address range not mapped",
                      "ibv_reg_mr(3)", "fails (the kernel pins nothing there: EFAULT)"};
    // A page below vm.mmap_min_addr (65536 by default), which nothing can
    // map. Not a page mapped and unmapped here: mmap(2) places memory top
    // down, so the next mapping of anyone's (AddressSanitizer's allocator,
    // inside this very ibv_reg_mr) may fill that hole before the provider
    // looks (the sanitized suite saw this check flip to "succeeds").
    const long page = sysconf(_SC_PAGESIZE);
    void* gone = reinterpret_cast<void*>(2 * static_cast<std::uintptr_t>(page));
    if (msync(gone, static_cast<std::size_t>(page), MS_ASYNC) == 0 || errno != ENOMEM) {
      sink.add(inconclusive(about, "no unmapped page below vm.mmap_min_addr"));
    } else {
      errno = 0;
      ibv_mr* mr = ibv_reg_mr(dev->pd, gone, page, IBV_ACCESS_LOCAL_WRITE);
      sink.add(must_fail(about, mr ? 0 : errno_or_unknown()));
    }
  }
  {
    const About about{"bad_calls.create_cq_above_max_cqe", "ibv_create_cq with cqe = max_cqe + 1",
                      "ibv_create_cq(3); ibv_query_device(3) (max_cqe)", "fails (EINVAL)"};
    errno = 0;
    ibv_cq* big = ibv_create_cq(dev->ctx, dev->attr.max_cqe + 1, nullptr, nullptr, 0);
    sink.add(must_fail(about, big ? 0 : errno_or_unknown()));
  }
  {
    const About about{"bad_calls.create_qp_above_max_qp_wr",
                      "ibv_create_qp with max_send_wr = max_qp_wr + 1",
                      "ibv_create_qp(3); ibv_query_device(3) (max_qp_wr)", "fails (EINVAL)"};
    errno = 0;
    ibv_qp* qp = create_qp(
        *dev, {.send_cq = cq, .recv_cq = cq, .send_wr = uint32_t(dev->attr.max_qp_wr) + 1});
    sink.add(must_fail(about, qp ? 0 : errno_or_unknown()));
  }
  {
    const About about{"bad_calls.create_qp_above_max_sge",
                      "ibv_create_qp with max_send_sge = max_sge + 1",
                      "ibv_create_qp(3); ibv_query_device(3) (max_sge)", "fails (EINVAL)"};
    errno = 0;
    ibv_qp* qp = create_qp(
        *dev, {.send_cq = cq, .recv_cq = cq, .send_sge = uint32_t(dev->attr.max_sge) + 1});
    sink.add(must_fail(about, qp ? 0 : errno_or_unknown()));
  }

  auto buffer = make_buffer(*dev, 4096);
  ibv_qp_cap caps{};
  ibv_qp* a = create_qp(*dev, {.send_cq = cq, .recv_cq = cq, .send_wr = 4, .recv_wr = 4}, &caps);
  ibv_qp* b = create_qp(*dev, {.send_cq = cq, .recv_cq = cq});
  const std::string post_spec = "ibv_post_send(3); IBA 11.4.1";
  const About reset_send{"bad_calls.post_send_in_reset", "ibv_post_send to a QP in RESET",
                         post_spec + "; IBA 10.3.1", "fails"};
  const About reset_recv{"bad_calls.post_recv_in_reset", "ibv_post_recv to a QP in RESET",
                         "ibv_post_recv(3); IBA 10.3.1", "fails"};
  const About init_send{"bad_calls.post_send_in_init", "ibv_post_send to a QP in INIT",
                        post_spec + "; IBA 10.3.1", "fails"};
  const About init_recv{"bad_calls.post_recv_in_init", "ibv_post_recv to a QP in INIT",
                        "ibv_post_recv(3); IBA 10.3.1 (INIT takes receive WRs)", "succeeds"};
  const About sge_send{"bad_calls.post_send_too_many_sge",
                       "ibv_post_send with num_sge = the QP's max_send_sge + 1", post_spec,
                       "fails (EINVAL), bad_wr names the WR"};
  const About sge_recv{"bad_calls.post_recv_too_many_sge",
                       "ibv_post_recv with num_sge = the QP's max_recv_sge + 1",
                       "ibv_post_recv(3); IBA 11.4.1", "fails (EINVAL), bad_wr names the WR"};
  const About inline_big{"bad_calls.post_send_inline_too_big",
                         "IBV_SEND_INLINE with more bytes than max_inline_data", post_spec,
                         "fails (EINVAL)"};
  const About full{"bad_calls.post_send_queue_full",
                   "SENDs posted until the send queue is full (the peer never answers)", post_spec,
                   "a post fails (ENOMEM), not before max_send_wr WRs"};
  if (a == nullptr || b == nullptr || !buffer) {
    for (const About& about :
         {reset_send, reset_recv, init_send, init_recv, sge_send, sge_recv, inline_big, full})
      sink.add(inconclusive(about, "could not create the QPs"));
  } else {
    sink.add(must_fail(reset_send, post_send(a, IBV_WR_SEND, *buffer, 8, 1, IBV_SEND_SIGNALED)));
    sink.add(must_fail(reset_recv, post_recv(a, *buffer, 64, 2)));
    to_init(*dev, a);
    sink.add(must_fail(init_send, post_send(a, IBV_WR_SEND, *buffer, 8, 3, IBV_SEND_SIGNALED)));
    sink.add(errno_check(init_recv, 0, post_recv(a, *buffer, 64, 4)));
    to_state(a, IBV_QPS_RESET);
    // b stays in INIT: a's SENDs are never answered, and with timeout 20
    // (4 s an attempt) none completes while the queue is filled.
    const bool up =
        to_init(*dev, b) == 0 && connect(*dev, a, b->qp_num, {.timeout = 20, .retry_cnt = 7}) == 0;
    if (!up) {
      for (const About& about : {sge_send, sge_recv, inline_big, full})
        sink.add(inconclusive(about, dev->iwarp() ? kIwarpNeedsAnsweringPeer
                                                  : "could not connect a requester"));
    } else {
      std::vector<ibv_sge> sges(
          caps.max_send_sge + caps.max_recv_sge + 2,
          ibv_sge{reinterpret_cast<uintptr_t>(buffer->bytes.data()), 8, buffer->mr->lkey});
      ibv_send_wr wr{};
      wr.wr_id = 5;
      wr.sg_list = sges.data();
      wr.num_sge = static_cast<int>(caps.max_send_sge) + 1;
      wr.opcode = IBV_WR_SEND;
      wr.send_flags = IBV_SEND_SIGNALED;
      ibv_send_wr* bad = nullptr;
      int err = ibv_post_send(a, &wr, &bad);
      Check c = must_fail(sge_send, err);
      if (err != 0 && bad != &wr) {
        c.verdict = Verdict::deviates;
        c.observed += ", bad_wr not set to the WR";
      }
      sink.add(c);

      ibv_recv_wr rwr{};
      rwr.wr_id = 6;
      rwr.sg_list = sges.data();
      rwr.num_sge = static_cast<int>(caps.max_recv_sge) + 1;
      ibv_recv_wr* rbad = nullptr;
      err = ibv_post_recv(a, &rwr, &rbad);
      c = must_fail(sge_recv, err);
      if (err != 0 && rbad != &rwr) {
        c.verdict = Verdict::deviates;
        c.observed += ", bad_wr not set to the WR";
      }
      sink.add(c);

      sink.add(must_fail(inline_big, post_send(a, IBV_WR_SEND, *buffer, caps.max_inline_data + 64,
                                               7, IBV_SEND_SIGNALED | IBV_SEND_INLINE)));

      // Fill the send queue until a post fails (bounded: a provider may
      // hold more than it granted, never less).
      const uint32_t bound = caps.max_send_wr * 4 + 64;
      uint32_t posted = 0;
      int err_full = 0;
      while (posted < bound && err_full == 0) {
        err_full = post_send(a, IBV_WR_SEND, *buffer, 8, 100 + posted, IBV_SEND_SIGNALED);
        if (err_full == 0) ++posted;
      }
      Check f = must_fail(full, err_full);
      f.observed = "the post after " + std::to_string(posted) + " WRs (create granted " +
                   std::to_string(caps.max_send_wr) + ") " + f.observed;
      if (posted < caps.max_send_wr) f.verdict = Verdict::deviates;
      f.value = {
          {"posted", posted}, {"max_send_wr", caps.max_send_wr}, {"ret", errno_name(err_full)}};
      sink.add(f);
      to_state(a, IBV_QPS_ERR);
    }
  }

  {
    const About about{"bad_calls.modify_qp_bad_port",
                      "RESET -> INIT with port_num = phys_port_cnt + 1", "ibv_modify_qp(3)",
                      "fails with EINVAL"};
    ibv_qp* qp = create_qp(*dev, {.send_cq = cq, .recv_cq = cq});
    ibv_qp_attr attr = rc_attr(*dev, IBV_QPS_INIT, 0, {});
    attr.port_num = static_cast<uint8_t>(dev->attr.phys_port_cnt + 1);
    if (qp == nullptr)
      sink.add(inconclusive(about, "ibv_create_qp failed"));
    else
      sink.add(errno_check(about, EINVAL, ibv_modify_qp(qp, &attr, kInitMask)));
  }
  {
    const About about{"bad_calls.query_port_zero", "ibv_query_port of port 0", "ibv_query_port(3)",
                      "fails (ports are numbered from 1)"};
    ibv_port_attr attr{};
    sink.add(must_fail(about, ibv_query_port(dev->ctx, 0, &attr)));
  }
  {
    const About about{"bad_calls.alloc_mw_type1", "ibv_alloc_mw of a type 1 memory window",
                      "ibv_alloc_mw(3)", "a memory window (an optional feature: EOPNOTSUPP)"};
    errno = 0;
    ibv_mw* mw = ibv_alloc_mw(dev->pd, IBV_MW_TYPE_1);
    sink.add(errno_check(about, 0, mw ? 0 : errno_or_unknown()));
  }

  // Destroys of objects still in use.
  {
    const About about{"bad_calls.dealloc_pd_busy", "ibv_dealloc_pd while an MR uses the PD",
                      "ibv_alloc_pd(3)", "fails with EBUSY"};
    ibv_pd* pd = ibv_alloc_pd(dev->ctx);
    ibv_mr* mr = pd ? ibv_reg_mr(pd, bytes.data(), 64, IBV_ACCESS_LOCAL_WRITE) : nullptr;
    if (mr == nullptr)
      sink.add(inconclusive(about, "could not register an MR on a new PD"));
    else
      sink.add(errno_check(about, EBUSY, ibv_dealloc_pd(pd)));
  }
  {
    const About about{"bad_calls.destroy_cq_busy", "ibv_destroy_cq while a QP uses the CQ",
                      "ibv_create_cq(3)", "fails with EBUSY"};
    ibv_cq* used = ibv_create_cq(dev->ctx, 16, nullptr, nullptr, 0);
    ibv_qp* qp = used ? create_qp(*dev, {.send_cq = used, .recv_cq = used}) : nullptr;
    if (qp == nullptr)
      sink.add(inconclusive(about, "could not create a CQ and a QP on it"));
    else
      sink.add(errno_check(about, EBUSY, ibv_destroy_cq(used)));
  }
  {
    const About about{"bad_calls.destroy_comp_channel_busy",
                      "ibv_destroy_comp_channel while a CQ uses the channel",
                      "ibv_create_comp_channel(3)", "fails with EBUSY"};
    ibv_comp_channel* channel = ibv_create_comp_channel(dev->ctx);
    ibv_cq* used = channel ? ibv_create_cq(dev->ctx, 16, nullptr, channel, 0) : nullptr;
    if (used == nullptr)
      sink.add(inconclusive(about, "could not create a channel and a CQ on it"));
    else
      sink.add(errno_check(about, EBUSY, ibv_destroy_comp_channel(channel)));
  }
  {
    const About about{"bad_calls.destroy_srq_busy", "ibv_destroy_srq while a QP uses the SRQ",
                      "ibv_create_srq(3)", "fails with EBUSY"};
    ibv_srq_init_attr init{};
    init.attr.max_wr = 4;
    init.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(dev->pd, &init);
    ibv_qp* qp = srq ? create_qp(*dev, {.send_cq = cq, .recv_cq = cq, .srq = srq}) : nullptr;
    if (qp == nullptr)
      sink.add(inconclusive(about, "could not create an SRQ and a QP on it"));
    else
      sink.add(errno_check(about, EBUSY, ibv_destroy_srq(srq)));
  }
}

}  // namespace verbfault::probe
