// Device-level verbs of the simulated device: the device list, device and
// port queries, GID and P_Key tables, and verbs the device does not offer.
#include "verbs_fixture.h"

#include <fcntl.h>

#include <cerrno>
#include <set>

namespace verbfault::testing {
namespace {

// ---- ibv_get_device_list(3) -------------------------------------------------

ibv_device* find_device(ibv_device** list, const char* name) {
  for (int i = 0; list != nullptr && list[i] != nullptr; ++i)
    if (std::string(ibv_get_device_name(list[i])) == name) return list[i];
  return nullptr;
}

TEST(DeviceList, ListsBothSimulatedDevicesNullTerminated) {
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_GE(n, 2);
  EXPECT_EQ(list[n], nullptr) << "the array is NULL-terminated";
  std::set<std::string> names;
  for (int i = 0; i < n; ++i) {
    ASSERT_NE(list[i], nullptr);
    names.insert(ibv_get_device_name(list[i]));
  }
  EXPECT_EQ(names.count("vfsim0"), 1u);
  EXPECT_EQ(names.count("vfsim1"), 1u);
  ibv_free_device_list(list);
}

TEST(DeviceList, NumDevicesArgumentIsOptional) {
  ibv_device** list = ibv_get_device_list(nullptr);
  ASSERT_NE(list, nullptr);
  EXPECT_NE(find_device(list, "vfsim0"), nullptr);
  EXPECT_NE(find_device(list, "vfsim1"), nullptr);
  ibv_free_device_list(list);
}

TEST(DeviceList, SuccessDoesNotReportTheHostsMissingRdmaAsAnError) {
  // Without RDMA in the kernel libibverbs fails with ENOSYS; the merged list
  // still succeeds, so that errno must not be left behind.
  errno = 0;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  EXPECT_NE(errno, ENOSYS);
  EXPECT_NE(errno, EPERM);
  ibv_free_device_list(list);
}

TEST(DeviceList, GuidsAreNonZeroDistinctAndMatchQueryDevice) {
  ibv_device** list = ibv_get_device_list(nullptr);
  ASSERT_NE(list, nullptr);
  ibv_device* d0 = find_device(list, "vfsim0");
  ibv_device* d1 = find_device(list, "vfsim1");
  ASSERT_NE(d0, nullptr);
  ASSERT_NE(d1, nullptr);
  const __be64 g0 = ibv_get_device_guid(d0);
  const __be64 g1 = ibv_get_device_guid(d1);
  EXPECT_NE(g0, 0u);
  EXPECT_NE(g1, 0u);
  EXPECT_NE(g0, g1);
  ibv_context* ctx = ibv_open_device(d0);
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr attr{};
  ASSERT_EQ(ibv_query_device(ctx, &attr), 0);
  EXPECT_EQ(attr.node_guid, g0) << "both in network byte order";
  EXPECT_EQ(ibv_close_device(ctx), 0);
  ibv_free_device_list(list);
}

TEST(DeviceList, OpenDeviceStaysUsableAfterTheListIsFreed) {
  ibv_device** list = ibv_get_device_list(nullptr);
  ASSERT_NE(list, nullptr);
  ibv_device* d0 = find_device(list, "vfsim0");
  ASSERT_NE(d0, nullptr);
  ibv_context* ctx = ibv_open_device(d0);
  ASSERT_NE(ctx, nullptr);
  ibv_free_device_list(list);  // ibv_get_device_list(3) NOTES
  ibv_device_attr attr{};
  EXPECT_EQ(ibv_query_device(ctx, &attr), 0);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST(DeviceList, TwoListsAreIndependent) {
  ibv_device** first = ibv_get_device_list(nullptr);
  ibv_device** second = ibv_get_device_list(nullptr);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first, second);
  ibv_free_device_list(first);
  EXPECT_NE(find_device(second, "vfsim1"), nullptr);
  ibv_free_device_list(second);
}

// ---- ibv_query_device(3) ----------------------------------------------------

TEST_F(SimDevice, QueryDeviceReportsRealisticLimits) {
  ibv_device_attr attr{};
  ASSERT_EQ(ibv_query_device(ctx_, &attr), 0);
  EXPECT_EQ(attr.phys_port_cnt, 1);
  EXPECT_GE(attr.max_cqe, 4096);
  EXPECT_GE(attr.max_qp_wr, 1024);
  EXPECT_GE(attr.max_sge, 4);
  EXPECT_GE(attr.max_qp_rd_atom, 1);
  EXPECT_GE(attr.max_qp_init_rd_atom, 1);
  EXPECT_GT(attr.max_qp, 0);
  EXPECT_GT(attr.max_cq, 0);
  EXPECT_GT(attr.max_mr, 0);
  EXPECT_GT(attr.max_pd, 0);
  EXPECT_GT(attr.max_mr_size, 0u);
  EXPECT_GT(attr.max_srq, 0);
  EXPECT_GT(attr.max_srq_wr, 0);
  EXPECT_GT(attr.max_pkeys, 0);
  EXPECT_NE(attr.node_guid, 0u);
  EXPECT_NE(attr.fw_ver[0], '\0');
}

TEST_F(SimDevice, QueryDeviceExMatchesTheLegacyQuery) {
  ibv_device_attr legacy{};
  ASSERT_EQ(ibv_query_device(ctx_, &legacy), 0);
  ibv_device_attr_ex ex{};
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &ex), 0);
  EXPECT_EQ(ex.orig_attr.node_guid, legacy.node_guid);
  EXPECT_EQ(ex.orig_attr.max_cqe, legacy.max_cqe);
  EXPECT_EQ(ex.orig_attr.max_qp_wr, legacy.max_qp_wr);
  EXPECT_EQ(ex.orig_attr.max_sge, legacy.max_sge);
  EXPECT_EQ(ex.orig_attr.max_qp_rd_atom, legacy.max_qp_rd_atom);
  EXPECT_EQ(ex.orig_attr.phys_port_cnt, 1);
  // ibv_query_device_ex(3): phys_port_cnt_ex is the port count, also below
  // 256 (rdma-core's tests/test_device.py test_phys_port_cnt_ex).
  EXPECT_EQ(ex.phys_port_cnt_ex, 1u);
  ibv_query_device_ex_input input{};
  ASSERT_EQ(ibv_query_device_ex(ctx_, &input, &ex), 0);
}

