// Device profiles (fakes/sim/profiles/profile_file.h, profile_selection.h): the YAML
// reader's values and its one-line errors, the built-in profiles, and the
// parsing of VERBFAULT_SIM_PROFILE. No device is made here; what a device
// reports through the verbs is profile_device_tests.cpp.
#include "builtin_profiles.h"
#include "device_profile.h"
#include "profile_file.h"
#include "profile_selection.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace verbfault::sim {
namespace {

// A small valid profile; tests replace one line of it to break it.
const std::string kGood = R"(name: tiny
device:
  max_mr_size: 0x100000
  max_qp: 8
  max_qp_wr: 64
  max_sge: 2
  max_cq: 4
  max_cqe: 255
  max_mr: 16
  max_pd: 4
  max_qp_rd_atom: 1
  max_qp_init_rd_atom: 1
  atomic_cap: none
  max_ah: 4
  max_srq: 2
  max_srq_wr: 32
  max_srq_sge: 1
  device_cap_flags: [rc_rnr_nak_gen, n_notify_cq]
port:
  link_layer: ethernet
  max_mtu: 2048
  active_mtu: 1024
  gid_tbl_len: 4
  port_cap_flags: [cm_sup, ip_based_gids]
gid_table:
  - {address: ipv4, type: roce_v2}
max_inline_data: 64
rounding:
  cq: power_of_two
  qp_wr: power_of_two_minus_one
  srq_wr: exact
)";

std::string with(const std::string& from, const std::string& to) {
  std::string text = kGood;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string error_of(const std::string& text) {
  ProfileRead read = read_profile(text, "my.yaml");
  EXPECT_FALSE(read.profile.has_value());
  EXPECT_EQ(read.error.find('\n'), std::string::npos) << "one line: " << read.error;
  return read.error;
}

TEST(ProfileFile, AGoodFileGivesEveryValue) {
  ProfileRead read = read_profile(kGood, "my.yaml");
  ASSERT_TRUE(read.profile) << read.error;
  const DeviceProfile& p = *read.profile;
  EXPECT_EQ(p.name, "tiny");
  EXPECT_EQ(p.device.max_mr_size, 0x100000u);
  EXPECT_EQ(p.device.max_qp, 8);
  EXPECT_EQ(p.device.max_cqe, 255);
  EXPECT_EQ(p.device.atomic_cap, IBV_ATOMIC_NONE);
  EXPECT_EQ(p.device.device_cap_flags,
            static_cast<unsigned>(IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_N_NOTIFY_CQ));
  EXPECT_EQ(p.device.phys_port_cnt, 1);
  EXPECT_EQ(p.port.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(p.port.max_mtu, IBV_MTU_2048);
  EXPECT_EQ(p.port.active_mtu, IBV_MTU_1024);
  EXPECT_EQ(p.port.state, IBV_PORT_ACTIVE) << "the default";
  EXPECT_EQ(p.port.phys_state, 5) << "LinkUp for an active port";
  EXPECT_EQ(p.port.port_cap_flags, static_cast<uint32_t>(IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS));
  ASSERT_EQ(p.gids.size(), 1u);
  EXPECT_EQ(p.gids[0].address, GidAddress::kIpv4);
  EXPECT_EQ(p.gids[0].type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(p.max_inline_data, 64u);
  EXPECT_EQ(p.cq_rounding, Rounding::kPowerOfTwo);
  EXPECT_EQ(p.qp_wr_rounding, Rounding::kPowerOfTwoMinusOne);
  EXPECT_EQ(p.srq_wr_rounding, Rounding::kExact);
  EXPECT_TRUE(p.ethernet());
}

TEST(ProfileFile, FlagsMayBeGivenAsAnInteger) {
  ProfileRead read = read_profile(
      with("device_cap_flags: [rc_rnr_nak_gen, n_notify_cq]", "device_cap_flags: 0x5000"), "x");
  ASSERT_TRUE(read.profile) << read.error;
  EXPECT_EQ(read.profile->device.device_cap_flags, 0x5000u);
}

TEST(ProfileFile, EveryKindOfBadInputIsOneLineNamingTheFileLineAndKey) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"device: [unclosed", "my.yaml line 1: not valid YAML: "},
      {with("  max_qp: 8", "  max_qpp: 8"),
       "my.yaml line 4: device.max_qpp: unknown key; expected one of fw_ver, board_id,"},
      {with("  max_qp: 8", "  max_qp: many"),
       "my.yaml line 4: device.max_qp: 'many' is not an integer; expected an integer "
       "1..2147483647"},
      {with("  max_qp: 8", "  max_qp: -1"), "device.max_qp: '-1' is not an integer"},
      {with("  max_qp: 8", "  max_qp: 0"), "device.max_qp: '0' is out of range"},
      {with("  max_qp: 8", "  max_qp: 4294967296"), "device.max_qp: '4294967296' is out of range"},
      {with("  max_qp: 8", "  max_qp: [8]"), "device.max_qp: not a scalar"},
      {with("  max_qp: 8\n", ""), "my.yaml line 3: device.max_qp: missing"},
      {with("  link_layer: ethernet", "  link_layer: token_ring"),
       "my.yaml line 20: port.link_layer: 'token_ring' is not valid; expected one of "
       "infiniband, ethernet"},
      {with("  max_mtu: 2048", "  max_mtu: 9000"),
       "port.max_mtu: '9000' is not valid; expected one of 256, 512, 1024, 2048, 4096"},
      {with("  active_mtu: 1024", "  active_mtu: 4096"),
       "port.active_mtu: larger than port.max_mtu"},
      {with("device_cap_flags: [rc_rnr_nak_gen, n_notify_cq]", "device_cap_flags: [warp_drive]"),
       "device.device_cap_flags: 'warp_drive' is not valid; expected one of resize_max_wr,"},
      {with("type: roce_v2", "type: ib"),
       "gid_table[0]: type ib on an ethernet port; expected roce_v1 or roce_v2"},
      {with("{address: ipv4, type: roce_v2}", "{address: ipv4}"), "gid_table[0].type: missing"},
      {with("gid_table:\n  - {address: ipv4, type: roce_v2}", "gid_table: []"),
       "gid_table: expected a list of {address: ..., type: ...} entries"},
      {with("  cq: power_of_two\n", "  cq: fibonacci\n"),
       "rounding.cq: 'fibonacci' is not valid; expected one of exact, power_of_two, "
       "power_of_two_minus_one"},
      {with("max_inline_data: 64", "max_inline_data: 64\ncolour: blue"),
       "colour: unknown key; expected one of name, description, device,"},
      {"42", "my.yaml line 1: expected a mapping of keys to values"},
  };
  for (const Case& c : cases) {
    const std::string error = error_of(c.text);
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in: " << error;
    EXPECT_EQ(error.rfind("my.yaml", 0), 0u) << error;
  }
}

