#include "check/check_pipeline.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check/judges.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "oracle/engine.h"
#include "oracle/float_widening.h"
#include "oracle/inputs.h"
#include "oracle/order_dependence.h"
#include "oracle/shape_reduction.h"
#include "oracle/sharded_values.h"
#include "target/reference_partitioner.h"

namespace spmdcheck::check {

using target::PartitionerUnderTest;
using target::PartitionOutput;
using target::PartitionStatus;
using target::ReferencePartitioner;
namespace {

std::string VerifierErrors(const HloModule& module) {
  std::vector<std::string> errors;
  for (const VerifierDiagnostic& d : VerifyModuleDiagnostics(module)) {
    if (!d.is_warning) errors.push_back(FormatDiagnostic(module, d));
  }
  return absl::StrJoin(errors, "; ");
}

int64_t LargestArray(const Shape& shape) {
  if (shape.IsTuple()) {
    int64_t largest = 0;
    for (const Shape& e : shape.tuple_shapes()) largest = std::max(largest, LargestArray(e));
    return largest;
  }
  return shape.IsArray() ? shape.ElementCount() : 0;
}

int64_t LargestArray(const HloModule& module) {
  int64_t largest = 0;
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) largest = std::max(largest, LargestArray(i->shape()));
  }
  return largest;
}

bool HasRandomOps(const HloModule& module) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      switch (i->opcode()) {
        case HloOpcode::kRng:
        case HloOpcode::kRngBitGenerator:
        case HloOpcode::kRngGetAndUpdateState:
          return true;
        default:
          break;
      }
    }
  }
  return false;
}

}  // namespace

// `op_name="..."` of an instruction's metadata (XLA names the HLO instruction a partitioned
// instruction came from there), or empty.
std::string MetadataOpName(const HloInstruction& instruction) {
  const RawAttribute* metadata = instruction.FindRawAttribute("metadata");
  if (metadata == nullptr) return "";
  const size_t start = metadata->text.find("op_name=\"");
  if (start == std::string::npos) return "";
  std::string name;
  for (size_t k = start + 9; k < metadata->text.size(); ++k) {
    const char c = metadata->text[k];
    if (c == '\\' && k + 1 < metadata->text.size()) {
      name.push_back(metadata->text[++k]);
    } else if (c == '"') {
      return name;
    } else {
      name.push_back(c);
    }
  }
  return "";
}

namespace {

CheckStatus FromPartitionStatus(PartitionStatus status) {
  switch (status) {
    case PartitionStatus::kOk:
      return CheckStatus::kHolds;
    case PartitionStatus::kRejected:
      return CheckStatus::kRejected;
    case PartitionStatus::kUnsupported:
    case PartitionStatus::kUnavailable:
      return CheckStatus::kUnsupported;
    case PartitionStatus::kCrash:
      return CheckStatus::kCrash;
    case PartitionStatus::kTimeout:
      return CheckStatus::kTimeout;
  }
  return CheckStatus::kUnsupported;
}

}  // namespace

const char* CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kHolds:
      return "holds";
    case CheckStatus::kFails:
      return "fails";
    case CheckStatus::kUnsupported:
      return "unknown";
    case CheckStatus::kCrash:
      return "crash";
    case CheckStatus::kRejected:
      return "rejected";
    case CheckStatus::kTimeout:
      return "timeout";
  }
  return "?";
}

const char* FindingName(Finding finding) {
  switch (finding) {
    case Finding::kNone:
      return "";
    case Finding::kConfirmedByXla:
      return "confirmed by XLA";
    case Finding::kOracleOnly:
      return "oracle-only";
    case Finding::kOracleDisagrees:
      return "oracle-disagrees";
    case Finding::kUnavailable:
      return "unavailable";
    case Finding::kReadsInputPadding:
      return "reads-input-padding";
    case Finding::kSingleDeviceSuspect:
      return "single-device run suspect";
    case Finding::kRoundTripChangesMeaning:
      return "round-trip-changes-meaning";
  }
  return "";
}

