#include "fuzz/campaign.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/cost_model.h"
#include "base/file.h"
#include "base/status.h"
#include "check/check_pipeline.h"
#include "check/pass_bisection.h"
#include "check/repro_script.h"
#include "check/signature.h"
#include "fuzz/background_cost_check.h"
#include "fuzz/finding_handover.h"
#include "fuzz/program_gen.h"
#include "fuzz/reducer.h"
#include "fuzz/sdy_program_gen.h"
#include "ir/hlo_printer.h"
#include "oracle/inputs.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::fuzz {

using check::CheckOptions;
using check::CheckOutcome;
using check::CheckPartitioning;
using check::CheckStatus;
using check::FailureSignature;
using target::PartitionerUnderTest;
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

uint64_t CaseSeed(uint64_t seed, int64_t index) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index) + 1;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The bytes of case `case_seed`: a header and 1..max steps, uniformly many.
std::vector<uint8_t> CaseBytes(uint64_t case_seed, const ProgramGenOptions& gen) {
  std::mt19937_64 rng(case_seed);
  const int64_t steps =
      1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(gen.max_instructions));
  std::vector<uint8_t> bytes(kRecipeHeaderBytes + steps * kRecipeStepBytes);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

// Our oracle's and interpreter's time for one case (their loops stop there: unknown).
constexpr double kCaseOracleSeconds = 10;
// At most this long looking for the op that makes a reduced miscompile's wrong value.
constexpr double kRootCauseSeconds = 20;

// How a campaign checks case `case_seed` (and the reduction of its findings checks candidates).
CheckOptions CaseCheckOptions(uint64_t case_seed) {
  CheckOptions check;
  check.trials = 1;
  check.seed = case_seed;
  check.oracle_seconds = kCaseOracleSeconds;
  return check;
}

// Correct partitionings the lint looks at on its own thread while the next cases compile: two
// at a time (one running, one waiting) keep it busy without holding many modules.
constexpr size_t kPendingCostChecks = 2;

// One case's outcome under one partitioner, kept until every partitioner has run (for the
// wasteful comparison between them).
// Reads an sdy-level program through the first partitioner that reads StableHLO (XLA's worker,
// jaxlib); null when none does (`error`: the last reason other than "unimplemented").
std::unique_ptr<HloModule> ImportSdyProgram(
    const std::vector<std::unique_ptr<PartitionerUnderTest>>& partitioners, const std::string& text,
    uint64_t case_seed, std::string& error) {
  for (const auto& partitioner : partitioners) {
    absl::StatusOr<std::unique_ptr<HloModule>> module = partitioner->ImportJaxProgram(
        text, absl::StrCat("<sdy program, case seed ", case_seed, ">"));
    if (module.ok()) return *std::move(module);
    if (!absl::IsUnimplemented(module.status())) {
      error = FirstLineOf(std::string(module.status().message()));
    }
  }
  return nullptr;
}

struct Correct {
  PartitionerUnderTest* partitioner = nullptr;
  int64_t max_recv_bytes = 0;
};

}  // namespace

bool CampaignReport::HasBugClaim() const {
  for (const CampaignFailure& f : failures) {
    if (f.claim) return true;
  }
  return false;
}

namespace {

// The bug claims grouped by cause: the known finding they are, else the op the root-cause
// descent ended at, else their signature. One cause seen at several ops has several signatures
// (and rows in the findings table); here it is one line.
struct Cause {
  std::string name;
  bool known = false;
  int64_t cases = 0;
  std::vector<std::string> signatures;
};

std::vector<Cause> CausesOf(const std::vector<CampaignFailure>& failures) {
  std::vector<Cause> causes;
  for (const CampaignFailure& f : failures) {
    if (!f.claim) continue;
    const std::string name = !f.known_as.empty()     ? f.known_as
                             : !f.root_cause.empty() ? f.root_cause
                                                     : f.signature;
    auto it =
        std::find_if(causes.begin(), causes.end(), [&](const Cause& c) { return c.name == name; });
    if (it == causes.end()) {
      causes.push_back({name, !f.known_as.empty(), 0, {}});
      it = causes.end() - 1;
    }
    it->cases += f.count;
    it->signatures.push_back(f.signature);
  }
  return causes;
}

void AppendCauses(const std::vector<CampaignFailure>& failures, std::string& out) {
  const std::vector<Cause> causes = CausesOf(failures);
  if (causes.empty()) return;
  size_t width = 5;
  for (const Cause& c : causes) width = std::max(width, c.name.size());
  absl::StrAppendFormat(&out, "bug claims by cause (%d):\n", causes.size());
  for (const Cause& c : causes) {
    absl::StrAppendFormat(&out, "  %-*s %-5s %6d case(s)  %s\n", width, c.name,
                          c.known ? "known" : "new", c.cases, absl::StrJoin(c.signatures, ", "));
  }
}

nlohmann::json CausesJson(const std::vector<CampaignFailure>& failures) {
  nlohmann::json out = nlohmann::json::array();
  for (const Cause& c : CausesOf(failures)) {
    out.push_back(
        {{"cause", c.name}, {"known", c.known}, {"cases", c.cases}, {"signatures", c.signatures}});
  }
  return out;
}

}  // namespace