TEST(ProfileFile, AnIbPortTakesOnlyIbLinkLocalGids) {
  std::string text = with("  link_layer: ethernet", "  link_layer: infiniband");
  EXPECT_NE(error_of(text).find("gid_table[0]: a RoCE type on an infiniband port; expected ib"),
            std::string::npos);
  text.replace(text.find("type: roce_v2"), 13, "type: ib");
  EXPECT_NE(error_of(text).find("an ipv4 address on an infiniband port"), std::string::npos);
}

TEST(ProfileFile, AnUnreadableFileIsNamed) {
  ProfileRead read = read_profile_file("/nonexistent/nic.yaml");
  EXPECT_FALSE(read.profile);
  EXPECT_EQ(read.error, "/nonexistent/nic.yaml: cannot be read (No such file or directory)");
}

TEST(ProfileFile, RoundingRules) {
  EXPECT_EQ(round_size(Rounding::kExact, 100), 100u);
  EXPECT_EQ(round_size(Rounding::kPowerOfTwo, 100), 128u);
  EXPECT_EQ(round_size(Rounding::kPowerOfTwo, 128), 128u);
  EXPECT_EQ(round_size(Rounding::kPowerOfTwoMinusOne, 100), 127u);
  EXPECT_EQ(round_size(Rounding::kPowerOfTwoMinusOne, 127), 127u);
  EXPECT_EQ(round_size(Rounding::kPowerOfTwoMinusOne, 128), 255u);
  EXPECT_EQ(round_size(Rounding::kPowerOfTwoMinusOne, 1), 1u);
  EXPECT_EQ(round_size(Rounding::kPowerOfTwo, 0), 0u) << "an absent queue stays absent";
}

// ---- built-in profiles ------------------------------------------------------

