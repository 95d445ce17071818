#include "fuzz/check_pipeline.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "oracle/shape_reduction.h"

namespace spmdcheck::fuzz {
namespace {

std::string VerifierErrors(const HloModule& module) {
  std::vector<std::string> errors;
  for (const VerifierDiagnostic& d : VerifyModuleDiagnostics(module)) {
    if (!d.is_warning) errors.push_back(FormatDiagnostic(module, d));
  }
  return absl::StrJoin(errors, "; ");
}

bool IsNarrowFloat(PrimitiveType type) {
  return IsFloatingType(type) && type != PrimitiveType::kF32 && type != PrimitiveType::kF64;
}

bool WidenShape(Shape& shape) {
  bool changed = false;
  if (shape.IsTuple()) {
    for (Shape& e : shape.mutable_tuple_shapes()) changed = WidenShape(e) || changed;
    return changed;
  }
  if (shape.IsArray() && IsNarrowFloat(shape.element_type())) {
    shape.set_element_type(PrimitiveType::kF32);
    return true;
  }
  return false;
}

Literal WidenLiteral(const Literal& literal) {
  if (literal.shape().IsTuple()) {
    std::vector<Literal> elements;
    for (const Literal& e : literal.tuple_elements()) elements.push_back(WidenLiteral(e));
    return Literal::Tuple(std::move(elements));
  }
  if (!IsNarrowFloat(literal.shape().element_type()) || literal.elided()) return literal;
  Shape shape = literal.shape();
  shape.set_element_type(PrimitiveType::kF32);
  Literal wide(shape);
  for (int64_t i = 0; i < literal.element_count(); ++i) wide.SetDouble(i, literal.GetDouble(i));
  return wide;
}

// A copy of `module` with every narrow float type widened to f32; nullptr when nothing is
// narrow or widening would change meaning (bitcast-convert reinterprets bits).
std::unique_ptr<HloModule> WidenNarrowFloats(const HloModule& module) {
  bool any = false;
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode() == HloOpcode::kBitcastConvert) return nullptr;
      Shape shape = i->shape();
      any = WidenShape(shape) || any;
    }
  }
  if (!any) return nullptr;
  absl::StatusOr<ParsedModule> copy = ParseHloModule(PrintModule(module));
  if (!copy.ok()) return nullptr;
  for (const auto& c : copy->module->computations()) {
    for (const auto& i : c->instructions()) {
      Shape shape = i->shape();
      if (WidenShape(shape)) {
        // Layout kept as is (same rank).
        i->set_shape(shape);
      }
      if (i->literal().has_value()) i->set_literal(WidenLiteral(*i->literal()));
    }
  }
  return std::move(copy->module);
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