std::vector<std::string> DescribeModuleChanges(const HloModule& sent, const HloModule& received) {
  std::vector<std::string> changes;
  auto histogram = [](const HloModule& m) {
    std::map<std::string, int64_t> counts;
    for (const auto& c : m.computations()) {
      for (const auto& i : c->instructions()) ++counts[std::string(HloOpcodeString(i->opcode()))];
    }
    return counts;
  };
  const std::map<std::string, int64_t> before = histogram(sent);
  const std::map<std::string, int64_t> after = histogram(received);
  std::vector<std::string> ops;
  for (const auto& [op, count] : before) {
    auto it = after.find(op);
    const int64_t now = it == after.end() ? 0 : it->second;
    if (now != count) ops.push_back(absl::StrCat(op, " ", count, " -> ", now));
  }
  for (const auto& [op, count] : after) {
    if (before.count(op) == 0) ops.push_back(absl::StrCat(op, " 0 -> ", count));
  }
  if (!ops.empty()) changes.push_back(absl::StrCat("instructions: ", absl::StrJoin(ops, ", ")));
  if (sent.computations().size() != received.computations().size()) {
    changes.push_back(absl::StrCat("computations: ", sent.computations().size(), " -> ",
                                   received.computations().size()));
  }
  const std::vector<HloInstruction*> a = sent.entry()->parameters();
  const std::vector<HloInstruction*> b = received.entry()->parameters();
  if (a.size() != b.size()) {
    changes.push_back(absl::StrCat("parameters: ", a.size(), " -> ", b.size()));
  } else {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i]->shape().Compatible(b[i]->shape())) {
        changes.push_back(absl::StrCat("parameter ", i, ": ", a[i]->shape().ToString(false), " -> ",
                                       b[i]->shape().ToString(false)));
      }
    }
  }
  if (!sent.entry()->root()->shape().Compatible(received.entry()->root()->shape())) {
    changes.push_back(absl::StrCat("result: ", sent.entry()->root()->shape().ToString(false),
                                   " -> ", received.entry()->root()->shape().ToString(false)));
  }
  return changes;
}

absl::StatusOr<CheckOutcome> CheckPartitioning(const HloModule& global,
                                               const CheckOptions& options) {
  ReferencePartitioner reference(options.inject_bug);
  return CheckPartitioning(global, reference, options);
}

