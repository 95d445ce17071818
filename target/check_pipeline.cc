#include "target/check_pipeline.h"

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
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "oracle/engine.h"
#include "oracle/inputs.h"
#include "oracle/order_dependence.h"
#include "oracle/shape_reduction.h"
#include "oracle/sharded_values.h"
#include "target/reference_partitioner.h"

namespace spmdcheck::target {
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

bool HasNarrowFloats(const HloModule& module) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      Shape shape = i->shape();
      if (WidenShape(shape)) return true;
    }
  }
  return false;
}

// A copy of `module` with every narrow float type widened to f32; nullptr when widening would
// change meaning (bitcast-convert reinterprets bits).
std::unique_ptr<HloModule> WidenNarrowFloats(const HloModule& module) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode() == HloOpcode::kBitcastConvert) return nullptr;
    }
  }
  std::unique_ptr<HloModule> copy = module.Clone();
  for (const auto& c : copy->computations()) {
    for (const auto& i : c->instructions()) {
      Shape shape = i->shape();
      if (WidenShape(shape)) i->set_shape(shape);  // Layout kept as is (same rank).
      if (i->literal().has_value()) i->set_literal(WidenLiteral(*i->literal()));
    }
  }
  return copy;
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

bool HasManualRegions(const HloModule& module) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode() == HloOpcode::kCustomCall &&
          i->attrs().custom_call_target.value_or("") == "SPMDFullToShardShape") {
        return true;
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

// Claims for the oracle's localisation from XLA's metadata: the last partitioned instruction
// made from global instruction X (same op_name) whose shape is the tile shape of the sharding
// XLA propagated to X holds X's value under that sharding. Any opcode: XLA's handler for X
// often ends in another op (the all-reduce of a reduce's or a dot's partial results, the
// dynamic-slice that cuts a padded window), and the op of X's own opcode before it holds a
// partial value, which used to be named as the first divergence.
std::map<std::string, oracle::EquivOptions::HeldValue> ClaimsFromMetadata(
    const HloModule& judged, const HloModule* propagated, const HloModule& partitioned) {
  std::map<std::string, oracle::EquivOptions::HeldValue> claims;
  if (propagated == nullptr) return claims;
  // op_name -> (name in the judged module, sharding from propagation, opcode).
  struct Global {
    std::string name;
    HloSharding sharding;
    HloOpcode opcode;
    Shape shape;
  };
  std::map<std::string, Global> by_op_name;
  for (const auto& g : judged.entry()->instructions()) {
    const std::string op_name = MetadataOpName(*g);
    // A parameter's value is the input itself: what XLA names after it (jaxlib 0.12 labels the
    // collective-permute that reshards a parameter `param.0`) holds it resharded.
    if (op_name.empty() || !g->shape().IsArray() || g->opcode() == HloOpcode::kParameter) continue;
    const HloInstruction* p = propagated->entry()->FindInstruction(g->name());
    if (p == nullptr || !p->sharding().has_value() || p->sharding()->IsTuple()) continue;
    by_op_name.insert_or_assign(op_name,
                                Global{g->name(), *p->sharding(), g->opcode(), g->shape()});
  }
  std::map<std::string, std::string> last_made;  // partitioned instruction -> its op_name
  std::map<std::string, std::string> made_for;   // global name -> last partitioned instruction
  for (const auto& i : partitioned.entry()->instructions()) {
    const std::string op_name = MetadataOpName(*i);
    auto it = by_op_name.find(op_name);
    if (it == by_op_name.end()) continue;
    const HloSharding& sharding = it->second.sharding;
    if (!sharding.IsReplicated() && !sharding.IsTiled()) continue;
    const Shape tile = sharding.IsTiled() ? sharding.TileShape(it->second.shape) : it->second.shape;
    if (!tile.Compatible(i->shape())) continue;
    made_for[it->second.name] = i->name();
    last_made[i->name()] = op_name;
  }
  for (const auto& [global, made] : made_for) {
    const Global& g = by_op_name.at(last_made.at(made));
    claims[made] = {g.name, g.sharding};
  }
  return claims;
}

std::vector<const Literal*> Leaves(const Literal& literal) {
  if (!literal.shape().IsTuple()) return {&literal};
  std::vector<const Literal*> out;
  for (const Literal& e : literal.tuple_elements()) {
    std::vector<const Literal*> inner = Leaves(e);
    out.insert(out.end(), inner.begin(), inner.end());
  }
  return out;
}

std::vector<HloSharding> LeafShardings(const HloSharding& sharding, const Shape& shape) {
  if (!shape.IsTuple()) return {sharding};
  std::vector<HloSharding> out;
  for (int64_t k = 0; k < shape.tuple_size(); ++k) {
    const HloSharding element =
        sharding.IsTuple() && k < static_cast<int64_t>(sharding.tuple_elements().size())
            ? sharding.tuple_elements()[k]
            : sharding;
    std::vector<HloSharding> inner = LeafShardings(element, shape.tuple_shapes()[k]);
    out.insert(out.end(), inner.begin(), inner.end());
  }
  return out;
}

// Tolerance between two executions of the same program (different compiles, or our interpreter
// against XLA's): integers exact; floats within 64 units in the last place of their type, since
// transcendental functions differ in their last bits between math libraries.
oracle::Tolerance ExecutionTolerance(PrimitiveType type) {
  oracle::Tolerance tolerance;
  double eps = 0;
  switch (type) {
    case PrimitiveType::kF64:
      eps = 0x1.0p-52;
      break;
    case PrimitiveType::kF32:
    case PrimitiveType::kC64:
      eps = 0x1.0p-23;
      break;
    case PrimitiveType::kBF16:
      eps = 0x1.0p-7;
      break;
    case PrimitiveType::kF16:
      eps = 0x1.0p-10;
      break;
    case PrimitiveType::kC128:
      eps = 0x1.0p-52;
      break;
    default:
      eps = IsFloatingType(type) ? 0x1.0p-2 : 0;
      break;
  }
  tolerance.relative = eps * 64;
  tolerance.absolute = eps * 64;
  tolerance.absolute_scales_with_magnitude = eps > 0 && eps <= 0x1.0p-23;  // f32, f64, c64, c128.
  return tolerance;
}

std::string MismatchText(const oracle::ElementMismatch& m) {
  return absl::StrCat(m.leaf.empty() ? "" : absl::StrCat("output ", m.leaf, " "), "at [",
                      absl::StrJoin(m.global_index, ","), "]: expected ", m.expected, ", got ",
                      m.actual);
}

struct Executions {
  ExecutionCheck end_to_end;
  ExecutionCheck interpreter;
  double interpreter_seconds = 0;
};

// The trials XLA's executables run, in order: the oracle's trials 0..trials-1; when only the
// oracle has seen a difference (on `oracle_failing_trial`), that trial's inputs first and as many
// fresh trials again after them, so that a difference XLA shows on other inputs is not missed.
std::vector<int64_t> ExecutionTrialOrder(int64_t trials, int64_t oracle_failing_trial) {
  std::vector<int64_t> order;
  if (oracle_failing_trial >= 0) order.push_back(oracle_failing_trial);
  const int64_t count = oracle_failing_trial >= 0 ? 2 * trials + 1 : trials;
  for (int64_t t = 0; static_cast<int64_t>(order.size()) < count; ++t) {
    if (t != oracle_failing_trial) order.push_back(t);
  }
  return order;
}

// XLA's sharded executable vs XLA's single-device run, and our interpreter vs that run, on the
// inputs of the oracle's trials `trial_order` (the same seed, so the same inputs).
Executions RunExecutions(PartitionerUnderTest& partitioner, const PartitionOutput& out,
                         const HloModule& sent, const HloModule& judged,
                         const std::vector<HloSharding>& parameter_shardings,
                         const std::vector<HloSharding>& output_shardings,
                         const std::vector<int64_t>& trial_order, const CheckOptions& options) {
  Executions result;
  const int64_t n = out.executable->num_devices();
  auto unknown = [&](std::string why) {
    for (ExecutionCheck* check : {&result.end_to_end, &result.interpreter}) {
      if (check->verdict == Verdict::kUnknown && check->detail.empty()) check->detail = why;
    }
    return result;
  };
  const std::vector<HloInstruction*> params = judged.entry()->parameters();
  if (params.size() != parameter_shardings.size()) {
    return unknown("XLA reported no parameter shardings");
  }
  for (const HloInstruction* p : params) {
    if (!p->shape().IsArray()) {
      return unknown(
          "tuple-typed parameters are not passed to XLA's executables (XLA flattens "
          "them)");
    }
  }
  for (size_t run = 0; run < trial_order.size(); ++run) {
    const int64_t trial = trial_order[run];
    const int64_t trials_run = static_cast<int64_t>(run) + 1;
    std::vector<Literal> inputs =
        oracle::TrialInputs(sent, options.seed, trial, oracle::InputStyle::kSmallIntegers);
    absl::StatusOr<std::vector<Literal>> single = partitioner.RunGlobal(sent, inputs);
    result.end_to_end.reference = result.interpreter.reference = partitioner.GlobalRunName();
    if (!single.ok()) {
      return unknown(absl::StrCat("XLA's single-device run: ", single.status().message()));
    }
    if (single->size() != output_shardings.size()) {
      return unknown(absl::StrCat("XLA's single-device run has ", single->size(),
                                  " outputs, its sharded executable ", output_shardings.size()));
    }
    // Our interpreter on the same global program and inputs.
    if (result.interpreter.verdict != Verdict::kFails) {
      oracle::EngineOptions engine_options;
      engine_options.seed = options.seed;
      engine_options.max_elements_per_array = options.max_elements_per_array;
      if (options.oracle_seconds > 0) {
        engine_options.deadline = std::chrono::steady_clock::now() +
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(options.oracle_seconds));
      }
      const auto interpreter_start = std::chrono::steady_clock::now();
      // A global program with manual regions is SPMD inside them: it runs on every device
      // with whole inputs, and device 0 holds the global result (as the oracle runs it).
      const int64_t interpreter_devices = HasManualRegions(sent) ? n : 1;
      engine_options.num_partitions = interpreter_devices;
      oracle::Engine engine(sent, engine_options);
      absl::StatusOr<std::vector<Literal>> ours = engine.Run(
          std::vector<std::vector<Literal>>(static_cast<size_t>(interpreter_devices), inputs));
      result.interpreter_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - interpreter_start)
              .count();
      if (!ours.ok()) {
        result.interpreter.detail = absl::StrCat("our interpreter: ", ours.status().message());
      } else {
        std::vector<const Literal*> leaves = Leaves((*ours)[0]);
        std::optional<std::string> mismatch;
        if (leaves.size() != single->size()) {
          mismatch = absl::StrCat(leaves.size(), " outputs against XLA's ", single->size());
        }
        for (size_t l = 0; !mismatch && l < leaves.size(); ++l) {
          std::optional<oracle::ElementMismatch> m = oracle::CompareLiterals(
              (*single)[l], *leaves[l], ExecutionTolerance((*single)[l].shape().element_type()));
          if (m.has_value()) {
            m->leaf = single->size() > 1 ? absl::StrCat("{", l, "}") : "";
            mismatch = absl::StrCat(MismatchText(*m), " (expected = XLA, got = ours)");
          }
        }
        result.interpreter.trials_run = trials_run;
        if (mismatch.has_value()) {
          result.interpreter.verdict = Verdict::kFails;
          result.interpreter.detail = *mismatch;
          result.interpreter.trial = trial;
        } else {
          result.interpreter.verdict = Verdict::kHolds;
        }
      }
    }
    // XLA's sharded run on each device's shard of the same inputs; padding poisoned first, and
    // zero-filled when that fails (to tell a wrong result from one that reads input padding).
    // Returns an error text when the run cannot be judged; fills `check` otherwise.
    auto run_sharded = [&](oracle::PaddingFill fill,
                           ExecutionCheck& check) -> std::optional<std::string> {
      std::vector<std::vector<Literal>> arguments(params.size());
      for (size_t i = 0; i < params.size(); ++i) {
        for (int64_t d = 0; d < n; ++d) {
          absl::StatusOr<Literal> shard =
              oracle::ShardOf(inputs[i], parameter_shardings[i], d, fill);
          if (!shard.ok()) return absl::StrCat("input shards: ", shard.status().message());
          arguments[i].push_back(*std::move(shard));
        }
      }
      absl::StatusOr<std::vector<std::vector<Literal>>> sharded = out.executable->Run(arguments);
      if (!sharded.ok()) return absl::StrCat("XLA's sharded run: ", sharded.status().message());
      if (sharded->size() != single->size()) {
        return absl::StrCat("XLA's sharded run has ", sharded->size(), " outputs, ", single->size(),
                            " expected");
      }
      for (int64_t d = 0; d < n; ++d) {
        for (size_t l = 0; l < sharded->size(); ++l) {
          if ((*sharded)[l].size() != static_cast<size_t>(n)) {
            return std::string("XLA's sharded run returned a wrong number of device outputs");
          }
          absl::StatusOr<std::optional<oracle::ElementMismatch>> m =
              oracle::CompareShard((*sharded)[l][d], (*single)[l], output_shardings[l], d,
                                   ExecutionTolerance((*single)[l].shape().element_type()));
          if (!m.ok()) return absl::StrCat("comparing outputs: ", m.status().message());
          if (!m->has_value()) continue;
          if (check.wrong_devices.empty()) {
            (*m)->leaf = sharded->size() > 1 ? absl::StrCat("{", l, "}") : "";
            check.device = d;
            check.output = static_cast<int64_t>(l);
            check.detail = absl::StrCat("device ", d, " ", MismatchText(**m),
                                        " (expected = XLA on one device)");
          }
          check.wrong_devices.push_back(d);
          break;
        }
      }
      return std::nullopt;
    };
    ExecutionCheck poisoned;
    if (std::optional<std::string> error = run_sharded(oracle::PaddingFill::kPoison, poisoned)) {
      if (absl::StartsWith(*error, "XLA's sharded run")) {
        result.end_to_end.detail = *error;
        return result;
      }
      return unknown(*error);
    }
    result.end_to_end.trials_run = trials_run;
    if (!poisoned.wrong_devices.empty()) {
      ExecutionCheck zeroed;
      std::optional<std::string> error = run_sharded(oracle::PaddingFill::kZero, zeroed);
      result.end_to_end.device = poisoned.device;
      result.end_to_end.output = poisoned.output;
      result.end_to_end.wrong_devices = poisoned.wrong_devices;
      result.end_to_end.trial = trial;
      if (!error.has_value() && zeroed.wrong_devices.empty()) {
        // Right with zero padding, wrong with garbage: XLA reads the padding of uneven inputs.
        result.end_to_end.verdict = Verdict::kUnknown;
        result.end_to_end.padding_dependent = true;
        result.end_to_end.detail =
            absl::StrCat(poisoned.detail,
                         " only when the padding of uneven input shards holds garbage; with "
                         "zero padding XLA's runs agree");
        return result;
      }
      result.end_to_end.verdict = Verdict::kFails;
      result.end_to_end.detail = poisoned.detail;
      return result;
    }
    result.end_to_end.verdict = Verdict::kHolds;
  }
  return result;
}

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
  const HloModule* prepared = &global;
  std::unique_ptr<HloModule> shrunk;
  const int64_t shrink_budget =
      std::min(options.max_elements_per_array, options.shrink_elements_per_array);
  const bool as_written = partitioner.UsesJaxSource(global);
  if (options.shrink && as_written && LargestArray(*prepared) > shrink_budget) {
    outcome.notes.push_back(
        "not shrunk: the partitioner compiles jax's program as written (its shapes are the "
        "program's)");
  }
  if (options.shrink && !as_written && LargestArray(*prepared) > shrink_budget) {
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
  if (options.widen_narrow_floats && HasNarrowFloats(*judged)) {
    wide_global = WidenNarrowFloats(*judged);
    wide_partitioned = WidenNarrowFloats(*outcome.partitioned);
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
  oracle::EquivOptions equiv;
  equiv.first_is_global = true;
  equiv.num_partitions = num_partitions;
  equiv.trials = options.trials;
  equiv.seed = options.seed;
  equiv.max_elements_per_array = options.max_elements_per_array;
  if (options.oracle_seconds > 0) {
    equiv.deadline = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(options.oracle_seconds));
  }
  if (outcome.judged_global != nullptr) {
    equiv.claims = ClaimsFromMetadata(oracle_global, out.propagated.get(), oracle_partitioned);
  }
  for (const auto& [name, held] : out.claims) {
    equiv.claims.emplace(name, oracle::EquivOptions::HeldValue{held.first, held.second});
  }
  const auto oracle_start = std::chrono::steady_clock::now();
  absl::StatusOr<oracle::EquivReport> report =
      oracle::CheckEquivalence(oracle_global, oracle_partitioned, equiv);
  outcome.oracle_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - oracle_start).count();
  Verdict oracle_verdict = Verdict::kUnknown;
  std::string oracle_message;
  if (!report.ok()) {
    oracle_message = absl::StrCat("oracle: ", report.status().message());
  } else {
    outcome.oracle_ran = true;
    outcome.report = *std::move(report);
    oracle_verdict = outcome.report.verdict;
    if (oracle_verdict == Verdict::kFails) {
      oracle_message =
          absl::StrCat("device ", outcome.report.device, " differs at [",
                       absl::StrJoin(outcome.report.mismatch.global_index, ","), "]: expected ",
                       outcome.report.mismatch.expected, ", got ", outcome.report.mismatch.actual);
    } else if (oracle_verdict == Verdict::kUnknown) {
      oracle_message = outcome.report.unknown_reason;
    }
  }

  if (out.executable == nullptr || !options.execute) {
    // Ours or a command: the oracle is the judge.
    switch (oracle_verdict) {
      case Verdict::kHolds:
        outcome.status = CheckStatus::kHolds;
        break;
      case Verdict::kFails:
        outcome.status = CheckStatus::kFails;
        break;
      case Verdict::kUnknown:
        outcome.status = CheckStatus::kUnsupported;
        break;
    }
    outcome.message = oracle_message;
    if (out.executable != nullptr) {
      outcome.notes.push_back("XLA's executables not run (--no-execute): unconfirmed");
      if (outcome.status == CheckStatus::kFails) {
        outcome.status = CheckStatus::kUnsupported;
        outcome.finding = Finding::kOracleOnly;
        outcome.message = absl::StrCat("oracle-only (XLA's execution not run): ", oracle_message);
      }
    }
    return outcome;
  }

  const auto executions_start = std::chrono::steady_clock::now();
  const int64_t oracle_failing_trial =
      oracle_verdict == Verdict::kFails ? outcome.report.failing_trial : -1;
  Executions executions =
      RunExecutions(partitioner, out, *prepared, *judged, parameter_shardings, output_shardings,
                    ExecutionTrialOrder(options.trials, oracle_failing_trial), options);
  outcome.execution_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - executions_start).count();
  outcome.interpreter_seconds = executions.interpreter_seconds;
  outcome.xla_end_to_end = executions.end_to_end;
  outcome.interpreter_vs_xla = executions.interpreter;
  const ExecutionCheck& e2e = executions.end_to_end;
  const ExecutionCheck& interp = executions.interpreter;
  if (e2e.verdict == Verdict::kFails) {
    outcome.status = CheckStatus::kFails;
    outcome.finding = Finding::kConfirmedByXla;
    outcome.message =
        absl::StrCat("XLA's sharded executable differs from its ", e2e.reference, ": ", e2e.detail);
    if (oracle_verdict == Verdict::kHolds) {
      outcome.notes.push_back(
          "our oracle finds the module after spmd-partitioning correct: the difference comes "
          "from a later pass or the runtime, not from the partitioner");
    }
    return outcome;
  }
  if (e2e.padding_dependent) {
    outcome.status = CheckStatus::kUnsupported;
    outcome.finding = Finding::kReadsInputPadding;
    outcome.message =
        absl::StrCat("reads-input-padding: XLA's sharded executable differs from its ",
                     e2e.reference, " (", e2e.detail,
                     "): whether XLA may rely on the padding of uneven input shards is not a "
                     "contract spmdcheck knows, so this is no bug claim");
    return outcome;
  }
  if (interp.verdict == Verdict::kFails) {
    outcome.status = CheckStatus::kUnsupported;
    outcome.finding = Finding::kOracleDisagrees;
    outcome.message = absl::StrCat(
        "oracle-disagrees: our interpreter and XLA compute the global program differently (",
        interp.detail, "); the oracle's verdict (", VerdictName(oracle_verdict),
        ") cannot be trusted until that is resolved");
    return outcome;
  }
  if (oracle_verdict == Verdict::kFails) {
    outcome.status = CheckStatus::kUnsupported;
    outcome.finding = Finding::kOracleOnly;
    outcome.message =
        e2e.verdict == Verdict::kHolds
            ? absl::StrCat("oracle-only: our oracle finds ", oracle_message,
                           ", but XLA's sharded executable agrees with its ", e2e.reference, " on ",
                           e2e.trials_run,
                           " trials (the oracle's failing inputs first); "
                           "not an XLA bug until XLA's execution shows it (investigate ours)")
            : absl::StrCat("oracle-only (XLA's execution inconclusive: ", e2e.detail,
                           "): our oracle finds ", oracle_message);
    return outcome;
  }
  if (oracle_verdict == Verdict::kUnknown) {
    outcome.status = CheckStatus::kUnsupported;
    outcome.message = oracle_message;
    if (e2e.verdict == Verdict::kHolds) {
      outcome.notes.push_back(
          absl::StrCat("XLA's sharded executable agrees with its ", e2e.reference));
    }
    return outcome;
  }
  outcome.status = CheckStatus::kHolds;
  if (e2e.verdict != Verdict::kHolds) {
    outcome.notes.push_back(absl::StrCat("XLA end to end not checked: ", e2e.detail));
  }
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

}  // namespace spmdcheck::target
