#include "device_profile.h"

#include "fabric_address.h"

#include <cstring>

namespace verbfault::sim {

DeviceProfile DeviceProfile::standard(int index, uint32_t member) {
  DeviceProfile p;
  ibv_device_attr& d = p.device;
  std::strncpy(d.fw_ver, p.fw_ver.c_str(), sizeof(d.fw_ver) - 1);
  // GUIDs are kept in network byte order, as the kernel reports them.
  const uint64_t guid = 0x02fa'f100'0000'0000ull | static_cast<uint64_t>(member) << 16 |
                        static_cast<uint64_t>(index + 1);
  d.node_guid = htobe64(guid);
  d.sys_image_guid = htobe64(guid);
  d.max_mr_size = ~0ull;
  d.page_size_cap = 0xfffff000;
  d.vendor_id = 0x0002fa;  // not a real vendor: a simulated device says so
  d.vendor_part_id = 1;
  d.hw_ver = 1;
  d.max_qp = 1 << 18;
  d.max_qp_wr = 1 << 15;
  d.device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
                       IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_PORT_ACTIVE_EVENT |
                       IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
                       IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_N_NOTIFY_CQ;
  d.max_sge = 30;
  d.max_sge_rd = 30;
  d.max_cq = 1 << 24;
  d.max_cqe = (1 << 22) - 1;
  d.max_mr = 1 << 24;
  d.max_pd = 1 << 24;
  d.max_qp_rd_atom = 16;
  d.max_ee_rd_atom = 0;
  d.max_res_rd_atom = d.max_qp_rd_atom * d.max_qp;
  d.max_qp_init_rd_atom = 16;
  d.max_ee_init_rd_atom = 0;
  d.atomic_cap = IBV_ATOMIC_HCA;
  d.max_ee = 0;
  d.max_rdd = 0;
  // Memory windows of types 1 and 2B (memory_window.h), as rxe reports them.
  d.max_mw = 1 << 24;
  d.device_cap_flags |= IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
  d.max_raw_ipv6_qp = 0;
  d.max_raw_ethy_qp = 0;
  d.max_mcast_grp = 0;  // multicast is not simulated (ibv_attach_mcast: EOPNOTSUPP)
  d.max_mcast_qp_attach = 0;
  d.max_total_mcast_qp_attach = 0;
  d.max_ah = 1 << 24;
  d.max_fmr = 0;
  d.max_map_per_fmr = 0;
  d.max_srq = 1 << 23;
  d.max_srq_wr = (1 << 15) - 1;
  d.max_srq_sge = 31;
  d.max_pkeys = 128;
  d.local_ca_ack_delay = 16;
  d.phys_port_cnt = 1;

  ibv_port_attr& port = p.port;
  port.state = IBV_PORT_ACTIVE;
  port.max_mtu = IBV_MTU_4096;
  port.active_mtu = IBV_MTU_4096;
  port.gid_tbl_len = 128;
  port.port_cap_flags = IBV_PORT_SM | IBV_PORT_CM_SUP | IBV_PORT_SYS_IMAGE_GUID_SUP |
                        IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP | IBV_PORT_CAP_MASK2_SUP;
  port.max_msg_sz = 1u << 31;
  port.bad_pkey_cntr = 0;
  port.qkey_viol_cntr = 0;
  port.pkey_tbl_len = 128;
  port.lid = lid_of(member, index);
  port.sm_lid = 1;
  port.lmc = 0;
  port.max_vl_num = 4;  // 8 VLs: IBTA encoding 4
  port.sm_sl = 0;
  port.subnet_timeout = 18;
  port.init_type_reply = 0;
  port.active_width = 2;   // 4X
  port.active_speed = 32;  // EDR
  port.phys_state = 5;     // LinkUp
  port.link_layer = IBV_LINK_LAYER_INFINIBAND;
  port.flags = 0;
  port.port_cap_flags2 = 0;
  return p;
}

}  // namespace verbfault::sim
