#include "profile_file.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <tuple>
#include <sstream>
#include <utility>
#include <vector>

namespace verbfault::sim {

namespace {

// A name and its value, for enumerations and flag lists. Each list is a
// function's static, made on first use: a profile is read when the first
// program call asks for the devices, which may come from another library's
// constructor before libverbfault's own have run (libfabric's fi_info did:
// every list was still empty).
template <typename T>
using Names = std::vector<std::pair<const char*, T>>;

// ibv_query_device(3): enum ibv_device_cap_flags, lower case, no prefix.
const Names<unsigned>& device_cap_names() {
  static const Names<unsigned> names = {
      {"resize_max_wr", IBV_DEVICE_RESIZE_MAX_WR},
      {"bad_pkey_cntr", IBV_DEVICE_BAD_PKEY_CNTR},
      {"bad_qkey_cntr", IBV_DEVICE_BAD_QKEY_CNTR},
      {"raw_multi", IBV_DEVICE_RAW_MULTI},
      {"auto_path_mig", IBV_DEVICE_AUTO_PATH_MIG},
      {"change_phy_port", IBV_DEVICE_CHANGE_PHY_PORT},
      {"ud_av_port_enforce", IBV_DEVICE_UD_AV_PORT_ENFORCE},
      {"curr_qp_state_mod", IBV_DEVICE_CURR_QP_STATE_MOD},
      {"shutdown_port", IBV_DEVICE_SHUTDOWN_PORT},
      {"init_type", IBV_DEVICE_INIT_TYPE},
      {"port_active_event", IBV_DEVICE_PORT_ACTIVE_EVENT},
      {"sys_image_guid", IBV_DEVICE_SYS_IMAGE_GUID},
      {"rc_rnr_nak_gen", IBV_DEVICE_RC_RNR_NAK_GEN},
      {"srq_resize", IBV_DEVICE_SRQ_RESIZE},
      {"n_notify_cq", IBV_DEVICE_N_NOTIFY_CQ},
      {"ud_ip_csum", IBV_DEVICE_UD_IP_CSUM},
      {"xrc", IBV_DEVICE_XRC},
      {"mem_mgt_extensions", IBV_DEVICE_MEM_MGT_EXTENSIONS},
      {"rc_ip_csum", IBV_DEVICE_RC_IP_CSUM},
      {"raw_ip_csum", IBV_DEVICE_RAW_IP_CSUM},
      {"managed_flow_steering", IBV_DEVICE_MANAGED_FLOW_STEERING},
      {"mem_window", IBV_DEVICE_MEM_WINDOW},
      {"mem_window_type_2a", IBV_DEVICE_MEM_WINDOW_TYPE_2A},
      {"mem_window_type_2b", IBV_DEVICE_MEM_WINDOW_TYPE_2B},
  };
  return names;
}

// ibv_query_port(3): enum ibv_port_cap_flags, lower case, no prefix.
const Names<unsigned>& port_cap_names() {
  static const Names<unsigned> names = {
      {"sm", IBV_PORT_SM},
      {"notice_sup", IBV_PORT_NOTICE_SUP},
      {"trap_sup", IBV_PORT_TRAP_SUP},
      {"opt_ipd_sup", IBV_PORT_OPT_IPD_SUP},
      {"auto_migr_sup", IBV_PORT_AUTO_MIGR_SUP},
      {"sl_map_sup", IBV_PORT_SL_MAP_SUP},
      {"mkey_nvram", IBV_PORT_MKEY_NVRAM},
      {"pkey_nvram", IBV_PORT_PKEY_NVRAM},
      {"led_info_sup", IBV_PORT_LED_INFO_SUP},
      {"sys_image_guid_sup", IBV_PORT_SYS_IMAGE_GUID_SUP},
      {"pkey_sw_ext_port_trap_sup", IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP},
      {"extended_speeds_sup", IBV_PORT_EXTENDED_SPEEDS_SUP},
      {"cap_mask2_sup", IBV_PORT_CAP_MASK2_SUP},
      {"cm_sup", IBV_PORT_CM_SUP},
      {"snmp_tunnel_sup", IBV_PORT_SNMP_TUNNEL_SUP},
      {"reinit_sup", IBV_PORT_REINIT_SUP},
      {"device_mgmt_sup", IBV_PORT_DEVICE_MGMT_SUP},
      {"vendor_class_sup", IBV_PORT_VENDOR_CLASS_SUP},
      {"dr_notice_sup", IBV_PORT_DR_NOTICE_SUP},
      {"capability_mask_notice_sup", IBV_PORT_CAP_MASK_NOTICE_SUP},
      {"boot_mgmt_sup", IBV_PORT_BOOT_MGMT_SUP},
      {"link_latency_sup", IBV_PORT_LINK_LATENCY_SUP},
      {"client_reg_sup", IBV_PORT_CLIENT_REG_SUP},
      {"ip_based_gids", IBV_PORT_IP_BASED_GIDS},
  };
  return names;
}

const Names<ibv_mtu>& mtus() {
  static const Names<ibv_mtu> names = {{"256", IBV_MTU_256},
                                       {"512", IBV_MTU_512},
                                       {"1024", IBV_MTU_1024},
                                       {"2048", IBV_MTU_2048},
                                       {"4096", IBV_MTU_4096}};
  return names;
}
const Names<ibv_port_state>& states() {
  static const Names<ibv_port_state> names = {{"down", IBV_PORT_DOWN},
                                              {"init", IBV_PORT_INIT},
                                              {"armed", IBV_PORT_ARMED},
                                              {"active", IBV_PORT_ACTIVE}};
  return names;
}
const Names<uint8_t>& link_layers() {
  static const Names<uint8_t> names = {{"infiniband", IBV_LINK_LAYER_INFINIBAND},
                                       {"ethernet", IBV_LINK_LAYER_ETHERNET}};
  return names;
}
const Names<ibv_atomic_cap>& atomic_caps() {
  static const Names<ibv_atomic_cap> names = {
      {"none", IBV_ATOMIC_NONE}, {"hca", IBV_ATOMIC_HCA}, {"glob", IBV_ATOMIC_GLOB}};
  return names;
}
const Names<Rounding>& roundings() {
  static const Names<Rounding> names = {{"exact", Rounding::kExact},
                                        {"power_of_two", Rounding::kPowerOfTwo},
                                        {"power_of_two_minus_one", Rounding::kPowerOfTwoMinusOne}};
  return names;
}
const Names<GidAddress>& gid_addresses() {
  static const Names<GidAddress> names = {{"link_local", GidAddress::kLinkLocal},
                                          {"ipv4", GidAddress::kIpv4}};
  return names;
}
const Names<ibv_gid_type>& gid_types() {
  static const Names<ibv_gid_type> names = {{"ib", IBV_GID_TYPE_IB},
                                            {"roce_v1", IBV_GID_TYPE_ROCE_V1},
                                            {"roce_v2", IBV_GID_TYPE_ROCE_V2}};
  return names;
}

template <typename T>
std::string choices(const Names<T>& names) {
  std::string out;
  for (const auto& [name, value] : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return "one of " + out;
}

// Reads one mapping's keys against a table of known keys, each with its
// reader; records the first error and stops.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }

  void fail(const YAML::Node& node, const std::string& key, const std::string& what) {
    if (failed()) return;
    std::ostringstream line;
    line << source_;
    if (node.IsDefined() && node.Mark().line >= 0) line << " line " << node.Mark().line + 1;
    line << ": " << (key.empty() ? "" : key + ": ") << what;
    error_ = line.str();
  }

  // An unsigned integer in [min, max]: decimal, or 0x hexadecimal.
  template <typename T>
  void number(const YAML::Node& node, const std::string& key, T& out, uint64_t min, uint64_t max) {
    const std::string expected =
        "; expected an integer " + std::to_string(min) + ".." + std::to_string(max);
    if (!node.IsScalar()) return fail(node, key, "not a scalar" + expected);
    const std::string text = node.Scalar();
    errno = 0;
    char* end = nullptr;
    const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    const unsigned long long value = std::strtoull(text.c_str(), &end, hex ? 16 : 10);
    if (text.empty() || text[0] == '-' || text[0] == '+' || *end != '\0' || errno == ERANGE)
      return fail(node, key, "'" + text + "' is not an integer" + expected);
    if (value < min || value > max)
      return fail(node, key, "'" + text + "' is out of range" + expected);
    out = static_cast<T>(value);
  }
  template <typename T>
  void number(const YAML::Node& node, const std::string& key, T& out) {
    number(node, key, out, 0, static_cast<uint64_t>(std::numeric_limits<T>::max()));
  }

  void text(const YAML::Node& node, const std::string& key, std::string& out, size_t max) {
    if (!node.IsScalar()) return fail(node, key, "not a scalar; expected a string");
    if (node.Scalar().size() > max)
      return fail(node, key, "longer than " + std::to_string(max) + " characters");
    out = node.Scalar();
  }

  template <typename T>
  void choice(const YAML::Node& node, const std::string& key, const Names<T>& names, T& out) {
    if (node.IsScalar())
      for (const auto& [name, value] : names)
        if (node.Scalar() == name) {
          out = value;
          return;
        }
    fail(node, key,
         (node.IsScalar() ? "'" + node.Scalar() + "'" : std::string("not a scalar")) +
             " is not valid; expected " + choices(names));
  }

  // A list of flag names, or an integer (the flags' bits).
  void flags(const YAML::Node& node, const std::string& key, const Names<unsigned>& names,
             unsigned& out) {
    if (node.IsScalar()) return number(node, key, out);
    if (!node.IsSequence()) return fail(node, key, "expected a list of flag names or an integer");
    unsigned bits = 0;
    for (const YAML::Node& item : node) {
      unsigned bit = 0;
      choice(item, key, names, bit);
      if (failed()) return;
      bits |= bit;
    }
    out = bits;
  }

  // Calls the reader of each key of `map`; an unknown key, a missing
  // required one, or a non-mapping is an error.
  using Keys = std::vector<
      std::tuple<const char*, bool, std::function<void(const YAML::Node&, const std::string&)>>>;
  void mapping(const YAML::Node& map, const std::string& path, const Keys& keys) {
    if (!map.IsMap()) return fail(map, path, "expected a mapping of keys to values");
    std::set<std::string> seen;
    for (const auto& entry : map) {
      const std::string key = entry.first.as<std::string>();
      const std::string full = path.empty() ? key : path + "." + key;
      bool known = false;
      for (const auto& [name, required, read] : keys)
        if (key == name) {
          known = true;
          read(entry.second, full);
        }
      if (!known) {
        std::string names;
        for (const auto& k : keys)
          names += (names.empty() ? "" : ", ") + std::string(std::get<0>(k));
        return fail(entry.first, full, "unknown key; expected one of " + names);
      }
      if (failed()) return;
      seen.insert(key);
    }
    for (const auto& [name, required, read] : keys)
      if (required && !seen.count(name))
        return fail(map, path.empty() ? std::string(name) : path + "." + name, "missing");
  }

 private:
  std::string source_;
  std::string error_;
};

constexpr uint64_t kIntMax = std::numeric_limits<int>::max();

void read_device(Reader& r, const YAML::Node& node, const std::string& path, DeviceProfile& p) {
  ibv_device_attr& d = p.device;
  auto num = [&r](auto& field, uint64_t min = 0, uint64_t max = kIntMax) {
    return [&r, &field, min, max](const YAML::Node& n, const std::string& k) {
      r.number(n, k, field, min, max);
    };
  };
  auto str = [&r](std::string& field, size_t max) {
    return
        [&r, &field, max](const YAML::Node& n, const std::string& k) { r.text(n, k, field, max); };
  };
  const Reader::Keys keys = {
      {"fw_ver", false, str(p.fw_ver, sizeof d.fw_ver - 1)},
      {"board_id", false, str(p.board_id, 63)},
      {"hca_type", false, str(p.hca_type, 63)},
      {"vendor_id", false, num(d.vendor_id, 0, UINT32_MAX)},
      {"vendor_part_id", false, num(d.vendor_part_id, 0, UINT32_MAX)},
      {"hw_ver", false, num(d.hw_ver, 0, UINT32_MAX)},
      {"max_mr_size", true, num(d.max_mr_size, 1, UINT64_MAX)},
      {"page_size_cap", false, num(d.page_size_cap, 0, UINT64_MAX)},
      {"max_qp", true, num(d.max_qp, 1)},
      {"max_qp_wr", true, num(d.max_qp_wr, 1)},
      {"device_cap_flags", false,
       [&](const YAML::Node& n, const std::string& k) {
         r.flags(n, k, device_cap_names(), d.device_cap_flags);
       }},
      {"max_sge", true, num(d.max_sge, 1)},
      {"max_sge_rd", false, num(d.max_sge_rd)},
      {"max_cq", true, num(d.max_cq, 1)},
      {"max_cqe", true, num(d.max_cqe, 1)},
      {"max_mr", true, num(d.max_mr, 1)},
      {"max_pd", true, num(d.max_pd, 1)},
      {"max_qp_rd_atom", true, num(d.max_qp_rd_atom)},
      {"max_qp_init_rd_atom", true, num(d.max_qp_init_rd_atom)},
      {"max_res_rd_atom", false, num(d.max_res_rd_atom)},
      {"atomic_cap", true,
       [&](const YAML::Node& n, const std::string& k) {
         r.choice(n, k, atomic_caps(), d.atomic_cap);
       }},
      {"max_ah", true, num(d.max_ah, 1)},
      {"max_mw", false, num(d.max_mw)},
      {"max_srq", true, num(d.max_srq)},
      {"max_srq_wr", true, num(d.max_srq_wr)},
      {"max_srq_sge", true, num(d.max_srq_sge)},
      {"max_pkeys", false, num(d.max_pkeys, 0, UINT16_MAX)},
      {"max_mcast_grp", false, num(d.max_mcast_grp)},
      {"max_mcast_qp_attach", false, num(d.max_mcast_qp_attach)},
      {"max_total_mcast_qp_attach", false, num(d.max_total_mcast_qp_attach)},
      {"local_ca_ack_delay", false, num(d.local_ca_ack_delay, 0, 31)},
  };
  r.mapping(node, path, keys);
}

void read_port(Reader& r, const YAML::Node& node, const std::string& path, DeviceProfile& p) {
  ibv_port_attr& port = p.port;
  bool phys_state_given = false;
  auto num = [&r](auto& field, uint64_t min, uint64_t max) {
    return [&r, &field, min, max](const YAML::Node& n, const std::string& k) {
      r.number(n, k, field, min, max);
    };
  };
  const Reader::Keys keys = {
      {"link_layer", true,
       [&](const YAML::Node& n, const std::string& k) {
         r.choice(n, k, link_layers(), port.link_layer);
       }},
      {"state", false,
       [&](const YAML::Node& n, const std::string& k) { r.choice(n, k, states(), port.state); }},
      {"max_mtu", true,
       [&](const YAML::Node& n, const std::string& k) { r.choice(n, k, mtus(), port.max_mtu); }},
      {"active_mtu", true,
       [&](const YAML::Node& n, const std::string& k) { r.choice(n, k, mtus(), port.active_mtu); }},
      {"gid_tbl_len", true, num(port.gid_tbl_len, 1, 4096)},
      {"pkey_tbl_len", false, num(port.pkey_tbl_len, 1, UINT16_MAX)},
      {"port_cap_flags", false,
       [&](const YAML::Node& n, const std::string& k) {
         unsigned flags = 0;
         r.flags(n, k, port_cap_names(), flags);
         port.port_cap_flags = flags;
       }},
      {"max_msg_sz", false, num(port.max_msg_sz, 1, UINT32_MAX)},
      {"max_vl_num", false, num(port.max_vl_num, 0, 15)},
      {"subnet_timeout", false, num(port.subnet_timeout, 0, 31)},
      {"active_width", false, num(port.active_width, 0, UINT8_MAX)},
      {"active_speed", false, num(port.active_speed, 0, UINT8_MAX)},
      {"phys_state", false,
       [&](const YAML::Node& n, const std::string& k) {
         r.number(n, k, port.phys_state, 0, 7);
         phys_state_given = true;
       }},
  };
  port.state = IBV_PORT_ACTIVE;
  port.pkey_tbl_len = 1;
  port.max_msg_sz = 1u << 31;
  r.mapping(node, path, keys);
  // IBA 14.2.5.6 PortPhysicalState: 5 LinkUp, 3 Disabled.
  if (!phys_state_given) port.phys_state = port.state == IBV_PORT_ACTIVE ? 5 : 3;
}

void read_gids(Reader& r, const YAML::Node& node, const std::string& path, DeviceProfile& p) {
  if (!node.IsSequence() || node.size() == 0)
    return r.fail(node, path, "expected a list of {address: ..., type: ...} entries");
  for (size_t i = 0; i < node.size() && !r.failed(); ++i) {
    GidSpec spec;
    const std::string at = path + "[" + std::to_string(i) + "]";
    r.mapping(node[i], at,
              {{"address", true,
                [&](const YAML::Node& n, const std::string& k) {
                  r.choice(n, k, gid_addresses(), spec.address);
                }},
               {"type", true, [&](const YAML::Node& n, const std::string& k) {
                  r.choice(n, k, gid_types(), spec.type);
                }}});
    p.gids.push_back(spec);
  }
}

void check(Reader& r, const YAML::Node& root, DeviceProfile& p) {
  // What the link layer allows (IBTA Annex A17: RoCE GIDs are RoCE v1/v2
  // and carry the port's IP addresses; InfiniBand GIDs are of type IB).
  for (size_t i = 0; i < p.gids.size(); ++i) {
    const GidSpec& g = p.gids[i];
    const std::string key = "gid_table[" + std::to_string(i) + "]";
    if (p.ethernet() && g.type == IBV_GID_TYPE_IB)
      return r.fail(root["gid_table"], key,
                    "type ib on an ethernet port; expected roce_v1 or roce_v2");
    if (!p.ethernet() && g.type != IBV_GID_TYPE_IB)
      return r.fail(root["gid_table"], key, "a RoCE type on an infiniband port; expected ib");
    if (!p.ethernet() && g.address == GidAddress::kIpv4)
      return r.fail(root["gid_table"], key,
                    "an ipv4 address on an infiniband port; expected link_local");
  }
  if (p.gids.size() > static_cast<size_t>(p.port.gid_tbl_len))
    return r.fail(root["gid_table"], "gid_table",
                  std::to_string(p.gids.size()) + " entries; expected at most port.gid_tbl_len (" +
                      std::to_string(p.port.gid_tbl_len) + ")");
  if (p.port.active_mtu > p.port.max_mtu)
    return r.fail(root["port"], "port.active_mtu", "larger than port.max_mtu");
}

}  // namespace

ProfileRead read_profile(std::string_view text, const std::string& source) {
  Reader r(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    std::ostringstream line;
    line << source;
    if (e.mark.line >= 0) line << " line " << e.mark.line + 1;
    line << ": not valid YAML: " << e.msg;
    return {std::nullopt, line.str()};
  }
  DeviceProfile p;
  p.name = source;
  p.fw_ver = "1.0.0";
  p.board_id = "VERBFAULT_SIM";
  p.hca_type = "vfsim";
  try {
    r.mapping(
        root, "",
        {{"name", false,
          [&](const YAML::Node& n, const std::string& k) { r.text(n, k, p.name, 63); }},
         {"description", false,
          [&](const YAML::Node& n, const std::string& k) {
            std::string ignored;
            r.text(n, k, ignored, 4096);
          }},
         {"device", true,
          [&](const YAML::Node& n, const std::string& k) { read_device(r, n, k, p); }},
         {"port", true, [&](const YAML::Node& n, const std::string& k) { read_port(r, n, k, p); }},
         {"gid_table", true,
          [&](const YAML::Node& n, const std::string& k) { read_gids(r, n, k, p); }},
         {"max_inline_data", true,
          [&](const YAML::Node& n, const std::string& k) {
            r.number(n, k, p.max_inline_data, 0, 1u << 20);
          }},
         {"rounding", false, [&](const YAML::Node& n, const std::string& k) {
            r.mapping(n, k,
                      {{"cq", false,
                        [&](const YAML::Node& v, const std::string& key) {
                          r.choice(v, key, roundings(), p.cq_rounding);
                        }},
                       {"qp_wr", false,
                        [&](const YAML::Node& v, const std::string& key) {
                          r.choice(v, key, roundings(), p.qp_wr_rounding);
                        }},
                       {"srq_wr", false, [&](const YAML::Node& v, const std::string& key) {
                          r.choice(v, key, roundings(), p.srq_wr_rounding);
                        }}});
          }}});
    if (!r.failed()) check(r, root, p);
  } catch (const YAML::Exception& e) {
    // A key that is not a scalar (e.g. `[a]: 1`).
    r.fail(root, "", std::string("unexpected structure: ") + e.msg);
  }
  if (r.failed()) return {std::nullopt, r.error()};
  ibv_device_attr& d = p.device;
  std::strncpy(d.fw_ver, p.fw_ver.c_str(), sizeof d.fw_ver - 1);
  d.phys_port_cnt = 1;
  return {std::move(p), {}};
}

ProfileRead read_profile_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {std::nullopt, path + ": cannot be read (" + std::strerror(errno) + ")"};
  std::stringstream text;
  text << in.rdbuf();
  return read_profile(text.str(), path);
}

}  // namespace verbfault::sim
