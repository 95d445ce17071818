#include "check/signature.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::check {
namespace {

// The opcode of the global instruction `name` in `program`, or `name` itself.
std::string OpcodeOf(const HloModule& program, const std::string& name) {
  for (const auto& c : program.computations()) {
    if (HloInstruction* i = c->FindInstruction(name)) {
      return std::string(HloOpcodeString(i->opcode()));
    }
  }
  return name;
}

// The instruction that produces flat output `leaf` (array leaves in order) of `instr`: through
// tuple instructions to their operands; any other tuple-shaped instruction is itself the answer.
const HloInstruction* LeafProducer(const HloInstruction* instr, int64_t leaf) {
  while (instr->opcode() == HloOpcode::kTuple) {
    const HloInstruction* next = nullptr;
    for (const HloInstruction* operand : instr->operands()) {
      const int64_t leaves = operand->shape().IsTuple() ? operand->shape().LeafCount() : 1;
      if (leaf < leaves) {
        next = operand;
        break;
      }
      leaf -= leaves;
    }
    if (next == nullptr) return instr;
    instr = next;
  }
  return instr;
}

// The names of the instructions `instruction` depends on (its computation's), itself included.
absl::flat_hash_set<std::string> ConeOf(const HloInstruction* instruction) {
  absl::flat_hash_set<std::string> cone;
  std::vector<const HloInstruction*> stack = {instruction};
  while (!stack.empty()) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (!cone.insert(i->name()).second) continue;
    for (const HloInstruction* operand : i->operands()) stack.push_back(operand);
  }
  return cone;
}

// The names of the instructions of `program`'s entry that `output` (a flat leaf index) depends
// on, itself included.
absl::flat_hash_set<std::string> ConeOfOutput(const HloModule& program, int64_t output) {
  return ConeOf(LeafProducer(program.entry()->root(), output));
}

// The opcode of the global instruction a failure points at: the diverging one (CauseDivergence),
// else the producer of the wrong output of XLA's execution (or of the output our interpreter and
// XLA's one-device run disagree on), else the root (for crashes: the instruction the message
// starts with).
std::string Where(const CheckOutcome& outcome, const HloModule& program) {
  if (const oracle::Divergence* divergence = CauseDivergence(outcome, program)) {
    const std::string& holds = divergence->holds;
    // The name is one of the module the oracle judged against (XLA: the module XLA received,
    // which renames instructions, d -> d.1).
    // A tuple "diverges" when one of its outputs does: XLA's wrong output names the producer.
    const bool xla_output_known =
        outcome.xla_end_to_end.has_value() && outcome.xla_end_to_end->output >= 0;
    auto usable = [&](const std::string& op) { return op != "tuple" || !xla_output_known; };
    if (outcome.judged_global != nullptr) {
      std::string op = OpcodeOf(*outcome.judged_global, holds);
      if (op != holds && usable(op)) return op;
    }
    for (const std::string& name : {holds, holds.substr(0, holds.rfind('.'))}) {
      std::string op = OpcodeOf(program, name);
      if (op != name && usable(op)) return op;
    }
  }
  if (outcome.status == CheckStatus::kCrash && outcome.judged_global == nullptr) {
    const std::string& m = outcome.message;
    const std::string first = m.substr(0, std::min<size_t>(m.find_first_of(" :("), 24));
    std::string op = OpcodeOf(program, first);
    if (op != first) return op;
  }
  if (outcome.xla_end_to_end.has_value() && outcome.xla_end_to_end->output >= 0) {
    return std::string(HloOpcodeString(
        LeafProducer(program.entry()->root(), outcome.xla_end_to_end->output)->opcode()));
  }
  // Our interpreter and XLA's one-device run disagree on the global program: the output they
  // disagree on names its producer (a dynamic-slice XLA starts elsewhere, not the root tuple).
  if (outcome.finding == Finding::kOracleDisagrees && outcome.interpreter_vs_xla.has_value() &&
      outcome.interpreter_vs_xla->output >= 0) {
    return std::string(HloOpcodeString(
        LeafProducer(program.entry()->root(), outcome.interpreter_vs_xla->output)->opcode()));
  }
  return std::string(HloOpcodeString(program.entry()->root()->opcode()));
}

