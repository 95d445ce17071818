#include "tools/reduce_finding.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file.h"
#include "check/check_pipeline.h"
#include "check/signature.h"
#include "check/version_matrix.h"
#include "fuzz/finding_handover.h"
#include "fuzz/findings.h"
#include "ir/data_dir.h"
#include "nlohmann/json.hpp"
#include "tools/lint_cost_check.h"
#include "tools/module_loading.h"
#include "tools/partitioner_flags.h"

namespace spmdcheck::cli {
namespace {

// The value of `flag` in a recorded command line ("... --inject-bug NAME ..."), or "".
std::string FlagIn(const std::string& command, const std::string& flag) {
  std::vector<std::string> words = absl::StrSplit(command, ' ', absl::SkipEmpty());
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == flag) return words[i + 1];
  }
  return "";
}

}  // namespace

int RunReduceFinding(const std::string& dir, const ReduceFindingFlags& flags, std::ostream& out,
                     std::ostream& err) {
  const std::filesystem::path folder(dir);
  const absl::StatusOr<std::string> json_text = base::ReadFile((folder / "finding.json").string());
  if (absl::IsNotFound(json_text.status())) {
    return BadInput(err, "reduce",
                    absl::StrCat(dir,
                                 " is a directory without finding.json: give a finding "
                                 "folder a campaign wrote, or a module file"));
  }
  if (!json_text.ok()) return BadInput(err, "reduce", json_text.status().message());
  const nlohmann::json finding = nlohmann::json::parse(*json_text, nullptr, false);
  if (!finding.is_object() || !finding.contains("signature") || !finding.contains("partitioner")) {
    return BadInput(err, "reduce",
                    absl::StrCat((folder / "finding.json").string(),
                                 ": not a finding (no signature and partitioner)"));
  }
  fuzz::FindingRecord record;
  record.signature = finding.value("signature", "");
  // A miscompile whose root was moved down was written as the moved module: it shows the root
  // cause's signature, which is what the reduction keeps and the descent starts from.
  record.root_cause = finding.value("root_cause", "");
  const std::string shown = record.root_cause.empty() ? record.signature : record.root_cause;
  record.partitioner = finding.value("partitioner", "");
  record.claim = finding.value("bug_claim", true);
  record.campaign = finding.value("campaign", "");
  record.first_case = finding.value("first_case", int64_t{0});
  record.case_seed = finding.value("case_seed", uint64_t{1});
  record.seconds_to_find = finding.value("seconds_to_find", 0.0);
  record.message = finding.value("message", "");
  const std::string reproduce = finding.value("reproduce", "");
  if (finding.contains("files") && !finding["files"].value("jax_source", "").empty()) {
    return BadInput(err, "reduce",
                    absl::StrCat(dir,
                                 " is a jax-level program (module.mlir, compiled from its "
                                 "StableHLO as jax.jit does): the HLO reducer would leave "
                                 "that route, so it is kept as generated"));
  }

  // The partitioner the finding names, with its flags, unless the command line says otherwise.
  PartitionerFlags partitioner_flags = flags.partitioner;
  if (!partitioner_flags.partitioner.has_value())
    partitioner_flags.partitioner = record.partitioner;
  const std::string bug = FlagIn(reproduce, "--inject-bug");
  if (!partitioner_flags.inject_bug.has_value() && !bug.empty()) {
    partitioner_flags.inject_bug = bug;
  }
  absl::StatusOr<PartitionerChoice> choice = ChoosePartitioner(partitioner_flags);
  if (!choice.ok()) return BadInput(err, "reduce", choice.status().message());
  absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> made =
      target::MakePartitioners(choice->specs, choice->options);
  if (!made.ok()) return BadInput(err, "reduce", made.status().message());
  if (made->size() != 1) return BadInput(err, "reduce", "a finding has one partitioner");
  target::PartitionerUnderTest& partitioner = *made->front();

  const int64_t trials = flags.trials;
  const uint64_t seed = flags.seed.value_or(record.case_seed);
  const int64_t max_seconds = flags.max_seconds.value_or(300);
  if (trials < 1 || max_seconds < 0) {
    return BadInput(err, "reduce", "--trials >= 1, --seed S, --max-seconds >= 0");
  }
  record.case_seed = seed;
  const std::string module_path = (folder / "module.hlo").string();
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(module_path, err);
  if (!module.ok()) return BadInput(err, "reduce", module.status().message());

  check::CheckOptions check;
  check.num_partitions = 0;
  check.trials = trials;
  check.seed = seed;
  fuzz::FindingPredicateOptions predicate;
  predicate.wasteful = fuzz::WastefulKindOf(record.signature);
  predicate.cost_check = LintCostCheck();
  predicate.failed_check = check::FailedCheckOf(record.message);
  std::vector<std::unique_ptr<target::PartitionerUnderTest>> cheaper;
  if (predicate.wasteful == fuzz::WastefulKind::kBytes) {
    const std::string other = record.signature.substr(record.signature.find("bytes-vs-") + 9);
    absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> made_other =
        target::MakePartitioners(other, choice->options);
    if (!made_other.ok() || made_other->size() != 1) {
      return BadInput(err, "reduce",
                      absl::StrCat("cannot make the cheaper partitioner '", other, "'"));
    }
    cheaper = *std::move(made_other);
    predicate.cheaper = cheaper.front().get();
  }
  if (predicate.wasteful == fuzz::WastefulKind::kLint) {
    // The reduced case must keep what the lint proposes on the finding's module.
    const std::vector<fuzz::CostFinding> found = fuzz::WastefulFindings(
        partitioner, record.signature, check, predicate.cost_check, **module);
    if (!found.empty()) predicate.proposal = found.front().proposal;
  }
  const fuzz::InterestingnessFn interesting =
      fuzz::FindingPredicate(partitioner, shown, check, predicate);
  absl::StatusOr<bool> still = interesting(**module);
  if (!still.ok()) {
    err << "spmdcheck reduce: unknown: " << still.status().message() << "\n";
    return kExitUnknown;
  }
  if (!*still) {
    return BadInput(err, "reduce",
                    absl::StrCat(module_path, " no longer shows ", shown, " under ",
                                 partitioner.spec(), ": nothing to reduce"));
  }
  // The module as found stays beside the reduced one.
  std::error_code ec;
  if (!std::filesystem::exists(folder / "module.unreduced.hlo", ec)) {
    std::filesystem::copy_file(module_path, folder / "module.unreduced.hlo", ec);
  }
  absl::StatusOr<fuzz::ReduceResult> reduced = fuzz::ReduceFinding(
      **module, interesting, static_cast<double>(max_seconds), "--max-seconds 0");
  if (!reduced.ok() && !absl::IsCancelled(reduced.status())) {
    err << "spmdcheck reduce: unknown: the reduction failed: " << reduced.status().message()
        << "\n";
    return kExitUnknown;
  }
  record.reduction = reduced.ok() ? absl::StrCat("reduced: ", reduced->report.ToString())
                                  : absl::StrCat("not reduced: ", reduced.status().message());
  // A miscompile seen at an op that only carries the wrong value: the op that makes it.
  std::optional<fuzz::RootCause> cause;
  if (reduced.ok() && fuzz::IsMiscompileSignature(shown)) {
    absl::StatusOr<std::optional<fuzz::RootCause>> found =
        fuzz::FindRootCause(partitioner, *reduced->module, shown, check, predicate,
                            std::chrono::steady_clock::now() +
                                std::chrono::seconds(std::clamp<int64_t>(max_seconds, 1, 60)));
    if (found.ok() && found->has_value()) cause = std::move(**found);
  }
  if (cause.has_value()) {
    record.root_cause = cause->signature;
    absl::StrAppend(&record.reduction, fuzz::RootCauseNote(*cause));
  }
  check::VersionMatrix matrix(choice->other_xla_pythons, choice->options);
  fuzz::FindingWriteOptions write;
  write.out_dir = std::filesystem::absolute(folder, ec).parent_path().string();
  write.wasteful = predicate.wasteful;
  write.matrix = &matrix;
  write.reproduce_flags = absl::StrCat(target::ReproducePartitionerFlags(partitioner.full_spec()),
                                       choice->reproduce_flags);
  const HloModule& repro = cause.has_value() ? *cause->module
                           : reduced.ok()    ? *reduced->module
                                             : **module;
  absl::StatusOr<std::string> written =
      fuzz::WriteFinding(partitioner, repro, "", check, write, record);
  if (!written.ok()) return BadInput(err, "reduce", written.status().message());
  out << "reduce: " << dir << " (" << record.signature << ", " << partitioner.spec() << ")\n";
  if (reduced.ok()) {
    const fuzz::ReduceReport& r = reduced->report;
    out << absl::StrFormat("instructions: %d -> %d (entry %d -> %d), devices: %d -> %d\n",
                           r.instructions_before, r.instructions_after, r.entry_instructions_before,
                           r.entry_instructions_after, r.devices_before, r.devices_after);
  } else {
    out << record.reduction << "\n";
  }
  if (cause.has_value()) {
    out << "root cause: " << cause->signature << " (the root moved " << cause->steps
        << " op(s) down to the op that makes the wrong value: "
        << absl::StrJoin(cause->step_notes, ", ") << ")\n";
  }
  // The known XLA finding it is, by its root cause when the descent found one.
  if (absl::StatusOr<std::vector<fuzz::KnownFinding>> known =
          fuzz::LoadKnownFindings(SpmdcheckDataDir() + "/corpus/xla-findings/known.json");
      known.ok()) {
    const std::string& named = record.root_cause.empty() ? record.signature : record.root_cause;
    if (const fuzz::KnownFinding* k = fuzz::FindKnown(*known, named, &repro)) {
      out << "known finding: " << k->name << " (corpus/xla-findings/" << k->name << ")\n";
    }
  }
  for (const fuzz::VersionCheck& v : record.versions) {
    out << "also on " << (v.versions.empty() ? v.venv : v.versions) << ": " << v.verdict << "\n";
  }
  out << "wrote " << *written << " (the module as found: module.unreduced.hlo)\n";
  return kExitHolds;
}

}  // namespace spmdcheck::cli
