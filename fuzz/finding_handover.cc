#include "fuzz/finding_handover.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/cost_model.h"
#include "check/check_pipeline.h"
#include "check/pass_bisection.h"
#include "check/repro_script.h"
#include "check/signature.h"
#include "ir/hlo_opcode.h"
#include "ir/hlo_printer.h"
#include "oracle/inputs.h"

namespace spmdcheck::fuzz {
namespace {

using check::CheckOutcome;
using check::CheckPartitioning;
using check::CheckStatus;

// The trial whose inputs showed the difference.
int64_t FailingTrial(const CheckOutcome& outcome) {
  if (outcome.xla_end_to_end.has_value() && outcome.xla_end_to_end->trial >= 0) {
    return outcome.xla_end_to_end->trial;
  }
  return std::max<int64_t>(0, outcome.report.failing_trial);
}

// The divergence that explains the failure (check::CauseDivergence): the first one, or the first
// in the output XLA's execution found wrong.
std::string DivergenceText(const CheckOutcome& outcome, const HloModule& program) {
  if (!outcome.oracle_ran) return "";
  const oracle::Divergence* d = check::CauseDivergence(outcome, program);
  if (d == nullptr) return "";
  std::string text = oracle::FormatDivergence(*d);
  if (d != &*outcome.report.first_divergence) {
    absl::StrAppend(&text, " (the first in the output XLA found wrong; the oracle's first is ",
                    outcome.report.first_divergence->holds, ")");
  }
  return text;
}

}  // namespace

std::string FirstLineOf(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.substr(0, 120);
}

int64_t MaxRecvBytes(const HloModule& partitioned) {
  return analysis::CostOfModule(partitioned, partitioned.num_partitions()).total.max_recv_bytes;
}

WastefulKind WastefulKindOf(const std::string& signature) {
  if (absl::StrContains(signature, ".wasteful.bytes-vs-")) return WastefulKind::kBytes;
  if (absl::StrContains(signature, ".wasteful.")) return WastefulKind::kLint;
  return WastefulKind::kNone;
}

std::vector<CostFinding> WastefulFindings(target::PartitionerUnderTest& partitioner,
                                          const std::string& signature,
                                          const check::CheckOptions& check,
                                          const CostCheck& cost_check, const HloModule& program) {
  std::vector<CostFinding> found;
  if (!cost_check) return found;
  absl::StatusOr<CheckOutcome> o = CheckPartitioning(program, partitioner, check);
  if (!o.ok() || o->status != CheckStatus::kHolds || o->partitioned == nullptr) return found;
  const std::string prefix = check::SignaturePrefix(partitioner.spec());
  for (CostFinding& f :
       cost_check(*o->partitioned,
                  o->partitioned_text.empty() ? PrintModule(*o->partitioned) : o->partitioned_text,
                  o->judged_global != nullptr ? *o->judged_global : program)) {
    if (signature == check::SanitizedName(absl::StrCat(prefix, ".wasteful.", f.pattern))) {
      found.push_back(std::move(f));
    }
  }
  return found;
}

InterestingnessFn FindingPredicate(target::PartitionerUnderTest& partitioner,
                                   const std::string& signature, const check::CheckOptions& check,
                                   const FindingPredicateOptions& options) {
  const std::string spec = partitioner.spec();
  return [&partitioner, signature, base_check = check, options,
          spec](const HloModule& m) -> absl::StatusOr<bool> {
    if (options.cancelled && options.cancelled()) {
      return absl::CancelledError("the reduction was stopped");
    }
    check::CheckOptions check = base_check;
    check.oracle_seconds = kReductionOracleSeconds;
    if (options.deadline.has_value()) {
      const double left =
          std::chrono::duration<double>(*options.deadline - std::chrono::steady_clock::now())
              .count();
      check.oracle_seconds = std::clamp(left, 0.05, kReductionOracleSeconds);
    }
    if (options.wasteful == WastefulKind::kLint) {
      for (const CostFinding& f :
           WastefulFindings(partitioner, signature, check, options.cost_check, m)) {
        if (options.proposal.empty() || f.proposal == options.proposal) return true;
      }
      return false;
    }
    if (options.wasteful == WastefulKind::kBytes) {
      if (options.cheaper == nullptr) return false;
      const int64_t n = m.num_partitions();
      absl::StatusOr<target::PartitionOutput> a = partitioner.Partition(m, n);
      absl::StatusOr<target::PartitionOutput> b = options.cheaper->Partition(m, n);
      if (!a.ok() || !b.ok() || a->status != target::PartitionStatus::kOk ||
          b->status != target::PartitionStatus::kOk) {
        return false;
      }
      const int64_t more = MaxRecvBytes(*a->partitioned);
      const int64_t less = MaxRecvBytes(*b->partitioned);
      return more >= options.wasteful_min_bytes + less &&
             static_cast<double>(more) >= options.wasteful_ratio * static_cast<double>(less);
    }
    absl::StatusOr<CheckOutcome> o = CheckPartitioning(m, partitioner, check);
    if (!o.ok()) return false;
    const std::string text = check::SignatureOf(spec, *o, m).text;
    if (options.any_op_of_kind) {
      if (!absl::StartsWith(text, signature.substr(0, signature.rfind('.') + 1))) return false;
    } else if (text != signature) {
      return false;
    }
    return options.failed_check.empty() || check::FailedCheckOf(o->message) == options.failed_check;
  };
}

bool IsMiscompileSignature(const std::string& signature) {
  return absl::StrContains(signature, ".miscompile.") ||
         absl::StrContains(signature, ".single-device-miscompile.");
}

absl::StatusOr<std::optional<RootCause>> FindRootCause(
    target::PartitionerUnderTest& partitioner, const HloModule& reduced,
    const std::string& signature, const check::CheckOptions& check, FindingPredicateOptions options,
    std::chrono::steady_clock::time_point deadline) {
  options.any_op_of_kind = true;
  options.deadline = deadline;
  DescendOptions descend;
  descend.propagated = PropagatedShardings(partitioner, reduced);
  absl::StatusOr<DescendResult> descended = DescendRoot(
      reduced, FindingPredicate(partitioner, signature, check, options), deadline, descend);
  if (!descended.ok()) return descended.status();
  if (descended->steps == 0) return std::optional<RootCause>();
  check::CheckOptions final_check = check;
  final_check.oracle_seconds = kReductionOracleSeconds;
  absl::StatusOr<CheckOutcome> o = CheckPartitioning(*descended->module, partitioner, final_check);
  if (!o.ok()) return o.status();
  RootCause cause;
  const std::string checked = check::SignatureOf(partitioner.spec(), *o, *descended->module).text;
  if (!IsMiscompileSignature(checked)) return std::optional<RootCause>();
  // The op the root ended at makes the wrong value: none of its operands as the root keeps the
  // miscompile. The check's signature may name another (the earliest suspect of its first
  // divergence, an operand's reshard), which is noted.
  const HloInstruction& root = *descended->module->entry()->root();
  cause.signature = checked;
  if (root.opcode() != HloOpcode::kTuple && root.opcode() != HloOpcode::kGetTupleElement) {
    cause.signature =
        absl::StrCat(checked.substr(0, checked.rfind('.') + 1),
                     check::SanitizedName(std::string(HloOpcodeString(root.opcode()))));
  }
  cause.steps = descended->steps;
  cause.step_notes = std::move(descended->step_notes);
  if (cause.signature != checked) {
    cause.step_notes.push_back(absl::StrCat("the check of that module names ", checked));
  }
  cause.module = std::move(descended->module);
  return std::optional<RootCause>(std::move(cause));
}

std::string RootCauseNote(const RootCause& cause) {
  return absl::StrCat("; then the root moved ", cause.steps,
                      " op(s) down to the op that makes the wrong value: ", cause.signature, " (",
                      absl::StrJoin(cause.step_notes, ", "), ")");
}

absl::flat_hash_map<std::string, HloSharding> PropagatedShardingsByName(
    const HloModule& module, const HloModule& propagated) {
  absl::flat_hash_map<std::string, HloSharding> shardings;
  if (module.entry() == nullptr || propagated.entry() == nullptr) return shardings;
  for (const auto& p : propagated.entry()->instructions()) {
    if (!p->sharding().has_value()) continue;
    std::string name = check::MetadataOpName(*p);
    if (name.empty()) name = p->name();
    const HloInstruction* g = module.entry()->FindInstruction(name);
    if (g == nullptr || g->opcode() != p->opcode() || !g->shape().Compatible(p->shape())) continue;
    HloSharding sharding = p->sharding()->WithoutNamedForms();
    sharding.set_metadata("");
    shardings.insert_or_assign(name, std::move(sharding));
  }
  return shardings;
}

absl::flat_hash_map<std::string, HloSharding> PropagatedShardings(
    target::PartitionerUnderTest& partitioner, const HloModule& module) {
  absl::StatusOr<target::PartitionOutput> out =
      partitioner.Partition(module, module.num_partitions());
  if (!out.ok() || out->status != target::PartitionStatus::kOk || out->propagated == nullptr) {
    return {};
  }
  return PropagatedShardingsByName(module, *out->propagated);
}

absl::StatusOr<ReduceResult> ReduceFinding(const HloModule& program,
                                           const InterestingnessFn& interesting, double seconds,
                                           const std::string& unreduced_reason) {
  if (!program.jax_source().empty()) {
    return absl::CancelledError("an sdy-level program (module.mlir), kept as generated");
  }
  if (seconds <= 0) return absl::CancelledError(unreduced_reason);
  ReduceOptions reduce_options;
  reduce_options.max_seconds = seconds;
  return ReduceModule(program, interesting, reduce_options);
}

absl::StatusOr<std::string> WriteFinding(target::PartitionerUnderTest& partitioner,
                                         const HloModule& repro, const std::string& jax_source,
                                         const check::CheckOptions& check,
                                         const FindingWriteOptions& options,
                                         FindingRecord& record) {
  const std::string folder =
      (std::filesystem::path(options.out_dir) / check::SanitizedName(record.signature)).string();
  record.reproduce = absl::StrCat(
      "spmdcheck check ", folder, jax_source.empty() ? "/module.hlo" : "/module.mlir", " --seed ",
      record.case_seed, " --trials ", std::max<int64_t>(1, check.trials), options.reproduce_flags);
  FindingFiles files;
  files.module = &repro;
  files.jax_source = jax_source;
  absl::StatusOr<CheckOutcome> final_outcome = CheckPartitioning(repro, partitioner, check);
  int64_t trial = 0;
  if (final_outcome.ok()) {
    // The campaign's message of a timeout says what trying it alone showed; keep that.
    if (options.wasteful == WastefulKind::kNone && final_outcome->status != CheckStatus::kTimeout) {
      record.message = final_outcome->message;
    }
    record.divergence = DivergenceText(*final_outcome, repro);
    record.partitioner_version = final_outcome->self_report.version;
    files.partitioned_text = final_outcome->partitioned_text;
    if (files.partitioned_text.empty() && final_outcome->partitioned != nullptr) {
      files.partitioned_text = PrintModule(*final_outcome->partitioned);
    }
    trial = FailingTrial(*final_outcome);
    if (options.bisect_passes && final_outcome->finding == check::Finding::kConfirmedByXla &&
        final_outcome->oracle_ran && final_outcome->report.verdict == Verdict::kHolds) {
      if (partitioner.pass_dumping() != nullptr) {
        absl::StatusOr<check::PassBisection> bisection =
            check::BisectPasses(repro, partitioner, check);
        record.broken_by = bisection.ok() ? bisection->Summary()
                                          : absl::StrCat("unknown: ", bisection.status().message());
      }
    }
  }
  bool tuple_parameters = false;
  for (const HloInstruction* p : repro.entry()->parameters()) {
    tuple_parameters = tuple_parameters || !p->shape().IsArray();
  }
  if (!tuple_parameters) {
    files.inputs =
        oracle::TrialInputs(repro, record.case_seed, trial, oracle::InputStyle::kSmallIntegers);
  }
  if (options.wasteful != WastefulKind::kNone) {
    record.repro_note = "a wasteful partitioning has no wrong result to reproduce";
  } else {
    check::ReproRequest request;
    request.seed = record.case_seed;
    request.trial = trial;
    request.found = absl::StrCat(record.signature, ": ", FirstLineOf(record.message));
    request.command = absl::StrCat("spmdcheck repro ", folder, "/module.hlo --jax --seed ",
                                   record.case_seed, " --trial ", trial, options.reproduce_flags);
    absl::StatusOr<check::ReproScript> script = check::MakeReproScript(repro, partitioner, request);
    absl::StatusOr<std::string> text = script.ok() ? check::RenderReproScript(*script)
                                                   : absl::StatusOr<std::string>(script.status());
    if (text.ok()) {
      files.repro_script = *std::move(text);
    } else {
      record.repro_note = absl::StrCat("no repro.py: ", text.status().message());
    }
  }
  if (options.matrix != nullptr) {
    record.versions = options.matrix->Try(
        partitioner.spec(), repro, record.root_cause.empty() ? record.signature : record.root_cause,
        check);
    record.versions_note.clear();
  } else {
    record.versions_note = options.versions_note;
  }
  return WriteFindingFolder(options.out_dir, record, files);
}

}  // namespace spmdcheck::fuzz