// The root cause of a wrong result the oracle localised: among the suspects of its first
// divergence (the unclaimed instructions of the partitioned program that made the first wrong
// value, oracle/equivalence.h), the first collective in program order, else the first
// dynamic-slice, slice or dynamic-update-slice (a device's part cut out or written, by
// partition-id or statically; a slice is named dynamic-slice), else the diverging instruction
// itself. One bug of a partitioner shows up under many global ops (a wrong all-gather feeds an
// add here, a negate there) but through the same partitioned op. A reduce-scatter is named
// all-reduce: it is the all-reduce of partial values whose result each device slices (the
// partitioner makes one from the other, as XLA's ReduceScatterCreator does), so a wrong partial
// value (unmasked padding in a local reduce) reaches the sum through either.
std::optional<std::string> RootCauseOp(const CheckOutcome& outcome, const HloModule& program) {
  const oracle::Divergence* divergence = CauseDivergence(outcome, program);
  if (divergence == nullptr) return std::nullopt;
  const auto& suspects = divergence->suspects;
  if (suspects.empty()) return std::nullopt;
  for (const auto& s : suspects) {
    if (s.opcode == HloOpcode::kReduceScatter)
      return std::string(HloOpcodeString(HloOpcode::kAllReduce));
    if (IsCollective(s.opcode)) return std::string(HloOpcodeString(s.opcode));
  }
  for (const auto& s : suspects) {
    if (s.opcode == HloOpcode::kDynamicUpdateSlice) return std::string(HloOpcodeString(s.opcode));
    // A device's part cut out of a bigger value: by partition-id, or by a static slice when
    // every device's offset is the same (one handler, one name).
    if (s.opcode == HloOpcode::kDynamicSlice || s.opcode == HloOpcode::kSlice) {
      return std::string(HloOpcodeString(HloOpcode::kDynamicSlice));
    }
  }
  return std::string(HloOpcodeString(suspects.back().opcode));
}

// XLA's root cause, mapped back to the source: the earliest suspect of the first divergence whose
// metadata names an instruction of the module XLA received (op_name), as that instruction's
// opcode. XLA's partitioner lowers one source op into many (halo exchanges, dynamic-slices by
// partition-id): the source op of the first wrong value names the handler that made it.
std::optional<std::string> XlaRootCauseOp(const CheckOutcome& outcome, const HloModule& program) {
  const oracle::Divergence* divergence = CauseDivergence(outcome, program);
  if (divergence == nullptr || outcome.partitioned == nullptr ||
      outcome.partitioned->entry() == nullptr) {
    return std::nullopt;
  }
  const HloModule& received = outcome.judged_global != nullptr ? *outcome.judged_global : program;
  std::map<std::string, const HloInstruction*> source_by_op_name;
  for (const auto& g : received.entry()->instructions()) {
    const std::string op_name = MetadataOpName(*g);
    if (!op_name.empty() && g->opcode() != HloOpcode::kParameter) {
      source_by_op_name.emplace(op_name, g.get());
    }
  }
  // The wrong value depends only on what its global instruction depends on: a suspect made for
  // another source op (a partition offset XLA's CSE shares with a sort's handler) is not it.
  const HloInstruction* wrong = received.entry()->FindInstruction(divergence->holds);
  const absl::flat_hash_set<std::string> cone =
      wrong != nullptr ? ConeOf(wrong) : absl::flat_hash_set<std::string>{};
  std::optional<std::string> outside_cone;
  for (const auto& suspect : divergence->suspects) {
    const HloInstruction* i = outcome.partitioned->entry()->FindInstruction(suspect.name);
    if (i == nullptr) continue;
    auto source = source_by_op_name.find(MetadataOpName(*i));
    if (source == source_by_op_name.end()) continue;
    const std::string op(HloOpcodeString(source->second->opcode()));
    if (cone.empty() || cone.contains(source->second->name())) return op;
    if (!outside_cone.has_value()) outside_cone = op;
  }
  return outside_cone;
}

// Where a failure is named: its root cause when the oracle localised it (ours: the op of the
// partitioned program; XLA's: the source op of its first wrong value), else the global op (Where).
std::string RootCauseOrWhere(const CheckOutcome& outcome, const HloModule& program, bool ours) {
  std::optional<std::string> root =
      ours ? RootCauseOp(outcome, program) : XlaRootCauseOp(outcome, program);
  return root.has_value() ? *root : Where(outcome, program);
}

// Where in XLA a crash or rejection happened: the source file of its first `file.cc:LINE`
// (`spmd_partitioner_util` of "F1201 ... spmd_partitioner_util.h:118] Check failed"), else
// `fallback`.
std::string XlaSourceFile(const std::string& message, const std::string& fallback) {
  if (message.find("can't be translated to XLA HLO") != std::string::npos) {
    return "stablehlo-to-hlo";
  }
  for (const char* ext : {".cc:", ".h:"}) {
    const size_t at = message.find(ext);
    if (at == std::string::npos) continue;
    size_t begin = at;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(message[begin - 1])) ||
                         message[begin - 1] == '_')) {
      --begin;
    }
    if (begin < at) return message.substr(begin, at - begin);
  }
  return fallback;
}

}  // namespace