std::string CampaignReport::ToString() const {
  std::string out = absl::StrFormat(
      "cases: %d (%.1f/s), holds: %d, failures: %d in %d signature(s), unsupported: %d, "
      "elapsed %.1fs\n",
      progress.cases, progress.elapsed > 0 ? progress.cases / progress.elapsed : 0.0,
      progress.holds, progress.failures, failures.size(), progress.unsupported, progress.elapsed);
  if (stopped) out += "stopped before the campaign's limit (interrupted)\n";
  if (!unavailable.empty()) out += "stopped: " + unavailable + "\n";
  for (const auto& [spec, t] : partitioners) {
    absl::StrAppendFormat(
        &out,
        "  %s: %d case(s): holds %d, failures %d, to investigate %d, unknown %d; accepted %d "
        "(%.1f%%%s%s%s), %.1fs partitioning\n",
        spec, t.cases, t.holds, t.failures, t.investigate, t.unknown, t.accepted,
        t.cases > 0 ? 100.0 * static_cast<double>(t.accepted) / static_cast<double>(t.cases) : 0.0,
        t.rejected_by_bug > 0
            ? absl::StrFormat(
                  "; %.1f%% of the %d not stopped by an XLA crash or rejection bug",
                  100.0 * static_cast<double>(t.accepted) /
                      static_cast<double>(std::max<int64_t>(1, t.cases - t.rejected_by_bug)),
                  t.cases - t.rejected_by_bug)
            : "",
        t.one_mesh_cases > 0
            ? absl::StrFormat("; one-mesh programs %d/%d", t.one_mesh_accepted, t.one_mesh_cases)
            : "",
        t.sdy_cases > 0 ? absl::StrFormat("; sdy-level programs %d/%d", t.sdy_accepted, t.sdy_cases)
                        : "",
        t.seconds);
  }
  if (times.Total() > 0) {
    const double total = times.Total();
    auto share = [&](double s) { return 100.0 * s / total; };
    absl::StrAppendFormat(
        &out,
        "time: partitioners %.0f%%, their executions %.0f%%, ours %.0f%% "
        "(generator %.1f%%, oracle %.1f%%, interpreter %.1f%%, round-trip judge %.1f%%, round "
        "trips and dumps %.1f%%), reductions and repros %.0f%%%s\n",
        share(times.partition), share(times.execute), share(times.Ours()), share(times.generate),
        share(times.oracle), share(times.interpreter), share(times.round_trip),
        share(times.Other()), share(times.reduce),
        times.lint > 0
            ? absl::StrFormat("; the lint %.1f s on its own thread, overlapping the cases",
                              times.lint)
            : "");
  }
  if (!pattern_hits.empty()) {
    std::vector<std::string> hits;
    for (const auto& [pattern, count] : pattern_hits)
      hits.push_back(absl::StrCat(pattern, " ", count));
    out += "patterns hit: " + absl::StrJoin(hits, ", ") + "\n";
  }
  for (const CampaignFailure& f : failures) {
    const std::string reduction =
        f.instructions_before == 0
            ? std::string("not reduced")
            : absl::StrFormat("reduced %d -> %d instructions, %d -> %d devices",
                              f.instructions_before, f.instructions_after, f.devices_before,
                              f.devices_after);
    const std::string seen_at =
        f.root_cause.empty() ? "" : absl::StrCat(", made by the op of ", f.root_cause);
    const std::string kind = !f.known_as.empty()
                                 ? absl::StrCat(" (known: ", f.known_as, seen_at, ")")
                             : f.claim ? absl::StrCat(" (new", seen_at, ")")
                                       : " (new, to investigate: not a bug claim)";
    if (!f.known_as.empty()) {
      absl::StrAppendFormat(&out, "  %s%s: %d case(s), first at case %d after %.1fs\n", f.signature,
                            kind, f.count, f.first_case, f.seconds_to_find);
      continue;
    }
    std::string message = f.message.substr(0, f.message.find('\n'));
    if (message.size() > 300) message = message.substr(0, 300) + "...";
    absl::StrAppendFormat(
        &out, "  %s%s: %d case(s), first at case %d after %.1fs; %s: %s\n    %s\n", f.signature,
        kind, f.count, f.first_case, f.seconds_to_find, reduction, f.path, message);
    if (!f.broken_by.empty()) absl::StrAppend(&out, "    broken by: ", f.broken_by, "\n");
    for (const VersionCheck& v : f.versions) {
      absl::StrAppend(&out, "    ", v.versions.empty() ? v.venv : v.versions, ": ", v.verdict,
                      "\n");
    }
  }
  if (!failures.empty()) {
    // The findings table: what a reader scans first.
    size_t width = 9;
    for (const CampaignFailure& f : failures) width = std::max(width, f.signature.size());
    absl::StrAppendFormat(&out, "findings:\n  %-*s %6s  %-20s %-36s %s\n", width, "signature",
                          "cases", "kind", "known or new", "repro");
    for (const CampaignFailure& f : failures) {
      const std::string kind = absl::StrContains(f.signature, ".wasteful.") ? "wasteful (correct)"
                               : absl::StrContains(f.signature, ".miscompile.") ? "confirmed by XLA"
                               : absl::StrContains(f.signature, ".single-device-miscompile.")
                                   ? "XLA one-device bug"
                               : f.claim ? "bug claim"
                                         : "to investigate";
      const std::string known = f.known_as.empty() ? "new" : "known: " + f.known_as;
      const std::string repro = !f.known_as.empty() ? "corpus/xla-findings/" + f.known_as
                                                    : (f.path.empty() ? "-" : f.path + "/");
      absl::StrAppendFormat(&out, "  %-*s %6d  %-20s %-36s %s\n", width, f.signature, f.count, kind,
                            known, repro);
    }
    AppendCauses(failures, out);
  }
  if (!unsupported_reasons.empty()) {
    std::vector<std::pair<int64_t, std::string>> top;
    for (const auto& [reason, count] : unsupported_reasons) top.push_back({count, reason});
    std::sort(top.rbegin(), top.rend());
    out += "unsupported (most common):\n";
    for (size_t i = 0; i < top.size() && i < 5; ++i) {
      absl::StrAppendFormat(&out, "  %d x %s\n", top[i].first, top[i].second);
    }
  }
  return out;
}