absl::StatusOr<CheckOutcome> CheckPartitioning(const HloModule& global,
                                               const CheckOptions& options) {
  if (std::string errors = VerifierErrors(global); !errors.empty()) {
    return absl::InvalidArgumentError(errors);
  }
  CheckOutcome outcome;
  if (HasRandomOps(global)) {
    outcome.status = CheckStatus::kUnsupported;
    outcome.message =
        "random-number ops (rng, rng-bit-generator): their values are implementation-defined, "
        "so a partitioned program cannot be compared with the global one";
    return outcome;
  }
  std::unique_ptr<HloModule> widened;
  if (options.widen_narrow_floats) widened = WidenNarrowFloats(global);
  const HloModule* prepared = widened != nullptr ? widened.get() : &global;
  std::unique_ptr<HloModule> shrunk;
  const int64_t shrink_budget =
      std::min(options.max_elements_per_array, options.shrink_elements_per_array);
  if (options.shrink && LargestArray(*prepared) > shrink_budget) {
    // Small arrays keep checks fast; when constraints (constant indices, windows) keep a module
    // from shrinking that far, settle for the oracle's own budget.
    std::string last_error;
    for (int64_t budget : {shrink_budget, options.max_elements_per_array}) {
      oracle::ShrinkOptions shrink_options;
      shrink_options.max_elements_per_array = budget;
      shrink_options.num_partitions = options.num_partitions;
      absl::StatusOr<oracle::ShrinkResult> result =
          oracle::ShrinkModuleShapes(*prepared, shrink_options);
      if (result.ok()) {
        if (result->shrunk) {
          outcome.shrink_note = result->description;
          shrunk = std::move(result->module);
          prepared = shrunk.get();
        }
        last_error.clear();
        break;
      }
      if (absl::IsInvalidArgument(result.status())) break;
      last_error = std::string(result.status().message());
    }
    if (!last_error.empty()) outcome.notes.push_back(absl::StrCat("not shrunk: ", last_error));
  }
  const HloModule& program = *prepared;
  if (widened != nullptr) {
    outcome.notes.push_back(
        "narrow floats (bf16/f16/f8) evaluated as f32 in both programs, so that sums reordered "
        "by partitioning round alike (--no-widen to keep them)");
  }
  partitioner::PartitionOptions partition_options;
  partition_options.num_partitions = options.num_partitions;
  partition_options.inject_bug = options.inject_bug;
  absl::StatusOr<partitioner::PartitionResult> partitioned =
      partitioner::PartitionModule(program, partition_options);
  if (!partitioned.ok()) {
    if (absl::IsUnimplemented(partitioned.status())) {
      outcome.status = CheckStatus::kUnsupported;
      outcome.message = absl::StrCat("partitioner: ", partitioned.status().message());
    } else if (absl::IsInvalidArgument(partitioned.status())) {
      return partitioned.status();
    } else {
      outcome.status = CheckStatus::kCrash;
      outcome.message = absl::StrCat("partitioner error: ", partitioned.status().ToString());
    }
    return outcome;
  }
  outcome.stats = partitioned->stats;
  // Costs are reported for the program as written (not widened or shrunk).
  if (widened != nullptr || shrunk != nullptr) {
    absl::StatusOr<partitioner::PartitionResult> as_written =
        partitioner::PartitionModule(global, partition_options);
    if (as_written.ok()) outcome.as_written = std::move(as_written->module);
  }
  // The output must be valid HLO text: print it, parse it back and verify that.
  const std::string text = PrintModule(*partitioned->module);
  absl::StatusOr<ParsedModule> reparsed = ParseHloModule(text, {.path = "<partitioned>"});
  if (!reparsed.ok()) {
    outcome.status = CheckStatus::kCrash;
    outcome.message =
        absl::StrCat("partitioned module does not parse: ", reparsed.status().message());
    outcome.partitioned = std::move(partitioned->module);
    return outcome;
  }
  outcome.partitioned = std::move(reparsed->module);
  if (std::string errors = VerifierErrors(*outcome.partitioned); !errors.empty()) {
    outcome.status = CheckStatus::kCrash;
    outcome.message = absl::StrCat("partitioned module does not verify: ", errors);
    return outcome;
  }
  oracle::EquivOptions equiv;
  equiv.num_partitions = outcome.partitioned->num_partitions();
  equiv.trials = options.trials;
  equiv.seed = options.seed;
  equiv.max_elements_per_array = options.max_elements_per_array;
  absl::StatusOr<oracle::EquivReport> report =
      oracle::CheckEquivalence(program, *outcome.partitioned, equiv);
  if (!report.ok()) {
    outcome.status = CheckStatus::kUnsupported;
    outcome.message = absl::StrCat("oracle: ", report.status().message());
    return outcome;
  }
  outcome.report = *std::move(report);
  switch (outcome.report.verdict) {
    case Verdict::kHolds:
      outcome.status = CheckStatus::kHolds;
      break;
    case Verdict::kFails:
      outcome.status = CheckStatus::kFails;
      outcome.message =
          absl::StrCat("device ", outcome.report.device, " differs at [",
                       absl::StrJoin(outcome.report.mismatch.global_index, ","), "]: expected ",
                       outcome.report.mismatch.expected, ", got ", outcome.report.mismatch.actual);
      break;
    case Verdict::kUnknown:
      outcome.status = CheckStatus::kUnsupported;
      outcome.message = outcome.report.unknown_reason;
      break;
  }
  return outcome;
}

}  // namespace spmdcheck::fuzz