namespace {

// `global` with every array shrunk to the check's budget, or null when it is not shrunk (small
// enough, a jax program compiled as written, or constraints that keep it from shrinking: then a
// note says why).
std::unique_ptr<HloModule> ShrinkForCheck(const HloModule& global,
                                          PartitionerUnderTest& partitioner,
                                          const CheckOptions& options, CheckOutcome& outcome) {
  const int64_t shrink_budget =
      std::min(options.max_elements_per_array, options.shrink_elements_per_array);
  if (!options.shrink || LargestArray(global) <= shrink_budget) return nullptr;
  if (partitioner.UsesJaxSource(global)) {
    outcome.notes.push_back(
        "not shrunk: the partitioner compiles jax's program as written (its shapes are the "
        "program's)");
    return nullptr;
  }
  // When constraints (constant indices, windows) keep a module from shrinking that far, settle
  // for the oracle's own budget.
  std::string last_error;
  for (int64_t budget : {shrink_budget, options.max_elements_per_array}) {
    oracle::ShrinkOptions shrink_options;
    shrink_options.max_elements_per_array = budget;
    shrink_options.num_partitions = options.num_partitions;
    absl::StatusOr<oracle::ShrinkResult> result =
        oracle::ShrinkModuleShapes(global, shrink_options);
    if (result.ok()) {
      if (!result->shrunk) return nullptr;
      outcome.shrink_note = result->description;
      return std::move(result->module);
    }
    if (absl::IsInvalidArgument(result.status())) break;
    last_error = std::string(result.status().message());
  }
  if (last_error.empty()) return nullptr;
  outcome.notes.push_back(absl::StrCat("not shrunk: ", last_error));
  return nullptr;
}

absl::StatusOr<CheckOutcome> CheckPartitioningImpl(const HloModule& global,
                                                   PartitionerUnderTest& partitioner,
                                                   const CheckOptions& options) {
  if (std::string errors = VerifierErrors(global); !errors.empty()) {
    return absl::InvalidArgumentError(errors);
  }
  CheckOutcome outcome;
  outcome.partitioner_spec = partitioner.spec();
  // Modules our verifier reads but XLA's would reject (XLA's own test modules write s32[]
  // partition-id()): XLA aborts on them instead of refusing them, and nothing can run them.
  for (const VerifierDiagnostic& d : VerifyModuleDiagnostics(global)) {
    if (d.is_warning && absl::StrContains(d.message, "XLA's verifier rejects this")) {
      outcome.status = CheckStatus::kUnsupported;
      outcome.message = absl::StrCat("invalid by XLA's rules (not sent to the partitioner): ",
                                     FormatDiagnostic(global, d));
      return outcome;
    }
  }
  if (HasRandomOps(global)) {
    outcome.status = CheckStatus::kUnsupported;
    outcome.message =
        "random-number ops (rng, rng-bit-generator): their values are implementation-defined, "
        "so a partitioned program cannot be compared with the global one";
    return outcome;
  }
  // Small arrays keep checks fast: large ones are shrunk first (not jax programs compiled as
  // written).
  std::unique_ptr<HloModule> shrunk = ShrinkForCheck(global, partitioner, options, outcome);
  const HloModule* prepared = shrunk != nullptr ? shrunk.get() : &global;
  const int64_t num_partitions =
      options.num_partitions > 0 ? options.num_partitions : prepared->num_partitions();
  absl::StatusOr<PartitionOutput> partitioned = partitioner.Partition(*prepared, num_partitions);
  if (!partitioned.ok()) return partitioned.status();
  PartitionOutput& out = *partitioned;
  outcome.self_report = out.report;
  outcome.stats = out.stats;
  outcome.partitioned_text = out.partitioned_text;
  outcome.pass_dumps = std::move(out.pass_dumps);
  if (out.status != PartitionStatus::kOk) {
    outcome.status = FromPartitionStatus(out.status);
    if (out.status == PartitionStatus::kUnavailable) outcome.finding = Finding::kUnavailable;
    outcome.message = out.message;
    return outcome;
  }
  // Costs are reported for the program as written (not shrunk), where partitioning it again is
  // cheap (not for XLA, whose compile of a large module is not).
  if (shrunk != nullptr && out.executable == nullptr) {
    absl::StatusOr<PartitionOutput> as_written = partitioner.Partition(global, num_partitions);
    if (as_written.ok() && as_written->status == PartitionStatus::kOk) {
      outcome.as_written = std::move(as_written->partitioned);
    }
  }
  // The output must be valid HLO text: print it, parse it back and verify that.
  const bool its_fault = partitioner.InvalidOutputIsItsFault();
  const char* invalid_prefix = its_fault ? "partitioned module"
                                         : "spmdcheck's parser/verifier rejects XLA's partitioned "
                                           "module (a gap of ours to fix)";
  if (out.partitioned_text.empty() && !options.round_trip_in_memory_output) {
    outcome.partitioned = std::move(out.partitioned);
  } else {
    const std::string text = PrintModule(*out.partitioned);
    absl::StatusOr<ParsedModule> reparsed = ParseHloModule(text, {.path = "<partitioned>"});
    if (!reparsed.ok()) {
      outcome.status = its_fault ? CheckStatus::kCrash : CheckStatus::kUnsupported;
      outcome.message = absl::StrCat(invalid_prefix, its_fault ? " does not parse: " : ": ",
                                     reparsed.status().message());
      outcome.partitioned = std::move(out.partitioned);
      return outcome;
    }
    outcome.partitioned = std::move(reparsed->module);
  }
  if (std::string errors = VerifierErrors(*outcome.partitioned); !errors.empty()) {
    outcome.status = its_fault ? CheckStatus::kCrash : CheckStatus::kUnsupported;
    outcome.message = absl::StrCat(invalid_prefix, its_fault ? " does not verify: " : ": ", errors);
    return outcome;
  }

  // What the partitioned module is judged against: the module as given, or (XLA) the module
  // XLA received, with the parameter and result shardings XLA settled on.
  const HloModule* judged = prepared;
  std::vector<HloSharding> parameter_shardings;
  for (const HloInstruction* p : prepared->entry()->parameters()) {
    parameter_shardings.push_back(p->sharding().value_or(HloSharding::Replicate()));
  }
  std::vector<HloSharding> output_shardings =
      LeafShardings(prepared->entry()->root()->sharding().value_or(HloSharding::Replicate()),
                    prepared->entry()->root()->shape());
  if (out.received != nullptr) {
    outcome.received_changes = DescribeModuleChanges(*prepared, *out.received);
    HloModule& received = *out.received;
    std::vector<HloInstruction*> params = received.entry()->parameters();
    if (out.parameter_shardings.size() == params.size()) {
      for (size_t i = 0; i < params.size(); ++i)
        params[i]->set_sharding(out.parameter_shardings[i]);
      parameter_shardings = out.parameter_shardings;
    }
    HloInstruction* root = received.entry()->root();
    const int64_t leaves = root->shape().IsTuple() ? root->shape().LeafCount() : 1;
    if (static_cast<int64_t>(out.output_shardings.size()) == leaves) {
      if (!root->shape().IsTuple()) {
        root->set_sharding(out.output_shardings[0]);
      } else if (root->shape().tuple_size() == leaves) {
        root->set_sharding(HloSharding::Tuple(out.output_shardings));
      }
      output_shardings = out.output_shardings;
    }
    outcome.judged_global = std::move(out.received);
    judged = outcome.judged_global.get();
  }

  // Narrow floats: both programs evaluated in f32 by the oracle.
  std::unique_ptr<HloModule> wide_global, wide_partitioned;
  if (options.widen_narrow_floats &&
      oracle::HasWidenableFloats(*judged, oracle::FloatWidening::kNarrowToF32)) {
    wide_global = oracle::WidenFloats(*judged, oracle::FloatWidening::kNarrowToF32);
    wide_partitioned =
        oracle::WidenFloats(*outcome.partitioned, oracle::FloatWidening::kNarrowToF32);
    if (wide_global == nullptr || wide_partitioned == nullptr) {
      wide_global.reset();
      wide_partitioned.reset();
    } else {
      outcome.notes.push_back(
          "narrow floats (bf16/f16/f8) evaluated as f32 in both programs, so that sums "
          "reordered by partitioning round alike (--no-widen to keep them)");
    }
  }
  const HloModule& oracle_global = wide_global != nullptr ? *wide_global : *judged;
  const HloModule& oracle_partitioned =
      wide_partitioned != nullptr ? *wide_partitioned : *outcome.partitioned;
  const JudgeInputs inputs{partitioner,
                           out,
                           *prepared,
                           *judged,
                           oracle_global,
                           oracle_partitioned,
                           parameter_shardings,
                           output_shardings,
                           num_partitions,
                           options,
                           outcome.judged_global != nullptr};
  for (const Judge* judge : Judges()) {
    if (judge->Applies(inputs)) judge->Run(inputs, outcome);
  }
  ApplyVerdictPolicy(outcome);
  return outcome;
}

}  // namespace

absl::StatusOr<CheckOutcome> CheckPartitioning(const HloModule& global,
                                               PartitionerUnderTest& partitioner,
                                               const CheckOptions& options) {
  absl::StatusOr<CheckOutcome> outcome = CheckPartitioningImpl(global, partitioner, options);
  if (!outcome.ok()) return outcome;
  // A difference in a reduction XLA leaves implementation-defined is no counterexample.
  const bool differs =
      outcome->status == CheckStatus::kFails || outcome->finding == Finding::kOracleOnly;
  if (differs && outcome->finding != Finding::kUnavailable) {
    const HloModule& judged = outcome->judged_global != nullptr ? *outcome->judged_global : global;
    if (std::optional<std::string> reduction = oracle::FindOrderDependentReduction(judged)) {
      outcome->status = CheckStatus::kUnsupported;
      outcome->finding = Finding::kNone;
      outcome->message = absl::StrCat(
          "order-dependent reduction (", *reduction,
          "): XLA leaves its result implementation-defined, so a partitioning that reduces in "
          "another order may differ (",
          outcome->message, ")");
    }
  }
  return outcome;
}

}  // namespace spmdcheck::check