TEST(BuiltinProfiles, AreIbRoceAndCx6AndEachReadsCleanly) {
  std::vector<std::string> names;
  for (const auto& [name, text] : builtin_profiles()) {
    names.emplace_back(name);
    ProfileRead read = read_profile(text, std::string(name));
    ASSERT_TRUE(read.profile) << read.error;
    EXPECT_EQ(read.profile->name, name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cx6", "ib", "roce"}));
}

TEST(BuiltinProfiles, TheEmbeddedTextIsTheFileInTheRepository) {
  for (const auto& [name, text] : builtin_profiles()) {
    std::ifstream in(std::string(VERBFAULT_PROFILES_DIR) + "/" + std::string(name) + ".yaml");
    ASSERT_TRUE(in) << name;
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(file, text) << name;
  }
}

TEST(BuiltinProfiles, IbIsTheDeviceAsItWasBeforeProfiles) {
  ProfileRead read = load_profile("ib");
  ASSERT_TRUE(read.profile) << read.error;
  const DeviceProfile& p = *read.profile;
  EXPECT_EQ(p.port.link_layer, IBV_LINK_LAYER_INFINIBAND);
  EXPECT_EQ(p.port.active_mtu, IBV_MTU_4096);
  EXPECT_EQ(p.port.gid_tbl_len, 128);
  EXPECT_EQ(p.port.port_cap_flags,
            static_cast<uint32_t>(IBV_PORT_SM | IBV_PORT_CM_SUP | IBV_PORT_SYS_IMAGE_GUID_SUP |
                                  IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP | IBV_PORT_CAP_MASK2_SUP));
  EXPECT_EQ(p.port.phys_state, 5);
  EXPECT_EQ(p.device.device_cap_flags,
            static_cast<unsigned>(IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
                                  IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_PORT_ACTIVE_EVENT |
                                  IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
                                  IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_N_NOTIFY_CQ |
                                  IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B));
  EXPECT_EQ(p.device.max_mw, 1 << 24) << "memory windows of types 1 and 2B";
  EXPECT_EQ(p.device.max_qp, 1 << 18);
  EXPECT_EQ(p.device.max_cqe, (1 << 22) - 1);
  EXPECT_EQ(p.device.max_srq_wr, (1 << 15) - 1);
  EXPECT_EQ(p.device.vendor_id, 0x0002fau);
  EXPECT_EQ(p.max_inline_data, 256u);
  ASSERT_EQ(p.gids.size(), 1u);
  EXPECT_EQ(p.gids[0].type, IBV_GID_TYPE_IB);
  EXPECT_EQ(p.cq_rounding, Rounding::kPowerOfTwoMinusOne);
  EXPECT_EQ(p.qp_wr_rounding, Rounding::kExact);
}

TEST(BuiltinProfiles, RoceIsAnEthernetPortWithRxesGidTable) {
  ProfileRead read = load_profile("roce");
  ASSERT_TRUE(read.profile) << read.error;
  const DeviceProfile& p = *read.profile;
  EXPECT_TRUE(p.ethernet());
  EXPECT_EQ(p.port.active_mtu, IBV_MTU_1024);
  EXPECT_EQ(p.port.max_mtu, IBV_MTU_4096);
  EXPECT_EQ(p.port.gid_tbl_len, 1024);
  ASSERT_EQ(p.gids.size(), 2u);
  EXPECT_EQ(p.gids[0].address, GidAddress::kLinkLocal);
  EXPECT_EQ(p.gids[0].type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(p.gids[1].address, GidAddress::kIpv4);
  EXPECT_EQ(p.gids[1].type, IBV_GID_TYPE_ROCE_V2);
}

TEST(BuiltinProfiles, Cx6HasAConnectX6sLimitsAndMlx5sRounding) {
  ProfileRead read = load_profile("cx6");
  ASSERT_TRUE(read.profile) << read.error;
  const DeviceProfile& p = *read.profile;
  EXPECT_TRUE(p.ethernet());
  EXPECT_EQ(p.device.max_qp, 262144);
  EXPECT_EQ(p.device.max_qp_wr, 32768);
  EXPECT_EQ(p.device.max_sge, 30);
  EXPECT_EQ(p.device.max_cqe, 4194303);
  EXPECT_EQ(p.device.max_srq_wr, 32767);
  EXPECT_EQ(p.device.max_ah, 2147483647);
  EXPECT_EQ(p.device.vendor_part_id, 4123u);
  EXPECT_EQ(p.port.gid_tbl_len, 255);
  ASSERT_EQ(p.gids.size(), 4u);
  EXPECT_EQ(p.gids[0].type, IBV_GID_TYPE_ROCE_V1);
  EXPECT_EQ(p.gids[1].type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(p.cq_rounding, Rounding::kPowerOfTwoMinusOne);
  EXPECT_EQ(p.qp_wr_rounding, Rounding::kPowerOfTwo);
  EXPECT_EQ(p.srq_wr_rounding, Rounding::kPowerOfTwoMinusOne);
}

// ---- VERBFAULT_SIM_PROFILE --------------------------------------------------

std::vector<std::string> names_of(const ProfileSelection& s) {
  std::vector<std::string> names;
  for (const DeviceProfile& p : s.profiles) names.push_back(p.name);
  return names;
}

TEST(ProfileSelection, UnsetOrEmptyIsIbForEveryDevice) {
  EXPECT_EQ(names_of(select_profiles(nullptr, 2)), (std::vector<std::string>{"ib", "ib"}));
  EXPECT_EQ(names_of(select_profiles("", 1)), (std::vector<std::string>{"ib"}));
}

TEST(ProfileSelection, OneNameIsForEveryDevice) {
  ProfileSelection s = select_profiles("roce", 3);
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(names_of(s), (std::vector<std::string>{"roce", "roce", "roce"}));
}

TEST(ProfileSelection, PerDeviceNamesTheRestStayIb) {
  ProfileSelection s = select_profiles("vfsim2=cx6,vfsim0=roce", 3);
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(names_of(s), (std::vector<std::string>{"roce", "ib", "cx6"}));
}

TEST(ProfileSelection, APathIsReadAsAFile) {
  char path[] = "/tmp/verbfault-profile-XXXXXX.yaml";
  const int fd = mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, kGood.data(), kGood.size()), static_cast<ssize_t>(kGood.size()));
  close(fd);
  ProfileSelection s = select_profiles(path, 1);
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(names_of(s), (std::vector<std::string>{"tiny"}));
  s = select_profiles((std::string("vfsim1=") + path).c_str(), 2);
  EXPECT_EQ(names_of(s), (std::vector<std::string>{"ib", "tiny"}));
  std::remove(path);
}

TEST(ProfileSelection, EveryBadValueIsOneLineNamingTheVariableAndNoDeviceGetsAProfile) {
  struct Case {
    const char* value;
    int devices;
    std::string expected;
  };
  const Case cases[] = {
      {"rocky", 1,
       "verbfault: VERBFAULT_SIM_PROFILE='rocky': unknown profile 'rocky'; expected a built-in "
       "profile (cx6, ib, roce) or the path of a YAML file"},
      {"vfsim0=roce,vfsim3=ib", 2,
       "verbfault: VERBFAULT_SIM_PROFILE='vfsim0=roce,vfsim3=ib': no simulated device 'vfsim3'; "
       "expected vfsim0..vfsim1"},
      {"vfsim0=roce,vfsim0=ib", 2,
       "verbfault: VERBFAULT_SIM_PROFILE='vfsim0=roce,vfsim0=ib': vfsim0 is named twice"},
      {"vfsim0=", 1,
       "verbfault: VERBFAULT_SIM_PROFILE='vfsim0=': 'vfsim0=' is not of the form vfsimN=profile"},
      {"vfsim0=roce,", 1, "'' is not of the form vfsimN=profile"},
      {"/nonexistent/nic.yaml", 1,
       "verbfault: VERBFAULT_SIM_PROFILE='/nonexistent/nic.yaml': /nonexistent/nic.yaml: cannot "
       "be read (No such file or directory)"},
      {"vfsim1=nope", 2, "unknown profile 'nope'"},
      {"rocky", 0, "unknown profile 'rocky'"},  // checked even with no device
  };
  for (const Case& c : cases) {
    ProfileSelection s = select_profiles(c.value, c.devices);
    EXPECT_TRUE(s.profiles.empty()) << c.value;
    EXPECT_NE(s.error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in: " << s.error;
    EXPECT_EQ(s.error.find('\n'), std::string::npos) << s.error;
  }
}

TEST(ProfileSelection, AMalformedFileNamesTheVariableTheFileAndTheKey) {
  char path[] = "/tmp/verbfault-profile-XXXXXX.yaml";
  const int fd = mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  const std::string bad = with("  max_sge: 2", "  max_sge: two");
  ASSERT_EQ(write(fd, bad.data(), bad.size()), static_cast<ssize_t>(bad.size()));
  close(fd);
  ProfileSelection s = select_profiles(path, 1);
  EXPECT_EQ(s.error, "verbfault: VERBFAULT_SIM_PROFILE='" + std::string(path) + "': " + path +
                         " line 6: device.max_sge: 'two' is not an integer; expected an integer "
                         "1..2147483647");
  std::remove(path);
}

}  // namespace
}  // namespace verbfault::sim