nlohmann::json CampaignReport::ToJson(const CampaignOptions& options) const {
  nlohmann::json per_partitioner = nlohmann::json::object();
  for (const auto& [spec, t] : partitioners) {
    per_partitioner[spec] = {
        {"cases", t.cases},
        {"holds", t.holds},
        {"failures", t.failures},
        {"to_investigate", t.investigate},
        {"unknown", t.unknown},
        {"accepted", t.accepted},
        {"acceptance_rate",
         t.cases > 0 ? static_cast<double>(t.accepted) / static_cast<double>(t.cases) : 0.0},
        {"rejected_by_xla_bug", t.rejected_by_bug},
        {"acceptance_rate_without_xla_bugs",
         t.cases > t.rejected_by_bug
             ? static_cast<double>(t.accepted) / static_cast<double>(t.cases - t.rejected_by_bug)
             : 0.0},
        {"one_mesh_cases", t.one_mesh_cases},
        {"one_mesh_accepted", t.one_mesh_accepted},
        {"sdy_cases", t.sdy_cases},
        {"sdy_accepted", t.sdy_accepted},
        {"seconds", t.seconds}};
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const CampaignFailure& f : failures) {
    nlohmann::json versions = nlohmann::json::array();
    for (const VersionCheck& v : f.versions) {
      versions.push_back({{"venv", v.venv}, {"versions", v.versions}, {"verdict", v.verdict}});
    }
    findings.push_back({{"signature", f.signature},
                        {"partitioner", f.partitioner},
                        {"bug_claim", f.claim},
                        {"known_as", f.known_as},
                        {"root_cause", f.root_cause},
                        {"new", f.known_as.empty()},
                        {"count", f.count},
                        {"first_case", f.first_case},
                        {"case_seed", f.case_seed},
                        {"seconds_to_find", f.seconds_to_find},
                        {"instructions_before", f.instructions_before},
                        {"instructions_after", f.instructions_after},
                        {"devices_before", f.devices_before},
                        {"devices_after", f.devices_after},
                        {"folder", f.path},
                        {"repro_script", f.has_repro_script},
                        {"message", f.message},
                        {"broken_by_pass", f.broken_by},
                        {"other_versions", versions}});
  }
  nlohmann::json reasons = nlohmann::json::object();
  for (const auto& [reason, count] : unsupported_reasons) reasons[reason] = count;
  return {{"schema", "spmdcheck-fuzz-summary/1"},
          {"seed", options.seed},
          {"partitioners", options.partitioners},
          {"max_devices", options.max_devices},
          {"jobs", options.jobs},
          {"inject_bug", target::InjectedBugOf(options.partitioners)},
          {"cases", progress.cases},
          {"elapsed_seconds", progress.elapsed},
          {"cases_per_second",
           progress.elapsed > 0 ? static_cast<double>(progress.cases) / progress.elapsed : 0.0},
          {"holds", progress.holds},
          {"failures", progress.failures},
          {"unsupported", progress.unsupported},
          {"stopped", stopped},
          {"unavailable", unavailable},
          {"per_partitioner", per_partitioner},
          {"times",
           {{"generate", times.generate},
            {"partition", times.partition},
            {"execute", times.execute},
            {"interpreter", times.interpreter},
            {"oracle", times.oracle},
            {"round_trip_judge", times.round_trip},
            {"lint", times.lint},
            {"reduce", times.reduce},
            {"cases", times.cases},
            {"other", times.Other()},
            {"ours_share", times.cases > 0 ? times.Ours() / times.cases : 0.0}}},
          {"pattern_hits", pattern_hits},
          {"findings", findings},
          {"bug_claims_by_cause", CausesJson(failures)},
          {"unsupported_reasons", reasons}};
}

namespace {

// The campaign's shared state and one job's work. Jobs run `RunJob` on their own thread, each
// with its own partitioners (one XLA worker per job).
class Campaign {
 public:
  Campaign(const CampaignOptions& options, std::vector<KnownFinding> known)
      : options_(options), known_(std::move(known)), start_(Clock::now()) {
    gen_.max_devices = options.max_devices;
    // Validated by RunCampaign.
    SetPatternWeights(options.pattern_weights, &gen_).IgnoreError();
    absl::StatusOr<std::vector<std::string>> specs =
        target::SplitPartitionerSpecs(options.partitioners);
    for (const std::string& spec : specs.ok() ? *specs : std::vector<std::string>{}) {
      absl::StatusOr<target::PartitionerCapabilities> can = target::CapabilitiesOfSpec(spec);
      if (can.ok()) gen_.min_devices = std::max(gen_.min_devices, can->min_devices);
    }
    gen_.one_mesh_percent = options.one_mesh_percent >= 0 ? options.one_mesh_percent
                            : target::AnySpecCan(options.partitioners,
                                                 &target::PartitionerCapabilities::prefers_one_mesh)
                                ? 50
                                : 0;
    target_options_ = options.target;
    sdy_percent_ = options.sdy_percent >= 0 ? options.sdy_percent
                   : target::AnySpecCan(options.partitioners,
                                        &target::PartitionerCapabilities::compiles_sdy_programs)
                       ? 50
                       : 0;
  }

  double elapsed() const { return SecondsSince(start_); }
  bool cancelled() const { return options_.cancel != nullptr && options_.cancel->load(); }
  // No new cases: a limit was reached, or the campaign is aborted.
  bool stopping() const { return stop_.load(std::memory_order_relaxed) || aborting(); }
  // Abandon work in hand too (reductions): a signal, a finding that could not be written.
  bool aborting() const { return abort_.load(std::memory_order_relaxed) || cancelled(); }
  void Stop() { stop_ = true; }
  void Abort() {
    abort_ = true;
    stop_ = true;
  }

  void RunJob();
  // A check's seconds into the report's times (under `mu`). `runtime_seconds`: what the
  // partitioner's runtime reported spending in the check (0: it does not report).
  void AddCheckTimes(const CheckOutcome& outcome, double runtime_seconds) {
    report_.times.partition += outcome.self_report.seconds;
    report_.times.oracle += outcome.oracle_seconds;
    report_.times.interpreter += outcome.interpreter_seconds;
    for (const check::JudgeRecord& record : outcome.judges) {
      if (record.judge == "round-trip" && record.ran) report_.times.round_trip += record.seconds;
    }
    // What the runtime reports beyond the compile the check judged: the one-device compile and
    // both executions. Without a report, the executions' wall time less our interpreter's.
    report_.times.execute +=
        runtime_seconds > 0
            ? std::max(0.0, runtime_seconds - outcome.self_report.seconds)
            : std::max(0.0, outcome.execution_seconds - outcome.interpreter_seconds);
  }
  // `--save-modules`: the case's module as `case-<index>.hlo`. A module that cannot be written
  // is said once on stderr; the campaign goes on (the files are for benches, not findings).
  void SaveModule(const HloModule& module, int64_t index) {
    const std::filesystem::path path =
        std::filesystem::path(options_.save_modules_dir) / absl::StrCat("case-", index, ".hlo");
    const absl::Status written = base::WriteFile(path.string(), PrintModule(module));
    if (!written.ok() && !save_failed_.exchange(true)) {
      std::cerr << "spmdcheck fuzz: " << written.message() << "\n";
    }
  }

