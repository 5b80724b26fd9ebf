// Sharing a context between ibv_contexts (ibv_import_device(3),
// ibv_import_pd(3), ibv_import_mr(3)): a dup(2) of a simulated context's
// cmd_fd opens the same context again, and objects are imported into it by
// handle, as rdma-core's tests/test_shared_pd.py does within one process.
#include "verbs_fixture.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace verbfault::testing {
namespace {

class Import : public SimDevice {
 protected:
  void SetUp() override {
    SimDevice::SetUp();
    if (HasFatalFailure()) return;
    mr_ = reg(target_, sizeof target_);
    ASSERT_NE(mr_, nullptr);
    ASSERT_GE(ctx_->cmd_fd, 0) << "a simulated context has a descriptor to import";
    imported_ctx_ = ibv_import_device(dup(ctx_->cmd_fd));
    ASSERT_NE(imported_ctx_, nullptr) << std::strerror(errno);
  }
  void TearDown() override {
    if (imported_ctx_ != nullptr) {
      EXPECT_EQ(ibv_close_device(imported_ctx_), 0);
    }
    SimDevice::TearDown();
  }

  ibv_mr* mr_ = nullptr;
  ibv_context* imported_ctx_ = nullptr;
  alignas(64) char target_[256] = {};
};

TEST_F(Import, TheImportedContextIsTheSameDevice) {
  EXPECT_EQ(imported_ctx_->device, ctx_->device);
  EXPECT_NE(imported_ctx_->cmd_fd, ctx_->cmd_fd) << "it owns the descriptor it was given";
  ibv_device_attr a{}, b{};
  ASSERT_EQ(ibv_query_device(ctx_, &a), 0);
  ASSERT_EQ(ibv_query_device(imported_ctx_, &b), 0);
  EXPECT_EQ(a.node_guid, b.node_guid);
}

TEST_F(Import, PdAndMrImportedByHandleCarryTraffic) {
  ibv_pd* pd = ibv_import_pd(imported_ctx_, pd_->handle);
  ASSERT_NE(pd, nullptr) << std::strerror(errno);
  EXPECT_EQ(pd->context, imported_ctx_);
  EXPECT_EQ(pd->handle, pd_->handle);
  ibv_mr* mr = ibv_import_mr(pd, mr_->handle);
  ASSERT_NE(mr, nullptr) << std::strerror(errno);
  EXPECT_EQ(mr->lkey, mr_->lkey);
  EXPECT_EQ(mr->rkey, mr_->rkey);
  EXPECT_EQ(mr->length, mr_->length);
  EXPECT_EQ(mr->addr, nullptr) << "the importer does not learn the address";

  // A QP of the importing context, in the imported PD, written to through
  // the imported MR's rkey by a QP of the original context.
  ibv_cq* cq = ibv_create_cq(imported_ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(cq->context, imported_ctx_);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  ibv_qp* target = ibv_create_qp(pd, &init);
  ASSERT_NE(target, nullptr) << std::strerror(errno);
  ibv_cq* own_cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp* source = create_qp(IBV_QPT_RC, own_cq, own_cq);
  ASSERT_NE(source, nullptr);
  ASSERT_EQ(rc_connect(target, {.dest_qp_num = source->qp_num, .dlid = lid(), .grh = grh()}), 0);
  ASSERT_EQ(rc_connect(source, {.dest_qp_num = target->qp_num, .dlid = lid(), .grh = grh()}), 0);
  char payload[16] = "imported-write";
  ibv_mr* payload_mr = reg(payload, sizeof payload);
  ASSERT_EQ(post_send(source, IBV_WR_RDMA_WRITE, 1, payload_mr, payload, sizeof payload,
                      IBV_SEND_SIGNALED, reinterpret_cast<uintptr_t>(target_), mr->rkey),
            0);
  auto done = poll(own_cq, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, IBV_WC_SUCCESS);
  EXPECT_STREQ(target_, "imported-write");

  // The original is not released while imported; the import goes alone.
  EXPECT_EQ(ibv_dereg_mr(mr_), EBUSY);
  ibv_unimport_mr(mr);
  EXPECT_EQ(ibv_destroy_qp(source), 0);
  EXPECT_EQ(ibv_destroy_qp(target), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd_), EBUSY) << "the MRs and the import are its children";
  ibv_unimport_pd(pd);
  EXPECT_EQ(ibv_dereg_mr(payload_mr), 0);
  EXPECT_EQ(ibv_dereg_mr(mr_), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
  pd_ = nullptr;
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_destroy_cq(own_cq), 0);
}

TEST_F(Import, AnUnknownHandleIsEinval) {
  errno = 0;
  EXPECT_EQ(ibv_import_pd(imported_ctx_, pd_->handle + 1000), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_import_mr(pd_, mr_->handle + 1000), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

// Closing the original leaves the objects to the import (one uverbs file,
// several descriptors): they go with the last context.
TEST_F(Import, ObjectsLiveUntilTheLastContextCloses) {
  ibv_pd* pd = ibv_import_pd(imported_ctx_, pd_->handle);
  ASSERT_NE(pd, nullptr);
  ASSERT_EQ(ibv_close_device(ctx_), 0);
  ctx_ = nullptr;
  ibv_cq* cq = ibv_create_cq(imported_ctx_, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  ASSERT_NE(qp, nullptr) << "the PD is still there";
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  ibv_unimport_pd(pd);
}

// As libibverbs refuses them (rdma-core libibverbs/device.c): a character
// device of no RDMA device is ENODEV, anything else EINVAL. /dev/null was
// handed to libibverbs once, which walked the front door's device list
// into the simulated entries and read past them (a crash under ASan).
TEST(ImportDevice, ACharacterDeviceOfNoContextIsEnodev) {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_EQ(ibv_import_device(fd), nullptr);
  EXPECT_EQ(errno, ENODEV);
  close(fd);
}

TEST(ImportDevice, ADescriptorThatIsNoCharacterDeviceIsEinval) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  errno = 0;
  EXPECT_EQ(ibv_import_device(pipe_fds[0]), nullptr);
  EXPECT_EQ(errno, EINVAL);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  errno = 0;
  EXPECT_EQ(ibv_import_device(-1), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
}  // namespace verbfault::testing
