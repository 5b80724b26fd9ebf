// Plans: the YAML and one-line forms, their errors, and round trips.
#include "verbfault/plan.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

namespace verbfault {
namespace {

// The error message of parsing `text` as YAML, or "" when it parses.
std::string yaml_error(const std::string& text) {
  try {
    parse_plan_yaml(text, "plan.yaml");
  } catch (const PlanError& error) {
    return error.what();
  }
  return "";
}

std::string rule_error(const std::string& text) {
  try {
    parse_rule(text, "--fault");
  } catch (const PlanError& error) {
    return error.what();
  }
  return "";
}

TEST(Plans, TheReadmesHeadlineFaultsParse) {
  const Plan plan = parse_plan_yaml(R"(
rules:
  - kind: cq_overflow
    object: cq#0
    nth: 5
  - kind: flush
    object: qp#1
    nth: 3
  - kind: rnr_retry_exhausted
    qp_type: rc
    opcode: send
    probability: 0.01
    count: 2
  - kind: spurious_cq_event
    object: cq#1
    every: 4
)");
  ASSERT_EQ(plan.rules.size(), 4u);
  const Rule& overflow = plan.rules[0];
  EXPECT_EQ(overflow.kind, FaultKind::cq_overflow);
  EXPECT_EQ(overflow.selector.object, (ObjectRef{ObjectKind::cq, 0}));
  EXPECT_EQ(overflow.trigger.kind, Trigger::Kind::nth);
  EXPECT_EQ(overflow.trigger.n, 5u);
  const Rule& rnr = plan.rules[2];
  EXPECT_EQ(rnr.selector.qp_type, IBV_QPT_RC);
  EXPECT_EQ(rnr.selector.opcode, Opcode::send);
  EXPECT_EQ(rnr.trigger.kind, Trigger::Kind::probability);
  EXPECT_DOUBLE_EQ(rnr.trigger.probability, 0.01);
  EXPECT_EQ(rnr.count, 2u);
  EXPECT_EQ(plan.rules[3].trigger.kind, Trigger::Kind::every);
  // The one-line forms of docs/fault-kinds.md are the same rules.
  EXPECT_EQ(parse_rules("cq_overflow cq#0 nth=5; flush qp#1 nth=3; "
                        "rnr_retry_exhausted type=rc opcode=send p=0.01 count=2; "
                        "spurious_cq_event cq#1 every=4"),
            plan);
}

TEST(Plans, KindParametersParse) {
  const Rule error = parse_rule("completion_error(rem_access_err) qp#2 side=send nth=1");
  EXPECT_EQ(error.status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(error.selector.side, Side::send);
  const Rule failure = parse_rule("verb_failure(post_send,ENOMEM) wr_id=0x10/0xff");
  EXPECT_EQ(failure.verb, Verb::post_send);
  EXPECT_EQ(failure.error, ENOMEM);
  EXPECT_EQ(failure.selector.wr_id, 0x10u);
  EXPECT_EQ(failure.selector.wr_id_mask, 0xffu);
  EXPECT_EQ(parse_rule("async_event(qp_fatal) qp#0").event, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(parse_rule("delayed_completion(3) cq#0").polls, 3u);
  EXPECT_EQ(parse_rule("port_down(1) context#0 window=2..5").trigger.to, 5u);
}

// Every kind, parameter, selector field and trigger survives both forms.
TEST(Plans, EveryRuleRoundTripsThroughBothForms) {
  const std::vector<std::string> rules = {
      "cq_overflow cq#0 nth=5",
      "flush qp#1 every=3 count=2",
      "rnr_retry_exhausted type=rc opcode=send p=0.25",
      "retry_exhausted qp#0 window=2..7",
      "completion_error(loc_len_err) side=recv wr_id=0x5/0xf",
      "spurious_cq_event cq#1 every=4",
      "drop_cq_event cq#0 nth=1",
      "coalesce_cq_event cq#0 nth=2",
      "async_event(srq_limit_reached) srq#0 nth=1",
      "verb_failure(modify_qp,EINVAL) type=ud",
      "delayed_completion(2) cq#0 opcode=rdma_write p=0.5",
      "partial_poll cq#3",
      "port_down(1) context#0 nth=9",
      "device_fatal context#0 nth=4",
      "flush qp#0 proc=1 nth=2",
      "partial_poll proc=ib_write_bw",
      "cm_addr_error cm_id#2 nth=1",
      "cm_route_error p=0.5",
      "cm_unreachable proc=1",
      "cm_reject cm_id#0 count=1",
      "cm_lost_disconnect cm_id#3",
      "cm_timewait_exit_missing every=2",
      "cm_delay(established,50) cm_id#3 nth=1",
      "cm_delay(connect_response,1) proc=0",
      "cm_disconnect cm_id#2 nth=3",
  };
  Plan plan;
  for (const std::string& text : rules) {
    const Rule rule = parse_rule(text);
    EXPECT_EQ(parse_rule(to_cli(rule)), rule) << text << " -> " << to_cli(rule);
    plan.rules.push_back(rule);
  }
  const std::string yaml = to_yaml(plan);
  EXPECT_EQ(parse_plan_yaml(yaml), plan) << yaml;
  EXPECT_EQ(to_yaml(parse_plan_yaml(yaml)), yaml) << "the YAML writer is canonical";
}

// proc=: a member index 0..63 (VERBFAULT_PROC) or an executable's name,
// in both forms, written back as read.
TEST(Plans, ProcSelectorsParsePrintAndRoundTrip) {
  const Rule by_index = parse_rule("flush qp#1 proc=1 nth=3");
  ASSERT_TRUE(by_index.selector.proc.has_value());
  EXPECT_EQ(by_index.selector.proc->index, 1u);
  EXPECT_EQ(by_index.selector.proc->name, "");
  EXPECT_EQ(to_cli(by_index), "flush qp#1 proc=1 nth=3");
  const Rule by_name = parse_rule("partial_poll proc=ib_write_bw");
  ASSERT_TRUE(by_name.selector.proc.has_value());
  EXPECT_FALSE(by_name.selector.proc->index.has_value());
  EXPECT_EQ(by_name.selector.proc->name, "ib_write_bw");
  EXPECT_EQ(parse_rule("flush proc=0x3").selector.proc->index, 3u) << "hex, as every number";
  EXPECT_EQ(parse_rule("flush proc=63").selector.proc->index, 63u);
  EXPECT_EQ(parse_rule("flush proc=python3.11").selector.proc->name, "python3.11");
  EXPECT_EQ(parse_rule("flush proc=g++-12").selector.proc->name, "g++-12");

  const Plan yaml = parse_plan_yaml(
      "rules:\n  - kind: flush\n    proc: 1\n  - kind: flush\n    proc: sample_rc\n"
      "  - kind: flush\n    proc: \"null\"\n");
  EXPECT_EQ(yaml, parse_rules("flush proc=1; flush proc=sample_rc; flush proc=null"));
  const std::string text = to_yaml(yaml);
  EXPECT_NE(text.find("    proc: 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    proc: sample_rc\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    proc: \"null\"\n"), std::string::npos) << "YAML's null, quoted\n"
                                                                  << text;
  EXPECT_EQ(parse_plan_yaml(text), yaml) << text;
  for (const Rule& rule : yaml.rules) EXPECT_EQ(parse_rule(to_cli(rule)), rule) << to_cli(rule);
}

TEST(Plans, ABadProcIsOneLineNamingTheRuleAndWhatWasExpected) {
  const std::string expected =
      "expected a process index 0..63 (VERBFAULT_PROC) or an executable name";
  for (const std::string text :
       {"flush qp#0 proc=", "flush qp#0 proc=64", "flush qp#0 proc=99999999999",
        "flush qp#0 proc=a/b", "flush qp#0 proc=-x", "flush qp#0 proc=a:b"}) {
    const std::string error = rule_error(text);
    EXPECT_NE(error.find("--fault: '" + text.substr(11) + "': proc '"), std::string::npos)
        << text << ": " << error;
    EXPECT_NE(error.find(expected), std::string::npos) << text << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  }
  for (const std::string value : {"", "64", "\"\"", "~"}) {
    const std::string error =
        yaml_error("rules:\n  - kind: flush\n    object: qp#0\n    proc: " + value + "\n");
    EXPECT_NE(error.find("plan.yaml:4: proc '"), std::string::npos) << value << ": " << error;
    EXPECT_NE(error.find(expected), std::string::npos) << value << ": " << error;
  }
  // A rule made by hand (Session, generators) is checked by validate().
  Rule rule = parse_rule("flush qp#0");
  rule.selector.proc = ProcessRef{64, {}};
  try {
    validate(rule, "Session");
    FAIL() << "proc 64 accepted";
  } catch (const PlanError& error) {
    EXPECT_EQ(std::string(error.what()),
              "Session: flush: proc '64': " + expected + " (letters, digits, '_', '.', '+', '-')");
  }
  rule.selector.proc = ProcessRef{std::nullopt, ""};
  EXPECT_THROW(validate(rule, "Session"), PlanError) << "neither an index nor a name";
  rule.selector.proc = ProcessRef{std::nullopt, "12"};
  EXPECT_THROW(validate(rule, "Session"), PlanError) << "a name that reads as an index";
}

TEST(Plans, YamlErrorsNameTheFileTheLineAndWhatWasExpected) {
  const std::string unknown = yaml_error("rules:\n  - kind: cq_overflw\n    object: cq#0\n");
  EXPECT_NE(unknown.find("plan.yaml:2: "), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown fault kind 'cq_overflw': expected one of"), std::string::npos)
      << unknown;
  const std::string bad_object = yaml_error("rules:\n  - kind: flush\n    object: qp#x\n");
  EXPECT_NE(bad_object.find("plan.yaml:3: "), std::string::npos) << bad_object;
  const std::string not_yaml = yaml_error("rules: [\n");
  EXPECT_NE(not_yaml.find("plan.yaml:"), std::string::npos) << not_yaml;
  EXPECT_NE(not_yaml.find("not YAML"), std::string::npos) << not_yaml;
  EXPECT_NE(yaml_error("faults: []\n").find("unknown key 'faults': expected rules"),
            std::string::npos);
  EXPECT_NE(yaml_error("rules:\n  - object: cq#0\n").find("a rule without 'kind'"),
            std::string::npos);
  EXPECT_EQ(yaml_error("rules: []\n"), "") << "an empty plan is a plan";
}

TEST(Plans, RuleErrorsAreOneLineWithWhatWasExpected) {
  EXPECT_NE(
      rule_error("cq_overflw cq#0").find("--fault: 'cq_overflw': unknown fault kind: expected"),
      std::string::npos);
  EXPECT_NE(rule_error("completion_error qp#0").find("expected an error status"), std::string::npos)
      << "a completion_error needs its status";
  EXPECT_NE(rule_error("completion_error(success) qp#0").find("expected an error status"),
            std::string::npos);
  EXPECT_NE(rule_error("flush qp#0 nth=0").find("nth '0': expected a number from 1"),
            std::string::npos);
  EXPECT_NE(rule_error("flush qp#0 p=1.5").find("expected a number in (0, 1]"), std::string::npos);
  EXPECT_NE(rule_error("flush qp#0 window=5..2").find("expected a start below the end"),
            std::string::npos);
  EXPECT_NE(rule_error("flush qp#0 count=0").find("count '0': expected a number from 1"),
            std::string::npos);
  EXPECT_NE(rule_error("flush qp#0 colour=red").find("unknown option"), std::string::npos);
  EXPECT_NE(rule_error("verb_failure(post_send) qp#0").find("expected"), std::string::npos);
  EXPECT_NE(rule_error("flush wr_id_mask=0xff").find("expected"), std::string::npos);
  for (const std::string& text : {std::string("cq_overflw cq#0"), std::string("flush qp#0 nth=0")})
    EXPECT_EQ(rule_error(text).find('\n'), std::string::npos) << "one line";
}

// The input an error quotes may hold control characters (a YAML escape
// decodes to a line break; a rule may come from an environment variable):
// they are written as C escapes, and the message stays one line.
TEST(Plans, ControlCharactersInAQuotedInputAreEscaped) {
  const std::string yaml = yaml_error("rules:\n  - kind: \"cq\\nover\\tflow\\x01\"\n");
  EXPECT_NE(yaml.find("unknown fault kind 'cq\\nover\\tflow\\x01'"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find('\n'), std::string::npos) << yaml;
  const std::string rule = rule_error(
      "cq\x01over\x7f"
      "flow cq#0");
  EXPECT_NE(rule.find("'cq\\x01over\\x7fflow'"), std::string::npos) << rule;
  const std::string not_yaml = yaml_error("rules: \"\\\x01\"\n");
  EXPECT_NE(not_yaml.find("not YAML"), std::string::npos) << not_yaml;
  EXPECT_NE(not_yaml.find("unknown escape character: \\x01"), std::string::npos) << not_yaml;
  EXPECT_STREQ(PlanError("caf\xc3\xa9: expected").what(), "caf\xc3\xa9: expected")
      << "UTF-8 text is kept";
}

// A CM fault acts on an rdma_cm id, a verbs fault on a verbs object: each
// named object of the other kind, and a CM rule's work-request selectors,
// are one line naming the rule and what was expected.
TEST(Plans, CmFaultsSelectCmIdsAndVerbsFaultsVerbsObjects) {
  EXPECT_NE(rule_error("cm_reject qp#0").find("cm_reject: object 'qp#0': expected an rdma_cm id"),
            std::string::npos)
      << rule_error("cm_reject qp#0");
  EXPECT_NE(rule_error("flush cm_id#1").find("flush: object 'cm_id#1': expected a verbs object"),
            std::string::npos)
      << rule_error("flush cm_id#1");
  EXPECT_NE(rule_error("cm_unreachable opcode=send").find("expected only object and proc"),
            std::string::npos);
  EXPECT_NE(rule_error("cm_reject thread#0").find("kind#index with kind one of"),
            std::string::npos);
  EXPECT_EQ(parse_rule("cm_lost_disconnect cm_id#3").selector.object,
            (ObjectRef{ObjectKind::cm_id, 3}));
  const Rule delay = parse_rule("cm_delay(disconnected,20)");
  EXPECT_EQ(delay.cm_event, CmEvent::disconnected);
  EXPECT_EQ(delay.delay_ms, 20u);
  EXPECT_NE(rule_error("cm_delay(establshed,20)").find("unknown cm_event 'establshed'"),
            std::string::npos)
      << rule_error("cm_delay(establshed,20)");
  EXPECT_NE(rule_error("cm_delay(established,0)").find("delay_ms '0': expected a number from 1"),
            std::string::npos);
  EXPECT_NE(rule_error("cm_delay cm_id#0").find("expected e.g. cm_delay(established,50)"),
            std::string::npos);
}

TEST(Plans, AParameterOfAnotherKindIsRejected) {
  Rule rule = parse_rule("flush qp#0");
  rule.polls = 3;  // delayed_completion's parameter
  EXPECT_THROW(validate(rule), PlanError);
}

TEST(Plans, MissingPlanFileIsAnError) {
  try {
    parse_plan_file("/nonexistent/plan.yaml");
    FAIL() << "no error";
  } catch (const PlanError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/plan.yaml: cannot open"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace verbfault