std::string FailedCheckOf(const std::string& message) {
  size_t begin = std::string::npos;
  if (const size_t ret = message.find("RET_CHECK failure ("); ret != std::string::npos) {
    const size_t close = message.find(") ", ret);
    if (close != std::string::npos) begin = close + 2;
  } else if (const size_t check = message.find("Check failed: "); check != std::string::npos) {
    begin = check + 14;
  }
  if (begin == std::string::npos) return "";
  std::string condition = message.substr(begin, message.find('\n', begin) - begin);
  while (!condition.empty() && std::isspace(static_cast<unsigned char>(condition.back()))) {
    condition.pop_back();
  }
  // A CHECK_EQ's values ("a == b (2 vs. 3)") change as a reduction shrinks the module.
  if (const size_t values = condition.rfind(" (");
      values != std::string::npos && absl::EndsWith(condition, ")") &&
      condition.find(" vs. ", values) != std::string::npos) {
    condition.erase(values);
  }
  return condition;
}

const oracle::Divergence* CauseDivergence(const CheckOutcome& outcome, const HloModule& program) {
  const oracle::EquivReport& report = outcome.report;
  if (report.verdict != Verdict::kFails || !report.first_divergence.has_value()) return nullptr;
  if (!outcome.xla_end_to_end.has_value() || outcome.xla_end_to_end->output < 0) {
    return &*report.first_divergence;
  }
  const HloModule& judged = outcome.judged_global != nullptr ? *outcome.judged_global : program;
  if (judged.entry() == nullptr) return &*report.first_divergence;
  const absl::flat_hash_set<std::string> cone =
      ConeOfOutput(judged, outcome.xla_end_to_end->output);
  if (cone.contains(report.first_divergence->holds)) return &*report.first_divergence;
  for (const oracle::Divergence& later : report.later_divergences) {
    if (cone.contains(later.holds)) return &later;
  }
  return nullptr;
}

std::string SanitizedName(const std::string& text) {
  std::string out = text;
  for (char& ch : out) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-')) ch = '_';
  }
  return out;
}

std::string SignaturePrefix(const std::string& spec) {
  return target::IsReferenceSpec(spec) ? "" : SanitizedName(spec);
}

FailureSignature SignatureOf(const std::string& spec, const CheckOutcome& outcome,
                             const HloModule& program) {
  FailureSignature signature;
  signature.claim = true;
  const bool ours = target::IsReferenceSpec(spec);
  std::string kind;
  switch (outcome.status) {
    case CheckStatus::kHolds:
      return {};
    case CheckStatus::kFails:
      kind = (ours                                               ? "wrong-result."
              : outcome.finding == Finding::kConfirmedByXla      ? "miscompile."
              : outcome.finding == Finding::kSingleDeviceSuspect ? "single-device-miscompile."
                                                                 : "wrong-result.") +
             RootCauseOrWhere(outcome, program, ours);
      break;
    case CheckStatus::kCrash:
      kind =
          "crash." + (ours ? Where(outcome, program) : XlaSourceFile(outcome.message, "compile"));
      break;
    case CheckStatus::kRejected:
      kind = "xla-rejects-valid." + XlaSourceFile(outcome.message, "compile");
      // XLA's StableHLO -> HLO translation refusing what its own HLO -> StableHLO translation
      // wrote is a bug of the route spmdcheck takes into XLA (jax programs arrive as StableHLO
      // and never take it), not of the partitioner: a difference to investigate.
      if (kind == "xla-rejects-valid.stablehlo-to-hlo") signature.claim = false;
      break;
    case CheckStatus::kTimeout:
      kind = "timeout";
      signature.claim = false;
      break;
    case CheckStatus::kUnsupported:
      if (outcome.finding == Finding::kOracleOnly) {
        kind = "oracle-only." + RootCauseOrWhere(outcome, program, ours);
      } else if (outcome.finding == Finding::kOracleDisagrees) {
        kind = "oracle-disagrees." + RootCauseOrWhere(outcome, program, ours);
      } else if (outcome.finding == Finding::kRoundTripChangesMeaning) {
        kind = "round-trip-changes-meaning." + RootCauseOrWhere(outcome, program, ours);
      } else if (outcome.finding == Finding::kReadsInputPadding) {
        kind = "reads-input-padding." + RootCauseOrWhere(outcome, program, ours);
      } else {
        return {};
      }
      signature.claim = false;
      break;
  }
  signature.text = SanitizedName(ours ? kind : absl::StrCat(spec, ".", kind));
  return signature;
}

}  // namespace spmdcheck::check