TEST_F(SimDevice, QueryDeviceExRejectsUnknownInputCompMask) {
  ibv_query_device_ex_input input{};
  input.comp_mask = 1;
  ibv_device_attr_ex ex{};
  EXPECT_EQ(ibv_query_device_ex(ctx_, &input, &ex), EINVAL);
}

// ---- ibv_query_port(3) ------------------------------------------------------

// The InfiniBand port's own tests (OnLinkLayer); RoCE's are RocePort.*
// (test_roce.cpp): QueryPortReportsAnActiveEthernetPortWithoutLids,
// GidsDifferBetweenDevices.
class InfiniBandPort : public OnLinkLayer<SimDevice, /*kEthernet=*/false> {};

TEST_F(InfiniBandPort, QueryPortReportsAnActiveInfiniBandPort) {
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_INFINIBAND);
  EXPECT_NE(port.lid, 0);
  EXPECT_GT(port.gid_tbl_len, 0);
  EXPECT_GT(port.pkey_tbl_len, 0u);
  EXPECT_GE(port.active_mtu, IBV_MTU_256);
  EXPECT_LE(port.active_mtu, port.max_mtu);
  EXPECT_GT(port.max_msg_sz, 0u);
}

TEST_F(InfiniBandPort, LidsDifferBetweenDevices) {
  ibv_device* d1 = nullptr;
  for (int i = 0; list_[i] != nullptr; ++i)
    if (std::string(ibv_get_device_name(list_[i])) == "vfsim1") d1 = list_[i];
  ASSERT_NE(d1, nullptr);
  ibv_context* ctx1 = ibv_open_device(d1);
  ASSERT_NE(ctx1, nullptr);
  const uint16_t lid0 = lid(ctx_);
  const uint16_t lid1 = lid(ctx1);
  EXPECT_NE(lid0, 0);
  EXPECT_NE(lid1, 0);
  EXPECT_NE(lid0, lid1);
  EXPECT_EQ(ibv_close_device(ctx1), 0);
}

TEST_F(SimDevice, QueryPortWithInvalidPortFails) {
  ibv_port_attr port{};
  EXPECT_NE(ibv_query_port(ctx_, 0, &port), 0);
  EXPECT_NE(ibv_query_port(ctx_, 2, &port), 0);
}

// ---- GID table: ibv_query_gid(3), ibv_query_gid_ex(3), ibv_query_gid_table(3)

TEST_F(SimDevice, GidIndexZeroIsLinkLocalPrefixAndNodeGuid) {
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &gid), 0);
  EXPECT_EQ(be64toh(gid.global.subnet_prefix), 0xfe80'0000'0000'0000ull);
  EXPECT_EQ(gid.global.interface_id, ibv_get_device_guid(device_));
  EXPECT_EQ(gid.raw[0], 0xfe);
  EXPECT_EQ(gid.raw[1], 0x80);
}

TEST_F(SimDevice, QueryGidOutOfRangeFailsWithMinusOne) {
  // ibv_query_gid(3): "returns 0 on success, and -1 on error".
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  ibv_gid gid{};
  EXPECT_EQ(ibv_query_gid(ctx_, 1, port.gid_tbl_len, &gid), -1);
  EXPECT_EQ(ibv_query_gid(ctx_, 1, -1, &gid), -1);
  EXPECT_EQ(ibv_query_gid(ctx_, 2, 0, &gid), -1);
}

TEST_F(SimDevice, QueryGidExDescribesIndexZero) {
  ibv_gid_entry entry{};
  ASSERT_EQ(ibv_query_gid_ex(ctx_, 1, 0, &entry, 0), 0);
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &gid), 0);
  EXPECT_EQ(std::memcmp(&entry.gid, &gid, sizeof gid), 0);
  EXPECT_EQ(entry.gid_index, 0u);
  EXPECT_EQ(entry.port_num, 1u);
  // rxe lists RoCE v2 GIDs only (roce); an InfiniBand port's are IB.
  EXPECT_EQ(entry.gid_type,
            static_cast<uint32_t>(ethernet() ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_IB));
}

