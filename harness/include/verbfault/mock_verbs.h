// A GoogleMock stand-in for the fast-path verbs of one context, for exact
// scripted returns in users' own tests (header-only; needs GoogleMock):
//
//   ::testing::NiceMock<verbfault::MockVerbs> verbs(context);
//   EXPECT_CALL(verbs, poll_cq(cq, _, _)).WillOnce(::testing::Return(-EIO));
//   run_my_rdma_code();  // its first ibv_poll_cq on `cq` fails; the rest reach the provider
//
// ibv_poll_cq, ibv_post_send, ibv_post_recv and ibv_req_notify_cq are
// inline in verbs.h and jump through context->ops: while the mock lives,
// those ops call its methods, whose default action is the provider's own op
// (with the harness, if it wraps the context), so only what a test scripts
// changes. Construct it before, and destroy it after, the calls it should
// see; one mock per context at a time.
#pragma once

#include <infiniband/verbs.h>

#include <gmock/gmock.h>

#include <map>
#include <mutex>

namespace verbfault {

class MockVerbs {
 public:
  explicit MockVerbs(ibv_context* context) : context_(context), provider_(context->ops) {
    {
      std::lock_guard lock(registry_mutex());
      registry()[context] = this;
    }
    using ::testing::_;
    ON_CALL(*this, poll_cq(_, _, _)).WillByDefault([this](ibv_cq* cq, int n, ibv_wc* wc) {
      return provider_.poll_cq(cq, n, wc);
    });
    ON_CALL(*this, post_send(_, _, _))
        .WillByDefault([this](ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
          return provider_.post_send(qp, wr, bad);
        });
    ON_CALL(*this, post_recv(_, _, _))
        .WillByDefault([this](ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
          return provider_.post_recv(qp, wr, bad);
        });
    ON_CALL(*this, req_notify_cq(_, _)).WillByDefault([this](ibv_cq* cq, int solicited) {
      return provider_.req_notify_cq(cq, solicited);
    });
    context->ops.poll_cq = [](ibv_cq* cq, int n, ibv_wc* wc) {
      return of(cq->context).poll_cq(cq, n, wc);
    };
    context->ops.post_send = [](ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
      return of(qp->context).post_send(qp, wr, bad);
    };
    context->ops.post_recv = [](ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
      return of(qp->context).post_recv(qp, wr, bad);
    };
    context->ops.req_notify_cq = [](ibv_cq* cq, int solicited) {
      return of(cq->context).req_notify_cq(cq, solicited);
    };
  }

  ~MockVerbs() {
    context_->ops.poll_cq = provider_.poll_cq;
    context_->ops.post_send = provider_.post_send;
    context_->ops.post_recv = provider_.post_recv;
    context_->ops.req_notify_cq = provider_.req_notify_cq;
    std::lock_guard lock(registry_mutex());
    registry().erase(context_);
  }

  MockVerbs(const MockVerbs&) = delete;
  MockVerbs& operator=(const MockVerbs&) = delete;

  MOCK_METHOD(int, poll_cq, (ibv_cq * cq, int num_entries, ibv_wc* wc));
  MOCK_METHOD(int, post_send, (ibv_qp * qp, ibv_send_wr* wr, ibv_send_wr** bad_wr));
  MOCK_METHOD(int, post_recv, (ibv_qp * qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr));
  MOCK_METHOD(int, req_notify_cq, (ibv_cq * cq, int solicited_only));

  // The provider's ops, for actions that script around them.
  const ibv_context_ops& provider() const { return provider_; }

 private:
  static std::map<const ibv_context*, MockVerbs*>& registry() {
    static std::map<const ibv_context*, MockVerbs*> mocks;
    return mocks;
  }
  static std::mutex& registry_mutex() {
    static std::mutex mutex;
    return mutex;
  }
  static MockVerbs& of(const ibv_context* context) {
    std::lock_guard lock(registry_mutex());
    return *registry().at(context);
  }

  ibv_context* context_;
  ibv_context_ops provider_;
};

}  // namespace verbfault