  std::mutex mu;  // Guards report_, io_status_.
  CampaignReport report_;
  absl::Status io_status_;

 private:
  struct Job {
    std::vector<std::unique_ptr<PartitionerUnderTest>> partitioners;
    // The lint on correct partitionings, on a thread of its own (null: no cost check).
    std::unique_ptr<BackgroundCostCheck> cost_checks;
    // Other jaxlibs' partitioners, made on first use: python + spec -> partitioner.
    std::unique_ptr<check::VersionMatrix> matrix;  // Other jaxlibs, made at the first finding.
  };

  std::string CampaignCommand() const {
    return absl::StrCat(
        "spmdcheck fuzz --seed ", options_.seed, " --max-devices ", options_.max_devices,
        " --partitioner ", options_.partitioners,
        options_.pattern_weights.empty() ? "" : " --pattern-weights " + options_.pattern_weights,
        options_.one_mesh_percent >= 0
            ? absl::StrCat(" --one-mesh-percent ", options_.one_mesh_percent)
            : "");
  }
  std::string ReproduceFlags(const PartitionerUnderTest& partitioner) const {
    return absl::StrCat(target::ReproducePartitionerFlags(partitioner.full_spec()),
                        options_.reproduce_flags);
  }

  // Records a failing case; returns the slot of a new signature to reduce and write, or -1.
  // `module` (the case's module, or null) decides known findings with guarded signatures.
  int64_t RecordFailure(const std::string& spec, const FailureSignature& signature,
                        const std::string& message, int64_t index, uint64_t case_seed,
                        const HloModule* module);
  // Wasteful: among the partitionings of one case that hold, one partitioner's busiest device
  // receives far more than another's. Returns the seconds spent handing findings over.
  double CompareCorrect(Job& job, const std::vector<Correct>& correct, const HloModule& module,
                        int64_t index, uint64_t case_seed);
  // A partitioner (not in this process) that did not finish in time, tried once more alone: a
  // fresh one (its own worker or command, nothing else of ours in it) with twice the timeout,
  // while the budget allows.
  struct HangCheck {
    enum class Result { kNotTried, kHangs, kFinishes } result = Result::kNotTried;
    std::string message;  // What happened, for the finding or the unknown reason.
  };
  HangCheck ConfirmHang(const PartitionerUnderTest& partitioner, const HloModule& module);
  // ConfirmHang for a timeout of a partitioner outside this process; nullopt otherwise.
  std::optional<HangCheck> MaybeConfirmHang(const PartitionerUnderTest& partitioner,
                                            const absl::StatusOr<CheckOutcome>& outcome,
                                            const HloModule& module);
  // Under `mu`: a timeout that finished alone is counted as an unknown (returns false); one that
  // hangs again gets the `.hang` signature, a bug claim; `message` says what trying it alone
  // showed.
  bool TriageHang(const HangCheck& hang, const std::string& spec, PartitionerTally& tally,
                  FailureSignature& signature, std::string& message);
  // Records the lint's finished checks (their seconds, their wasteful findings) and hands new
  // findings over; returns the seconds spent handing over.
  double TakeCostChecks(Job& job, std::vector<CostCheckResult> finished);
  // Reduces a new finding within the time budget, writes its folder and fills its slot.
  void HandOver(Job& job, PartitionerUnderTest& partitioner, int64_t slot, const HloModule& program,
                const FailureSignature& signature, const CheckOptions& check, WastefulKind wasteful,
                PartitionerUnderTest* cheaper, const std::string& proposal = "");

