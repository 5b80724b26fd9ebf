// Sizes: a provider may grant more than asked, never less.
// ibv_create_cq(3): "at least cqe entries" (ibv_resize_cq(3) the same);
// ibv_create_qp(3): cap is updated with "the actual QP values ... greater
// than or equal to the values requested"; ibv_create_srq(3): max_wr and
// max_sge are returned with the values granted. The values themselves
// (how each provider rounds) are reported for the side-by-side table.
#include "areas.h"
#include "verbs_kit.h"

namespace verbfault::probe {

void probe_size_rounding(const std::string& device, CheckSink& sink) {
  const About cq{"size_rounding.cq_cqe", "ibv_create_cq: cqe granted for 1, 3, 100, 1000",
                 "ibv_create_cq(3)", "at least the cqe asked for"};
  const About resize{"size_rounding.cq_resize", "ibv_resize_cq of a 16-entry CQ to 200",
                     "ibv_resize_cq(3)", "succeeds, cqe at least 200"};
  const About qp{"size_rounding.qp_caps",
                 "ibv_create_qp asking max_send_wr 10, max_recv_wr 10, max_send_sge 1, "
                 "max_recv_sge 1, max_inline_data 40",
                 "ibv_create_qp(3)", "each granted value at least the one asked for"};
  const About query{"size_rounding.qp_query_caps", "ibv_query_qp's cap against create's",
                    "ibv_query_qp(3)", "the same values create returned"};
  const About srq{"size_rounding.srq", "ibv_create_srq asking max_wr 10, max_sge 1",
                  "ibv_create_srq(3)", "max_wr at least 10, max_sge at least 1"};
  const About srq_query{"size_rounding.srq_query", "ibv_query_srq after create", "ibv_query_srq(3)",
                        "the max_wr create returned"};

  std::string why;
  auto dev = open_device(device, &why);
  if (!dev) {
    for (const About& about : {cq, resize, qp, query, srq, srq_query})
      sink.add(inconclusive(about, why));
    return;
  }
  {
    nlohmann::json granted = nlohmann::json::object();
    bool ok = true;
    std::string observed;
    for (int asked : {1, 3, 100, 1000}) {
      ibv_cq* c = ibv_create_cq(dev->ctx, asked, nullptr, nullptr, 0);
      const int got = c ? c->cqe : -1;
      ok &= got >= asked;
      granted[std::to_string(asked)] = got;
      observed += (observed.empty() ? "" : ", ") + std::to_string(asked) + " -> " +
                  (c ? std::to_string(got) : "fails with " + errno_name(errno));
    }
    sink.add(judged(cq, ok, observed, granted));
  }
  {
    ibv_cq* c = ibv_create_cq(dev->ctx, 16, nullptr, nullptr, 0);
    if (c == nullptr) {
      sink.add(inconclusive(resize, "ibv_create_cq failed"));
    } else {
      const int err = ibv_resize_cq(c, 200);
      if (err == EOPNOTSUPP || err == ENOSYS) {
        sink.add(errno_check(resize, 0, err));
      } else {
        sink.add(judged(resize, err == 0 && c->cqe >= 200,
                        err ? outcome(err) : "cqe " + std::to_string(c->cqe),
                        {{"ret", errno_name(err)}, {"cqe", c->cqe}}));
      }
    }
  }
  ibv_cq* c = ibv_create_cq(dev->ctx, 64, nullptr, nullptr, 0);
  {
    ibv_qp_cap caps{};
    ibv_qp* q = c ? create_qp(*dev,
                              {.send_cq = c,
                               .recv_cq = c,
                               .send_wr = 10,
                               .recv_wr = 10,
                               .send_sge = 1,
                               .recv_sge = 1,
                               .inline_data = 40},
                              &caps)
                  : nullptr;
    if (q == nullptr) {
      sink.add(inconclusive(qp, "ibv_create_qp failed: " + errno_name(errno)));
      sink.add(inconclusive(query, "ibv_create_qp failed"));
    } else {
      const nlohmann::json value = {{"max_send_wr", caps.max_send_wr},
                                    {"max_recv_wr", caps.max_recv_wr},
                                    {"max_send_sge", caps.max_send_sge},
                                    {"max_recv_sge", caps.max_recv_sge},
                                    {"max_inline_data", caps.max_inline_data}};
      const bool ok = caps.max_send_wr >= 10 && caps.max_recv_wr >= 10 && caps.max_send_sge >= 1 &&
                      caps.max_recv_sge >= 1 && caps.max_inline_data >= 40;
      std::string observed;
      for (const auto& [key, v] : value.items())
        observed += (observed.empty() ? "" : ", ") + key + " " + v.dump();
      sink.add(judged(qp, ok, observed, value));
      ibv_qp_attr attr{};
      ibv_qp_init_attr init{};
      if (ibv_query_qp(q, &attr, IBV_QP_CAP, &init) != 0) {
        sink.add(inconclusive(query, "ibv_query_qp failed"));
      } else {
        const ibv_qp_cap& got = attr.cap;
        const nlohmann::json queried = {{"max_send_wr", got.max_send_wr},
                                        {"max_recv_wr", got.max_recv_wr},
                                        {"max_send_sge", got.max_send_sge},
                                        {"max_recv_sge", got.max_recv_sge},
                                        {"max_inline_data", got.max_inline_data}};
        std::string differs;
        for (const auto& [key, v] : queried.items())
          if (v != value[key]) differs += (differs.empty() ? "" : ", ") + key + " " + v.dump();
        sink.add(judged(query, differs.empty(),
                        differs.empty() ? "the same" : "differs: " + differs, queried));
      }
    }
  }
  {
    ibv_srq_init_attr init{};
    init.attr.max_wr = 10;
    init.attr.max_sge = 1;
    ibv_srq* s = ibv_create_srq(dev->pd, &init);
    if (s == nullptr) {
      const int err = errno;
      if (err == EOPNOTSUPP || err == ENOSYS) {
        sink.add(errno_check(srq, 0, err));
        sink.add(errno_check(srq_query, 0, err));
      } else {
        sink.add(inconclusive(srq, "ibv_create_srq failed: " + errno_name(err)));
        sink.add(inconclusive(srq_query, "ibv_create_srq failed"));
      }
    } else {
      sink.add(judged(srq, init.attr.max_wr >= 10 && init.attr.max_sge >= 1,
                      "max_wr " + std::to_string(init.attr.max_wr) + ", max_sge " +
                          std::to_string(init.attr.max_sge),
                      {{"max_wr", init.attr.max_wr}, {"max_sge", init.attr.max_sge}}));
      ibv_srq_attr attr{};
      const int err = ibv_query_srq(s, &attr);
      sink.add(judged(srq_query, err == 0 && attr.max_wr == init.attr.max_wr,
                      err ? outcome(err) : "max_wr " + std::to_string(attr.max_wr),
                      {{"ret", errno_name(err)}, {"max_wr", attr.max_wr}}));
    }
  }
}

}  // namespace verbfault::probe