TEST_F(SimDevice, QueryGidExErrors) {
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  ibv_gid_entry entry{};
  // ibv_query_gid_ex(3): "returns 0 on success or errno value on error".
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, static_cast<uint32_t>(port.gid_tbl_len), &entry, 0), EINVAL);
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 2, 0, &entry, 0), EINVAL);
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 0, &entry, 1), EINVAL) << "flags must be 0";
  // An index inside the table with nothing in it (ib: after GID 0; roce:
  // after the link-local and the IPv4 GID).
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, ethernet() ? 2 : 1, &entry, 0), ENODATA);
}

TEST_F(SimDevice, QueryGidTableReturnsOnlyValidEntries) {
  ibv_gid_entry entries[8]{};
  const ssize_t n = ibv_query_gid_table(ctx_, entries, 8, 0);
  ASSERT_EQ(n, ethernet() ? 2 : 1);
  ibv_gid_entry one{};
  ASSERT_EQ(ibv_query_gid_ex(ctx_, 1, 0, &one, 0), 0);
  EXPECT_EQ(std::memcmp(&entries[0].gid, &one.gid, sizeof one.gid), 0);
  EXPECT_EQ(entries[0].gid_index, 0u);
  EXPECT_EQ(entries[0].port_num, 1u);
  // ibv_query_gid_table(3): a negative errno value on error.
  EXPECT_EQ(ibv_query_gid_table(ctx_, entries, 0, 0), -EINVAL) << "array too small";
  EXPECT_EQ(ibv_query_gid_table(ctx_, entries, 8, 1), -EINVAL) << "flags must be 0";
}

// ---- P_Key table: ibv_query_pkey(3), ibv_get_pkey_index(3) ------------------

TEST_F(SimDevice, PkeyIndexZeroIsTheDefaultPartition) {
  __be16 pkey = 0;
  ASSERT_EQ(ibv_query_pkey(ctx_, 1, 0, &pkey), 0);
  EXPECT_EQ(be16toh(pkey), 0xffff);
}

TEST_F(SimDevice, QueryPkeyOutOfRangeFailsWithMinusOne) {
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  __be16 pkey = 0;
  EXPECT_EQ(ibv_query_pkey(ctx_, 1, static_cast<int>(port.pkey_tbl_len), &pkey), -1);
  EXPECT_EQ(ibv_query_pkey(ctx_, 1, -1, &pkey), -1);
  EXPECT_EQ(ibv_query_pkey(ctx_, 2, 0, &pkey), -1);
}

TEST_F(SimDevice, GetPkeyIndexFindsTheDefaultPartition) {
  EXPECT_EQ(ibv_get_pkey_index(ctx_, 1, htobe16(0xffff)), 0);
}

TEST_F(SimDevice, GetPkeyIndexOfAnAbsentPkeyFailsWithMinusOne) {
  // ibv_get_pkey_index(3): "returns the P_Key index on success, and -1 on error".
  EXPECT_EQ(ibv_get_pkey_index(ctx_, 1, htobe16(0x1234)), -1);
  EXPECT_EQ(ibv_get_pkey_index(ctx_, 2, htobe16(0xffff)), -1);
}

// ---- verbs the simulated device does not offer ----------------------------

TEST_F(SimDevice, CreateQpExWithUnsupportedExtendedAttributesIsEopnotsupp) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr_ex init{};
  init.qp_type = IBV_QPT_RC;
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.pd = pd_;
  // A TSO header size (raw packet QPs) is beyond the simulated device.
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
  init.max_tso_header = 64;
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx_, &init), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(SimDevice, CreateQpExWithOnlyAPdFallsBackToCreateQp) {
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr_ex init{};
  init.qp_type = IBV_QPT_RC;
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.pd = pd_;
  init.comp_mask = IBV_QP_INIT_ATTR_PD;
  ibv_qp* qp = ibv_create_qp_ex(ctx_, &init);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_qp_to_qp_ex(qp), nullptr) << "no extended post API";
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(SimDevice, CreateXrcSrqExIsNotSupported) {
  ibv_srq_init_attr_ex init{};
  init.attr.max_wr = 4;
  init.attr.max_sge = 1;
  init.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
  init.srq_type = IBV_SRQT_XRC;
  init.pd = pd_;
  errno = 0;
  EXPECT_EQ(ibv_create_srq_ex(ctx_, &init), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(SimDevice, OpenXrcdIsNotSupported) {
  ibv_xrcd_init_attr init{};
  init.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  init.fd = -1;
  init.oflags = O_CREAT;
  errno = 0;
  EXPECT_EQ(ibv_open_xrcd(ctx_, &init), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(SimDevice, AllocDmIsNotSupported) {
  ibv_alloc_dm_attr attr{};
  attr.length = 4096;
  errno = 0;
  EXPECT_EQ(ibv_alloc_dm(ctx_, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

}  // namespace
}  // namespace verbfault::testing