  const CampaignOptions& options_;
  std::vector<KnownFinding> known_;
  Clock::time_point start_;
  ProgramGenOptions gen_;
  int sdy_percent_ = 0;  // Share of sdy-level cases (CampaignOptions::sdy_percent).
  target::TargetOptions target_options_;
  std::atomic<int64_t> next_case_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> save_failed_{false};
  std::atomic<bool> abort_{false};
  std::mutex generator_mu_;
};

Campaign::HangCheck Campaign::ConfirmHang(const PartitionerUnderTest& partitioner,
                                          const HloModule& module) {
  HangCheck check;
  target::TargetOptions alone = target_options_;
  alone.compile_timeout_seconds *= 2;
  alone.command_timeout_seconds *= 2;
  const double timeout = std::max(alone.compile_timeout_seconds, alone.command_timeout_seconds);
  // A fresh XLA worker imports jax first: some seconds on top of the timeout.
  constexpr double kStartSeconds = 15;
  if (options_.seconds > 0 && options_.seconds - elapsed() < timeout + kStartSeconds) {
    check.message = "not tried again alone: the campaign's time budget (--seconds) ran out";
    return check;
  }
  absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> fresh =
      target::MakePartitioner(partitioner.full_spec(), alone);
  if (!fresh.ok()) {
    check.message = absl::StrCat("not tried again alone: ", fresh.status().message());
    return check;
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<target::PartitionOutput> out =
      (*fresh)->Partition(module, module.num_partitions());
  const double seconds = SecondsSince(start);
  if (!out.ok() || out->status == target::PartitionStatus::kUnavailable) {
    check.message =
        absl::StrCat("not tried again alone: ", out.ok() ? out->message : out.status().message());
  } else if (out->status == target::PartitionStatus::kTimeout) {
    check.result = HangCheck::Result::kHangs;
    check.message = absl::StrFormat(
        "did not finish within its timeout in the campaign, nor within %.0f s alone (a fresh %s, "
        "nothing else in it): a hang",
        timeout, partitioner.capabilities().xla_findings ? "XLA worker" : "process");
  } else {
    check.result = HangCheck::Result::kFinishes;
    check.message = absl::StrFormat(
        "timed out in the campaign but finished in %.1f s alone: slowed by load, not a hang",
        seconds);
  }
  return check;
}

std::optional<Campaign::HangCheck> Campaign::MaybeConfirmHang(
    const PartitionerUnderTest& partitioner, const absl::StatusOr<CheckOutcome>& outcome,
    const HloModule& module) {
  if (!outcome.ok() || outcome->status != CheckStatus::kTimeout ||
      partitioner.capabilities().in_process || stopping()) {
    return std::nullopt;
  }
  return ConfirmHang(partitioner, module);
}

bool Campaign::TriageHang(const HangCheck& hang, const std::string& spec, PartitionerTally& tally,
                          FailureSignature& signature, std::string& message) {
  if (hang.result == HangCheck::Result::kFinishes) {
    ++tally.unknown;
    ++report_.progress.unsupported;
    ++report_.unsupported_reasons[absl::StrCat(spec, ": timeout: ", hang.message)];
    return false;
  }
  if (hang.result == HangCheck::Result::kHangs) {
    signature.text = check::SanitizedName(absl::StrCat(check::SignaturePrefix(spec), ".hang"));
    signature.claim = true;
  }
  message = absl::StrCat(FirstLineOf(message), " (", hang.message, ")");
  return true;
}

int64_t Campaign::RecordFailure(const std::string& spec, const FailureSignature& signature,
                                const std::string& message, int64_t index, uint64_t case_seed,
                                const HloModule* module) {
  // A guarded known finding splits a signature: the cases its guard holds for are counted as
  // it, the others stay a finding of their own.
  const KnownFinding* known = FindKnown(known_, signature.text, module);
  const std::string known_as = known != nullptr ? known->name : "";
  auto existing =
      std::find_if(report_.failures.begin(), report_.failures.end(), [&](const CampaignFailure& f) {
        return f.signature == signature.text && f.known_as == known_as;
      });
  if (existing != report_.failures.end()) {
    ++existing->count;
    return -1;
  }
  CampaignFailure failure;
  failure.signature = signature.text;
  failure.partitioner = spec;
  failure.claim = signature.claim;
  failure.first_case = index;
  failure.case_seed = case_seed;
  failure.count = 1;
  failure.seconds_to_find = elapsed();
  failure.message = message;
  failure.known_as = known_as;
  report_.failures.push_back(failure);
  ++report_.progress.findings;
  if (!failure.known_as.empty()) return -1;
  ++report_.progress.new_findings;
  return static_cast<int64_t>(report_.failures.size()) - 1;
}

void Campaign::HandOver(Job& job, PartitionerUnderTest& partitioner, int64_t slot,
                        const HloModule& program, const FailureSignature& signature,
                        const CheckOptions& check, WastefulKind wasteful,
                        PartitionerUnderTest* cheaper, const std::string& proposal) {
  const Clock::time_point started = Clock::now();
  const std::string spec = partitioner.spec();
  // The time budget (--seconds) covers the reductions: a reduction gets what is left of it, less
  // a reserve for writing the finding; a finding the budget leaves unreduced is written as found,
  // for `spmdcheck reduce DIR` to finish later.
  double reduce_seconds = options_.reduce_seconds;
  std::string unreduced = "--reduce-seconds 0";
  if (absl::EndsWith(signature.text, ".hang")) {
    // Every step of a reduction would wait for the timeout.
    reduce_seconds = 0;
    unreduced = "a hang is written as found (each reduction step would wait for the timeout)";
  }
  const double left = options_.seconds > 0 ? options_.seconds - elapsed() : 0;
  if (options_.seconds > 0 && reduce_seconds > 0) {
    const double reserve = std::min(10.0, 0.05 * options_.seconds);
    if (left - reserve < reduce_seconds) {
      reduce_seconds = std::max(0.0, left - reserve);
      if (reduce_seconds < 1) {
        reduce_seconds = 0;
        unreduced = "the campaign's time budget (--seconds) ran out";
      }
    }
  }
  FindingPredicateOptions predicate_options;
  predicate_options.wasteful = wasteful;
  predicate_options.cheaper = cheaper;
  predicate_options.cost_check = options_.cost_check;
  predicate_options.proposal = proposal;
  predicate_options.wasteful_ratio = options_.wasteful_ratio;
  predicate_options.wasteful_min_bytes = options_.wasteful_min_bytes;
  predicate_options.cancelled = [this] { return aborting(); };
  {
    std::lock_guard<std::mutex> lock(mu);
    predicate_options.failed_check =
        check::FailedCheckOf(report_.failures[static_cast<size_t>(slot)].message);
  }
  predicate_options.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(reduce_seconds));
  absl::StatusOr<ReduceResult> reduced = ReduceFinding(
      program, FindingPredicate(partitioner, signature.text, check, predicate_options),
      reduce_seconds, unreduced);
  // A miscompile seen at an op that only carries the wrong value (a concatenate of a wrong
  // scatter): the root moved down to the op that makes it, whose signature says the root cause.
  std::optional<RootCause> cause;
  if (reduced.ok() && IsMiscompileSignature(signature.text) && !aborting()) {
    double seconds = kRootCauseSeconds;
    if (options_.seconds > 0) {
      seconds =
          std::min(seconds, options_.seconds - elapsed() - std::min(10.0, 0.05 * options_.seconds));
    }
    if (seconds >= 1) {
      absl::StatusOr<std::optional<RootCause>> found = FindRootCause(
          partitioner, *reduced->module, signature.text, check, predicate_options,
          Clock::now() +
              std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
      if (found.ok() && found->has_value()) cause = std::move(**found);
    }
  }
  const HloModule& repro = cause.has_value() ? *cause->module
                           : reduced.ok()    ? *reduced->module
                                             : program;

  FindingRecord record;
  record.signature = signature.text;
  record.partitioner = spec;
  record.claim = signature.claim;
  record.campaign = CampaignCommand();
  {
    std::lock_guard<std::mutex> lock(mu);
    const CampaignFailure& f = report_.failures[static_cast<size_t>(slot)];
    record.first_case = f.first_case;
    record.case_seed = f.case_seed;
    record.seconds_to_find = f.seconds_to_find;
    record.message = f.message;
  }
  record.reduction =
      reduced.ok()
          ? absl::StrCat("reduced: ", reduced->report.ToString())
          : absl::StrCat("not reduced: ", reduced.status().message(),
                         program.jax_source().empty() ? " (spmdcheck reduce DIR reduces it)" : "");
  if (cause.has_value()) {
    record.root_cause = cause->signature;
    absl::StrAppend(&record.reduction, RootCauseNote(*cause));
  }
  FindingWriteOptions write;
  write.out_dir = options_.out_dir;
  write.wasteful = wasteful;
  write.bisect_passes = options_.bisect_passes;
  write.reproduce_flags = ReproduceFlags(partitioner);
  // The other jaxlibs start a worker each: tried while the budget allows (a tenth of it left).
  if (options_.seconds > 0 && options_.seconds - elapsed() < 0.1 * options_.seconds) {
    write.versions_note =
        "not tried: the campaign's time budget ran out (spmdcheck reduce DIR tries them)";
  } else {
    if (job.matrix == nullptr) {
      job.matrix =
          std::make_unique<check::VersionMatrix>(options_.other_xla_pythons, options_.target);
    }
    write.matrix = job.matrix.get();
  }
  absl::StatusOr<std::string> written =
      WriteFinding(partitioner, repro, program.jax_source(), check, write, record);

  std::lock_guard<std::mutex> lock(mu);
  report_.times.reduce += SecondsSince(started);
  if (!written.ok()) {
    // A finding that is not on disk is lost: stop and report it.
    if (io_status_.ok()) {
      io_status_ = absl::UnavailableError(absl::StrCat(
          "cannot write the repro for ", signature.text, ": ", written.status().message()));
    }
    Abort();
    return;
  }
  CampaignFailure& f = report_.failures[static_cast<size_t>(slot)];
  f.path = *written;
  if (cause.has_value() && f.known_as.empty()) {
    f.root_cause = cause->signature;
    if (const KnownFinding* k = FindKnown(known_, cause->signature, cause->module.get())) {
      f.known_as = k->name;
      --report_.progress.new_findings;
    }
  }
  f.message = record.message;
  f.versions = record.versions;
  f.broken_by = record.broken_by;
  f.has_repro_script = !record.reproduce.empty() && record.repro_note.empty();
  if (reduced.ok()) {
    f.instructions_before = reduced->report.entry_instructions_before;
    f.instructions_after = reduced->report.entry_instructions_after;
    f.devices_before = reduced->report.devices_before;
    f.devices_after = reduced->report.devices_after;
  }
}

double Campaign::CompareCorrect(Job& job, const std::vector<Correct>& correct,
                                const HloModule& module, int64_t index, uint64_t case_seed) {
  double handed_over = 0;
  // Wasteful: one partitioner's busiest device receives far more than another's, both correct.
  for (const Correct& more : correct) {
    for (const Correct& less : correct) {
      if (more.partitioner == less.partitioner || stopping()) continue;
      if (more.max_recv_bytes < options_.wasteful_min_bytes + less.max_recv_bytes ||
          static_cast<double>(more.max_recv_bytes) <
              options_.wasteful_ratio * static_cast<double>(less.max_recv_bytes)) {
        continue;
      }
      FailureSignature signature;
      signature.text =
          check::SanitizedName(absl::StrCat(check::SignaturePrefix(more.partitioner->spec()),
                                            ".wasteful.bytes-vs-", less.partitioner->spec()));
      signature.claim = false;
      const std::string message = absl::StrFormat(
          "%s's busiest device receives %d bytes, %s's %d (%.1fx)", more.partitioner->spec(),
          more.max_recv_bytes, less.partitioner->spec(), less.max_recv_bytes,
          less.max_recv_bytes > 0
              ? static_cast<double>(more.max_recv_bytes) / static_cast<double>(less.max_recv_bytes)
              : 0.0);
      int64_t slot = -1;
      {
        std::lock_guard<std::mutex> lock(mu);
        slot =
            RecordFailure(more.partitioner->spec(), signature, message, index, case_seed, nullptr);
      }
      if (slot >= 0) {
        const Clock::time_point hand_over_start = Clock::now();
        HandOver(job, *more.partitioner, slot, module, signature, CaseCheckOptions(case_seed),
                 WastefulKind::kBytes, less.partitioner);
        handed_over += SecondsSince(hand_over_start);
      }
    }
  }
  return handed_over;
}

double Campaign::TakeCostChecks(Job& job, std::vector<CostCheckResult> finished) {
  double handed_over = 0;
  for (CostCheckResult& result : finished) {
    const std::string spec = result.task.partitioner->spec();
    int64_t slot = -1;
    FailureSignature signature;
    {
      std::lock_guard<std::mutex> lock(mu);
      report_.times.lint += result.seconds;
      if (result.cheaper.empty()) continue;
      signature.text = check::SanitizedName(
          absl::StrCat(check::SignaturePrefix(spec), ".wasteful.", result.cheaper.front().pattern));
      signature.claim = false;
      slot = RecordFailure(spec, signature, result.cheaper.front().message, result.task.case_index,
                           result.task.case_seed, nullptr);
    }
    if (slot < 0) continue;
    const Clock::time_point hand_over_start = Clock::now();
    // The reduced case must keep the proposal, not only the pattern.
    HandOver(job, *result.task.partitioner, slot, *result.task.program, signature,
             CaseCheckOptions(result.task.case_seed), WastefulKind::kLint, nullptr,
             result.cheaper.front().proposal);
    handed_over += SecondsSince(hand_over_start);
  }
  return handed_over;
}

void Campaign::RunJob() {
  Job job;
  // One set of partitioners per job: each XLA worker process serves one job.
  absl::StatusOr<std::vector<std::unique_ptr<PartitionerUnderTest>>> made =
      target::MakePartitioners(options_.partitioners, target_options_);
  if (!made.ok()) return;
  job.partitioners = *std::move(made);
  if (options_.cost_check &&
      std::any_of(job.partitioners.begin(), job.partitioners.end(),
                  [](const auto& p) { return !p->capabilities().lint_planner; })) {
    job.cost_checks =
        std::make_unique<BackgroundCostCheck>(options_.cost_check, kPendingCostChecks);
  }
  // A case is not started when it would likely end past the budget (T + 5%): its expected time
  // is a moving average of this job's cases (the first, which starts the XLA workers, left out).
  double case_estimate = 0;
  int64_t cases_done = 0;
  while (!stopping()) {
    if (options_.seconds > 0 &&
        (elapsed() >= options_.seconds || elapsed() + case_estimate > 1.05 * options_.seconds)) {
      break;
    }
    const int64_t k = next_case_.fetch_add(1);
    if (options_.cases > 0 && k >= options_.cases) break;
    const int64_t index =
        options_.first_case + k * std::max<int64_t>(1, options_.shard_count) + options_.shard_index;
    const uint64_t case_seed = CaseSeed(options_.seed, index);
    // An sdy-level case (a program as jax lowers it for Shardy) or an HLO-level one.
    const bool sdy_case =
        sdy_percent_ > 0 && (case_seed >> 17) % 100 < static_cast<uint64_t>(sdy_percent_);
    absl::StatusOr<GeneratedProgram> program = absl::InternalError("not generated");
    std::unique_ptr<HloModule> imported;  // The sdy-level case's module.
    const Clock::time_point generate_start = Clock::now();
    SdyProgram sdy;
    if (sdy_case) {
      SdyProgramOptions sdy_options;
      sdy_options.max_devices = std::max<int64_t>(2, options_.max_devices);
      sdy = GenerateSdyProgram(case_seed, sdy_options);
    } else {
      // The generator drives RapidCheck generators, whose generation context is process-wide:
      // one program at a time.
      std::lock_guard<std::mutex> lock(generator_mu_);
      program = ProgramFromBytes(CaseBytes(case_seed, gen_), gen_);
    }
    std::string import_error;
    if (sdy_case) imported = ImportSdyProgram(job.partitioners, sdy.text, case_seed, import_error);
    const double generate_seconds = SecondsSince(generate_start);
    {
      std::lock_guard<std::mutex> lock(mu);
      ++report_.progress.cases;
      report_.times.generate += generate_seconds;
      if (sdy_case) {
        ++report_.sdy_cases;
        for (const std::string& construct : sdy.constructs) {
          ++report_.pattern_hits[absl::StrCat("sdy:", construct)];
        }
        if (imported == nullptr) {
          ++report_.progress.unsupported;
          ++report_.unsupported_reasons[absl::StrCat(
              "sdy program not read: ",
              import_error.empty() ? "no partitioner reads StableHLO" : import_error)];
          continue;
        }
      } else if (!program.ok() || program->module == nullptr) {
        ++report_.progress.unsupported;
        ++report_.unsupported_reasons["generator error"];
        continue;
      } else {
        for (const std::string& pattern : program->patterns) ++report_.pattern_hits[pattern];
      }
    }
    // Shared with the lint's thread, which may still look at it after this case.
    const std::shared_ptr<const HloModule> case_program =
        sdy_case ? std::shared_ptr<const HloModule>(std::move(imported))
                 : std::shared_ptr<const HloModule>(std::move(program->module));
    const HloModule& module = *case_program;
    if (!sdy_case && !options_.save_modules_dir.empty()) SaveModule(module, index);
    const bool one_mesh = !sdy_case && program->one_mesh;
    std::vector<Correct> correct;
    double handed_over = 0;  // Seconds of this case spent reducing and writing findings.
    for (const auto& partitioner : job.partitioners) {
      if (stopping()) break;
      const std::string spec = partitioner->spec();
      // An sdy-level program goes only to partitioners that compile it as jax.jit does.
      if (sdy_case && !partitioner->UsesJaxSource(module)) continue;
      CheckOptions check = CaseCheckOptions(case_seed);
      check.round_trip_in_memory_output = false;  // Verified in memory; see CheckOptions.
      const double runtime_before = partitioner->RuntimeSeconds();
      absl::StatusOr<CheckOutcome> outcome = CheckPartitioning(module, *partitioner, check);
      // XLA's own seconds in this check (compiles and executions, timed inside jaxlib).
      const double runtime_seconds = partitioner->RuntimeSeconds() - runtime_before;
      // A timeout is a hang only when it happens again alone (then a finding like a crash).
      const std::optional<HangCheck> hang = MaybeConfirmHang(*partitioner, outcome, module);
      std::unique_lock<std::mutex> lock(mu);
      PartitionerTally& tally = report_.partitioners[spec];
      ++tally.cases;
      ++report_.progress.partitionings;
      if (!outcome.ok()) {
        report_.times.partition += runtime_seconds;  // XLA's time in a check that went wrong.
        ++tally.unknown;
        ++report_.progress.unsupported;
        ++report_.unsupported_reasons[FirstLineOf(
            absl::StrCat(spec, ": ", outcome.status().message()))];
        continue;
      }
      tally.seconds += outcome->self_report.seconds;
      AddCheckTimes(*outcome, runtime_seconds);
      if (outcome->finding == check::Finding::kUnavailable) {
        // Thousands of identical unknowns help nobody: stop and say why.
        if (report_.unavailable.empty()) report_.unavailable = outcome->message;
        Stop();
        break;
      }
      if (outcome->partitioned != nullptr) {
        ++tally.accepted;
        ++report_.progress.accepted;
      }
      if (one_mesh) {
        ++tally.one_mesh_cases;
        if (outcome->partitioned != nullptr) ++tally.one_mesh_accepted;
      }
      if (sdy_case) {
        ++tally.sdy_cases;
        if (outcome->partitioned != nullptr) ++tally.sdy_accepted;
      }
      if (outcome->status == CheckStatus::kHolds) {
        ++tally.holds;
        ++report_.progress.holds;
        if (outcome->partitioned == nullptr) continue;
        correct.push_back({partitioner.get(), MaxRecvBytes(*outcome->partitioned)});
        if (job.cost_checks == nullptr || partitioner->capabilities().lint_planner) continue;
        lock.unlock();
        // The lint on XLA's correct output, on the lint's thread while the next case compiles:
        // a proved cheaper chain is a wasteful finding (taken back between cases).
        CostCheckTask task;
        task.partitioner = partitioner.get();
        task.case_index = index;
        task.case_seed = case_seed;
        task.program = case_program;
        task.partitioned = std::move(outcome->partitioned);
        task.partitioned_text = outcome->partitioned_text.empty()
                                    ? PrintModule(*task.partitioned)
                                    : std::move(outcome->partitioned_text);
        task.judged = std::move(outcome->judged_global);
        job.cost_checks->Submit(std::move(task));
        continue;
      }
      FailureSignature signature = check::SignatureOf(spec, *outcome, module);
      std::string message = outcome->message;
      if (hang.has_value() && !TriageHang(*hang, spec, tally, signature, message)) continue;
      if (outcome->partitioned == nullptr &&
          (outcome->status == CheckStatus::kCrash || outcome->status == CheckStatus::kRejected ||
           outcome->status == CheckStatus::kTimeout)) {
        ++tally.rejected_by_bug;
      }
      if (signature.text.empty()) {
        ++tally.unknown;
        ++report_.progress.unsupported;
        // Prefixed like the partitioner's signatures (ours have none).
        const std::string prefix = check::SignaturePrefix(spec);
        ++report_.unsupported_reasons[FirstLineOf(
            prefix.empty() ? outcome->message : absl::StrCat(spec, ": ", outcome->message))];
        continue;
      }
      if (signature.claim) {
        ++tally.failures;
        ++report_.progress.failures;
      } else {
        ++tally.investigate;
        ++report_.progress.unsupported;
      }
      const int64_t slot = RecordFailure(spec, signature, message, index, case_seed, &module);
      lock.unlock();
      if (slot >= 0) {
        const Clock::time_point hand_over_start = Clock::now();
        HandOver(job, *partitioner, slot, module, signature, check, WastefulKind::kNone, nullptr);
        handed_over += SecondsSince(hand_over_start);
      }
    }
    handed_over += CompareCorrect(job, correct, module, index, case_seed);
    if (job.cost_checks != nullptr) {
      handed_over += TakeCostChecks(job, job.cost_checks->TakeFinished());
    }
    const double case_seconds = std::max(0.0, SecondsSince(generate_start) - handed_over);
    if (++cases_done > 1) {
      case_estimate = cases_done == 2 ? case_seconds : 0.7 * case_estimate + 0.3 * case_seconds;
    }
    std::lock_guard<std::mutex> lock(mu);
    report_.times.cases += case_seconds;
  }
  // The lint's last checks (at most kPendingCostChecks): their findings count as the cases'.
  if (job.cost_checks != nullptr) {
    TakeCostChecks(job, job.cost_checks->Finish([this] { return aborting(); }));
  }
}

}  // namespace

absl::StatusOr<CampaignReport> RunCampaign(
    const CampaignOptions& options, const std::function<void(const CampaignProgress&)>& progress) {
  if (options.shard_count < 1 || options.shard_index < 0 ||
      options.shard_index >= options.shard_count || options.first_case < 0) {
    return absl::InvalidArgumentError("--shard I/N needs 0 <= I < N, --first-case >= 0");
  }
  if (options.seconds <= 0 && options.cases <= 0) {
    return absl::InvalidArgumentError("give --seconds or --cases");
  }
  {
    ProgramGenOptions gen;
    absl::Status weights = SetPatternWeights(options.pattern_weights, &gen);
    if (!weights.ok()) return weights;
  }
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create ", options.out_dir, ": ", ec.message()));
  }
  if (!options.save_modules_dir.empty()) {
    std::filesystem::create_directories(options.save_modules_dir, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot create ", options.save_modules_dir, ": ", ec.message()));
    }
  }
  std::vector<KnownFinding> known;
  if (!options.known_findings.empty()) {
    absl::StatusOr<std::vector<KnownFinding>> loaded = LoadKnownFindings(options.known_findings);
    if (!loaded.ok()) return loaded.status();
    known = *std::move(loaded);
  }
  {
    // Every spec must make a partitioner before any job starts.
    absl::StatusOr<std::vector<std::unique_ptr<PartitionerUnderTest>>> probe =
        target::MakePartitioners(options.partitioners, options.target);
    if (!probe.ok()) return probe.status();
  }
  Campaign campaign(options, std::move(known));
  std::condition_variable workers_done;
  int64_t running = 0;  // Guarded by campaign.mu.
  const int64_t jobs = std::max<int64_t>(1, options.jobs);
  std::vector<std::thread> threads;
  running = jobs;
  for (int64_t j = 0; j < jobs; ++j) {
    threads.emplace_back([&] {
      campaign.RunJob();
      std::lock_guard<std::mutex> lock(campaign.mu);
      --running;
      workers_done.notify_all();
    });
  }
  // The calling thread reports progress while the workers run, and tells them to stop (a limit
  // reached, `cancel` set) before waiting for them.
  {
    std::unique_lock<std::mutex> lock(campaign.mu);
    while (running > 0) {
      workers_done.wait_for(lock, std::chrono::milliseconds(100));
      if (campaign.cancelled() || (options.seconds > 0 && campaign.elapsed() >= options.seconds)) {
        campaign.Stop();
      }
      campaign.report_.progress.elapsed = campaign.elapsed();
      if (progress && running > 0) progress(campaign.report_.progress);
    }
  }
  campaign.Stop();
  for (std::thread& t : threads) t.join();
  CampaignReport report = std::move(campaign.report_);
  report.progress.elapsed = campaign.elapsed();
  const bool limit_reached = (options.cases > 0 && report.progress.cases >= options.cases) ||
                             (options.seconds > 0 && report.progress.elapsed >= options.seconds);
  if (campaign.cancelled() && !limit_reached) report.stopped = true;
  if (!campaign.io_status_.ok()) return campaign.io_status_;
  const std::string summary =
      options.summary_path.empty()
          ? (std::filesystem::path(options.out_dir) / "summary.json").string()
          : options.summary_path;
  const absl::Status written = base::WriteFile(summary, report.ToJson(options).dump(2) + "\n");
  if (!written.ok()) return base::WithContext(written, "cannot write the summary");
  return report;
}

}  // namespace spmdcheck::fuzz
