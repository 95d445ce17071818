// The xla-executions judge (check/judges.h): XLA's sharded executable against its one-device
// run of the global program, and our interpreter against that run, on the oracle's inputs.
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check/judges.h"
#include "oracle/engine.h"
#include "oracle/global_run.h"
#include "oracle/inputs.h"
#include "oracle/sharded_values.h"

namespace spmdcheck::check {

using target::PartitionerUnderTest;
using target::PartitionOutput;

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

namespace {

// A device's output of XLA's sharded executable whose shape is not its shard's under the
// output sharding XLA itself reports (an array leaf, tiled or replicated): what is wrong, else
// nothing.
std::optional<std::string> WrongShardShape(const Literal& local, const Literal& global,
                                           const HloSharding& sharding) {
  if (!local.shape().IsArray() || !global.shape().IsArray() ||
      !(sharding.IsTiled() || sharding.IsReplicated())) {
    return std::nullopt;
  }
  const Shape expected = sharding.IsTiled() ? sharding.TileShape(global.shape()) : global.shape();
  if (expected.Compatible(local.shape())) return std::nullopt;
  return absl::StrCat("holds ", local.shape().ToString(false), " but XLA's own output sharding ",
                      sharding.ToString(false), " makes its shard of ",
                      global.shape().ToString(false), " ", expected.ToString(false),
                      " (the executable contradicts its output sharding)");
}

struct Executions {
  ExecutionCheck end_to_end;
  ExecutionCheck interpreter;
  double interpreter_seconds = 0;
};

// XLA's sharded executable vs XLA's single-device run, and our interpreter vs that run, on the
// inputs of the oracle's trials `trial_order` (the same seed, so the same inputs).
Executions RunExecutions(PartitionerUnderTest& partitioner, const PartitionOutput& out,
                         const HloModule& sent, const HloModule& judged,
                         const std::vector<HloSharding>& parameter_shardings,
                         const std::vector<HloSharding>& output_shardings,
                         const std::vector<int64_t>& trial_order, const CheckOptions& options) {
  Executions result;
  const int64_t n = out.executable->num_devices();
  auto unknown = [&](const std::string& why) {
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
    // Our interpreter on the same global program and inputs (its outputs kept for this trial).
    std::vector<Literal> ours_leaves;
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
      const int64_t interpreter_devices = oracle::HasManualRegions(sent) ? n : 1;
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
        std::vector<const Literal*> leaves = oracle::LiteralLeaves((*ours)[0]);
        for (const Literal* leaf : leaves) ours_leaves.push_back(*leaf);
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
            result.interpreter.output = static_cast<int64_t>(l);
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
    // Returns an error text when the run cannot be judged; fills `check` otherwise. The shards
    // are compared with `expected` (XLA's single-device run, or our interpreter's).
    auto run_sharded = [&](oracle::PaddingFill fill, ExecutionCheck& check,
                           const std::vector<Literal>& expected) -> std::optional<std::string> {
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
          if (std::optional<std::string> wrong_shape =
                  WrongShardShape((*sharded)[l][d], expected[l], output_shardings[l])) {
            // XLA's executable contradicts its own output sharding: wrong whatever the values.
            if (check.wrong_devices.empty()) {
              check.device = d;
              check.output = static_cast<int64_t>(l);
              check.detail =
                  absl::StrCat("device ", d, " output ",
                               sharded->size() > 1 ? absl::StrCat("{", l, "} ") : "", *wrong_shape);
            }
            check.wrong_devices.push_back(d);
            break;
          }
          absl::StatusOr<std::optional<oracle::ElementMismatch>> m =
              oracle::CompareShard((*sharded)[l][d], expected[l], output_shardings[l], d,
                                   ExecutionTolerance(expected[l].shape().element_type()));
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
    if (std::optional<std::string> error =
            run_sharded(oracle::PaddingFill::kPoison, poisoned, *single)) {
      if (absl::StartsWith(*error, "XLA's sharded run")) {
        result.end_to_end.detail = *error;
        return result;
      }
      return unknown(*error);
    }
    result.end_to_end.trials_run = trials_run;
    if (!poisoned.wrong_devices.empty()) {
      ExecutionCheck zeroed;
      std::optional<std::string> error = run_sharded(oracle::PaddingFill::kZero, zeroed, *single);
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
      // Which of XLA's two runs is the odd one out: when the sharded run equals our interpreter's
      // run of the global program, the single-device run is.
      if (ours_leaves.size() == single->size()) {
        ExecutionCheck against_ours;
        result.end_to_end.sharded_agrees_with_interpreter =
            !run_sharded(oracle::PaddingFill::kZero, against_ours, ours_leaves).has_value() &&
            against_ours.wrong_devices.empty();
      }
      return result;
    }
    result.end_to_end.verdict = Verdict::kHolds;
  }
  return result;
}

// Runs XLA's executables (when --no-execute is not given) and records two comparisons:
// xla-end-to-end and interpreter-vs-xla.
class XlaExecutionsJudge : public Judge {
 public:
  absl::string_view name() const override { return "xla-executions"; }
  bool Applies(const JudgeInputs& in) const override { return in.output.executable != nullptr; }
  void Run(const JudgeInputs& in, CheckOutcome& outcome) const override {
    if (!in.options.execute) {
      outcome.judges.push_back(JudgeRecord{"xla-end-to-end", Verdict::kUnknown,
                                           "XLA's executables not run (--no-execute)", 0, false});
      return;
    }
    const JudgeRecord* oracle = FindJudgeRecord(outcome, "oracle");
    const int64_t oracle_failing_trial =
        oracle != nullptr && oracle->verdict == Verdict::kFails ? outcome.report.failing_trial : -1;
    const auto start = std::chrono::steady_clock::now();
    Executions executions = RunExecutions(
        in.partitioner, in.output, in.sent, in.judged, in.parameter_shardings, in.output_shardings,
        ExecutionTrialOrder(in.options.trials, oracle_failing_trial), in.options);
    outcome.execution_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.interpreter_seconds = executions.interpreter_seconds;
    outcome.judges.push_back(
        JudgeRecord{"xla-end-to-end", executions.end_to_end.verdict, executions.end_to_end.detail,
                    outcome.execution_seconds - outcome.interpreter_seconds, true});
    outcome.judges.push_back(JudgeRecord{"interpreter-vs-xla", executions.interpreter.verdict,
                                         executions.interpreter.detail, outcome.interpreter_seconds,
                                         true});
    outcome.xla_end_to_end = std::move(executions.end_to_end);
    outcome.interpreter_vs_xla = std::move(executions.interpreter);
  }
};

}  // namespace

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

std::vector<int64_t> ExecutionTrialOrder(int64_t trials, int64_t oracle_failing_trial) {
  std::vector<int64_t> order;
  if (oracle_failing_trial >= 0) order.push_back(oracle_failing_trial);
  const int64_t count = oracle_failing_trial >= 0 ? 2 * trials + 1 : trials;
  for (int64_t t = 0; static_cast<int64_t>(order.size()) < count; ++t) {
    if (t != oracle_failing_trial) order.push_back(t);
  }
  return order;
}

const Judge& XlaExecutionsJudgeInstance() {
  static const XlaExecutionsJudge judge;
  return judge;
}

}  // namespace spmdcheck::check
