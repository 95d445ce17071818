// `spmdcheck check FILE [--partitioner SPEC[,SPEC]] [--num-partitions N] [--trials K] [--seed S]
// [--stats] [--compare PART] [--no-shrink] [--no-widen] [--no-execute] [--dump DIR]`: partition
// with the partitioner under test, then judge the result (see docs/check.md).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/cost_model.h"
#include "analysis/partition_stats.h"
#include "base/file.h"
#include "check/check_pipeline.h"
#include "check/pass_bisection.h"
#include "check/signature.h"
#include "check/version_matrix.h"
#include "fuzz/findings.h"
#include "ir/data_dir.h"
#include "ir/hlo_printer.h"
#include "oracle/equivalence.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "tools/partitioner_flags.h"
#include "viz/report_pages.h"

namespace spmdcheck::cli {

void PrintPartitionStats(const analysis::PartitionStats& stats, const HloModule& partitioned,
                         std::ostream& out);

namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck check FILE|DIR... [--partitioner SPEC[,SPEC...]] [--num-partitions N] [--trials K]
                       [--seed S] [--stats] [--compare PARTITIONED] [--no-shrink] [--no-widen]
                       [--no-execute] [--dump DIR] [--passes] [--inject-bug NAME] [--xla-venv DIR]
)";

constexpr char kDescription[] =
    R"(Partitions FILE with the partitioner under test and checks that the partitioned program computes
FILE's result on every device (random inputs, padding poisoned). For XLA's partitioners three
checks run: XLA's module after spmd-partitioning against the module XLA received, on our oracle;
XLA's sharded executable against XLA's single-device run of the same program; and our
interpreter against that single-device run. A failure is claimed only when XLA's own execution
confirms it; what only our oracle sees is reported as oracle-only (unknown). With several
files or a directory (its *.hlo): one line per module and partitioner, then a summary.)";

constexpr char kFooter[] =
    R"(Exit codes: 0 holds, 1 fails (a counterexample, a crash, or a finding such as
xla-rejects-valid-module), 2 bad input, 3 unknown (unsupported, a limit, oracle-only,
oracle-disagrees, XLA unavailable or timed out; the message names it).)";

// The flags as given.
struct CheckFlags {
  std::vector<std::string> paths;
  int64_t partitions = 0, trials = 2;
  uint64_t seed = 1;
  std::optional<std::string> compare, dump, html;
  std::string format = "text";
  bool stats = false, no_shrink = false, no_widen = false, no_execute = false, passes = false,
       lint = false, prove = false;
  PartitionerFlags partitioner;
};

void AddCheckFlags(CLI::App& app, CheckFlags& flags) {
  app.add_option("FILE|DIR", flags.paths, "modules, or directories of *.hlo files")->required();
  app.add_option("--num-partitions", flags.partitions,
                 "partition count (default: the module's num_partitions)")
      ->type_name("N")
      ->transform(DecimalInt64());
  app.add_option("--trials", flags.trials, "random trials (default 2)")
      ->type_name("K")
      ->transform(DecimalInt64());
  app.add_option("--seed", flags.seed, "seed of the inputs (default 1)")
      ->type_name("S")
      ->transform(DecimalUint64());
  app.add_flag("--stats", flags.stats,
               "the collective cost of each partitioning (and, for XLA, of ours)");
  AddOptional(app, "--compare", flags.compare,
              "also print the collective cost of another partitioned module")
      ->type_name("PARTITIONED")
      ->check(InputFile());
  app.add_flag("--no-shrink", flags.no_shrink,
               "do not shrink arrays over the oracle's budget (then: unknown)");
  app.add_flag("--no-widen", flags.no_widen, "keep bf16/f16/f8 arithmetic in the oracle");
  app.add_flag("--no-execute", flags.no_execute,
               "XLA: do not run XLA's executables (a fail is then unconfirmed)");
  AddOptional(app, "--dump", flags.dump, "write what each partitioner received and produced to DIR")
      ->type_name("DIR");
  app.add_flag("--passes", flags.passes,
               "XLA: compile again with every pass dumped and run the oracle on each\n"
               "dump after spmd-partitioning (which pass broke it; docs/check.md)");
  app.add_flag("--lint", flags.lint,
               "also run the collective lint on a correct partitioning: a proved\n"
               "cheaper chain is reported (a cost, never a miscompile)");
  app.add_flag("--prove", flags.prove,
               "also prove every collective of the partitioned module consistent\n"
               "with its operand's and result's shardings (Z3; refuted: unknown)");
  app.add_option("--format", flags.format,
                 "json: one object per partitioner (docs/check.md), nothing else")
      ->type_name("text|json");
  AddOptional(app, "--html", flags.html,
              "also write a page: verdict, wrong devices, collective chain, costs")
      ->type_name("FILE");
  AddPartitionerFlags(app, flags.partitioner);
}

std::string CostLine(const HloModule& module, int64_t partitions) {
  analysis::ModuleCost cost = analysis::CostOfModule(module, partitions);
  return absl::StrCat("collectives: ", cost.total.collectives, " (", cost.total.collective_permutes,
                      " collective-permute), max bytes received per device: ",
                      cost.total.max_recv_bytes, ", sent: ", cost.total.max_send_bytes);
}

std::string ShellWord(const std::string& word) {
  if (!word.empty() && word.find_first_of(" \t'\"\\$`;&|<>()*?!#~") == std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

void WriteDump(const std::string& dir, const std::string& spec, const std::string& what,
               const std::string& text, std::ostream& out) {
  if (text.empty()) return;
  std::string safe;
  for (char c : spec) safe += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  const std::string path = absl::StrCat(dir, "/", safe.substr(0, 40), ".", what, ".hlo");
  const absl::Status written = base::WriteFile(path, text);
  out << "dumped: " << path << (written.ok() ? "" : absl::StrCat(" (", written.message(), ")"))
      << "\n";
}

// Prints one partitioner's verdict; returns its exit code.
// The judges a flag switches on (--lint, --prove): one line each, and the lint's chains.
void PrintOptionalJudges(const check::CheckOutcome& o, std::ostream& out) {
  for (const check::JudgeRecord& record : o.judges) {
    if (record.judge != "lint" && record.judge != "smt-proofs") continue;
    if (record.judge == "lint" && !o.cheaper_chains.empty()) {
      out << "lint: fails: " << o.cheaper_chains.size()
          << " cheaper chain(s) proved (a cost; the result holds):\n";
    } else {
      out << record.judge << ": " << VerdictName(record.verdict)
          << (record.detail.empty() ? "" : ": ") << record.detail << "\n";
    }
    if (record.judge != "lint") continue;
    for (const check::CheaperChain& chain : o.cheaper_chains) {
      out << "  " << chain.pattern << ": " << chain.message << "\n";
    }
  }
}

int Report(const HloModule& global, const check::CheckOutcome& o, bool in_process,
           const std::string& reproduce, std::ostream& out, std::ostream& err) {
  if (o.finding == check::Finding::kUnavailable) {
    err << "spmdcheck check: unknown: " << o.message << "\n";
  }
  // A partitioner in this process: its line would only add a timing to the familiar output.
  if (!o.self_report.name.empty() && !in_process) {
    out << "partitioner: " << o.self_report.name;
    if (!o.self_report.version.empty()) out << " (" << o.self_report.version << ")";
    if (o.self_report.seconds > 0) {
      out << ", " << absl::StrFormat("%.2f", o.self_report.seconds) << " s";
    }
    out << "\n";
  }
  for (const std::string& note : o.self_report.notes) out << "note: " << note << "\n";
  if (!o.shrink_note.empty()) out << "shrunk: " << o.shrink_note << "\n";
  for (const std::string& change : o.received_changes) {
    out << "received: XLA's HLO -> StableHLO -> HLO round trip changed the module: " << change
        << "\n";
  }
  for (const std::string& note : o.notes) out << "note: " << note << "\n";
  int code = kExitUnknown;
  switch (o.status) {
    case check::CheckStatus::kHolds:
    case check::CheckStatus::kFails:
      if (o.oracle_ran) {
        std::string report = oracle::FormatEquivReport(o.report);
        if (o.finding == check::Finding::kConfirmedByXla) {
          // The oracle's own lines follow; the verdict line states who confirmed it.
          out << "verdict: fails (confirmed by XLA's own execution)\nreason: " << o.message
              << "\noracle: ";
        } else if (o.finding == check::Finding::kSingleDeviceSuspect) {
          out << "verdict: fails (XLA's two runs disagree; its single-device run is the suspect, "
                 "not the partitioner)\nreason: "
              << o.message << "\noracle: ";
        }
        out << report;
        const oracle::Divergence* cause = check::CauseDivergence(o, global);
        if (o.finding == check::Finding::kConfirmedByXla && o.report.first_divergence.has_value() &&
            cause != &*o.report.first_divergence) {
          out << "divergence in the output XLA found wrong: "
              << (cause != nullptr ? oracle::FormatDivergence(*cause) : "none") << "\n";
        }
      } else {
        out << "verdict: " << check::CheckStatusName(o.status) << "\nreason: " << o.message << "\n";
      }
      code = o.status == check::CheckStatus::kHolds ? kExitHolds : kExitFails;
      break;
    case check::CheckStatus::kUnsupported:
    case check::CheckStatus::kTimeout:
      out << "verdict: unknown\nreason: "
          << (o.status == check::CheckStatus::kTimeout ? "timeout: " : "") << o.message << "\n";
      if (o.oracle_ran && o.finding != check::Finding::kNone) {
        out << "oracle: " << oracle::FormatEquivReport(o.report);
      }
      code = kExitUnknown;
      break;
    case check::CheckStatus::kCrash:
      out << "verdict: fails\nreason: crash: " << o.message << "\n";
      code = kExitFails;
      break;
    case check::CheckStatus::kRejected:
      out << "verdict: fails\nfinding: xla-rejects-valid-module (our verifier accepts it): "
          << o.message << "\n";
      code = kExitFails;
      break;
  }
  if (o.xla_end_to_end.has_value()) {
    const check::ExecutionCheck& e = *o.xla_end_to_end;
    out << "xla end to end: " << VerdictName(e.verdict);
    if (e.verdict == Verdict::kHolds) {
      out << " (sharded executable = " << e.reference << " on every device, " << e.trials_run
          << " trial(s))";
    } else if (!e.detail.empty()) {
      out << ": " << e.detail;
    }
    out << "\n";
  }
  if (o.interpreter_vs_xla.has_value()) {
    const check::ExecutionCheck& e = *o.interpreter_vs_xla;
    out << "interpreter vs xla: " << VerdictName(e.verdict);
    if (e.verdict != Verdict::kHolds && !e.detail.empty()) out << ": " << e.detail;
    out << "\n";
  }
  for (const std::string& warning : o.self_report.warnings) {
    out << "partitioner said: " << warning << "\n";
  }
  const check::FailureSignature signature = check::SignatureOf(o.partitioner_spec, o, global);
  if (!signature.text.empty()) {
    out << "signature: " << signature.text
        << (signature.claim ? "" : " (to investigate: not a bug claim)") << "\n";
    // The known XLA findings with this signature (corpus/xla-findings/known.json).
    absl::StatusOr<std::vector<fuzz::KnownFinding>> known =
        fuzz::LoadKnownFindings(SpmdcheckDataDir() + "/corpus/xla-findings/known.json");
    std::vector<std::string> matches;
    if (known.ok()) {
      for (const fuzz::KnownFinding& k : *known) {
        if (k.Matches(signature.text, &global)) {
          matches.push_back(absl::StrCat(k.name, " (", k.status, ", ", k.upstream, ")"));
        }
      }
    }
    if (!matches.empty()) {
      out << "known finding" << (matches.size() > 1 ? "s" : "") << ": "
          << absl::StrJoin(matches, "; ") << " (corpus/xla-findings"
          << (matches.size() > 1 ? "; one signature, several bugs: compare with their READMEs" : "")
          << ")\n";
    }
  }
  out << "reproduce: " << reproduce << "\n";
  return code;
}

absl::StatusOr<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
        if (entry.path().extension() == ".hlo") found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(path, error)) {
      files.push_back(path);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(path, ": no such file or directory"));
    }
  }
  return files;
}

// One line per module and partitioner, then per partitioner the counts by outcome (the unknown
// reasons grouped by their first words), time in the partitioner and in our checks.
int CheckMany(const std::vector<std::string>& files,
              std::vector<std::unique_ptr<target::PartitionerUnderTest>>& partitioners,
              const check::CheckOptions& options, std::ostream& out, std::ostream& err) {
  struct Tally {
    std::map<std::string, int64_t> outcomes;
    double partitioner_seconds = 0, oracle_seconds = 0, execution_seconds = 0;
    int64_t modules = 0;
  };
  std::map<std::string, Tally> tallies;
  int worst = kExitHolds;
  int64_t unreadable = 0;
  auto reason_key = [](const std::string& message) {
    std::string key = message.substr(0, message.find_first_of(":(\n"));
    if (key.size() > 60) key = key.substr(0, 60);
    return key;
  };
  for (const std::string& file : files) {
    std::ostringstream load_errors;
    absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(file, load_errors);
    if (!module.ok()) {
      ++unreadable;
      std::string first(module.status().message());
      out << file << ": bad input: " << first.substr(0, first.find('\n')) << "\n";
      continue;
    }
    for (const auto& partitioner : partitioners) {
      const std::string spec = partitioner->spec();
      Tally& tally = tallies[spec];
      ++tally.modules;
      absl::StatusOr<check::CheckOutcome> outcome =
          check::CheckPartitioning(**module, *partitioner, options);
      std::string line, key;
      if (!outcome.ok()) {
        key = "bad input";
        line = std::string(outcome.status().message());
      } else {
        tally.partitioner_seconds += outcome->self_report.seconds;
        tally.oracle_seconds += outcome->oracle_seconds;
        tally.execution_seconds += outcome->execution_seconds;
        const std::string finding = check::FindingName(outcome->finding);
        switch (outcome->status) {
          case check::CheckStatus::kHolds:
            key = "holds";
            break;
          case check::CheckStatus::kFails:
            key = finding.empty() ? "fails" : absl::StrCat("fails (", finding, ")");
            worst = kExitFails;
            break;
          case check::CheckStatus::kCrash:
            key = "crash";
            worst = kExitFails;
            break;
          case check::CheckStatus::kRejected:
            key = "rejected (xla-rejects-valid-module)";
            worst = kExitFails;
            break;
          case check::CheckStatus::kTimeout:
            key = "unknown: timeout";
            break;
          case check::CheckStatus::kUnsupported:
            key =
                absl::StrCat("unknown: ", finding.empty() ? reason_key(outcome->message) : finding);
            break;
        }
        if (worst == kExitHolds && outcome->status != check::CheckStatus::kHolds) {
          worst = kExitUnknown;
        }
        line = outcome->message;
      }
      ++tally.outcomes[key];
      // The line: the verdict word (and finding) once, then the message.
      std::string head = key;
      if (absl::StartsWith(key, "unknown: ")) head = "unknown";
      out << file << " [" << spec << "]: " << head;
      if (!line.empty() && key != "holds") {
        std::string first = line.substr(0, line.find('\n'));
        if (first.size() > 300) first = first.substr(0, 300) + "...";
        out << ": " << first;
      }
      out << "\n";
    }
  }
  out << "== summary: " << files.size() << " module(s)";
  if (unreadable > 0) out << ", " << unreadable << " we cannot read";
  out << "\n";
  for (const auto& [spec, tally] : tallies) {
    out << spec << ": " << tally.modules << " checked";
    for (const auto& [key, count] : tally.outcomes) out << "; " << key << " " << count;
    out << "\n";
    out << absl::StrFormat(
        "  time: partitioner %.1f s, oracle %.1f s, executions %.1f s (oracle / partitioner = "
        "%.2f)\n",
        tally.partitioner_seconds, tally.oracle_seconds, tally.execution_seconds,
        tally.partitioner_seconds > 0 ? tally.oracle_seconds / tally.partitioner_seconds : 0.0);
  }
  (void)err;
  return worst;
}

}  // namespace

int RunCheck(const std::vector<std::string>& argv, std::ostream& real_out, std::ostream& err) {
  Command command("check", kUsage, kDescription, kFooter);
  CheckFlags flags;
  AddCheckFlags(command.app(), flags);
  if (std::optional<int> done = command.Parse(argv, real_out, err)) return *done;
  // --format json: the text report goes nowhere, one JSON document is printed at the end.
  const std::string& format = flags.format;
  if (format != "text" && format != "json") {
    return BadInput(err, "check", "--format must be text or json");
  }
  std::ostringstream text_discarded;
  std::ostream& out = format == "json" ? text_discarded : real_out;
  nlohmann::json json_results = nlohmann::json::array();
  std::optional<viz::CheckPage> page;
  if (flags.html.has_value()) page.emplace(flags.paths[0]);
  if (flags.partitions < 0 || flags.partitions > 65536 || flags.trials < 1) {
    return BadInput(err, "check", "--num-partitions must be in [1, 65536] and --trials >= 1");
  }
  absl::StatusOr<PartitionerChoice> choice = ChoosePartitioner(flags.partitioner);
  if (!choice.ok()) return BadInput(err, "check", choice.status().message());
  absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> partitioners =
      target::MakePartitioners(choice->specs, choice->options);
  if (!partitioners.ok()) return BadInput(err, "check", partitioners.status().message());
  check::CheckOptions options;
  options.num_partitions = flags.partitions;
  options.trials = flags.trials;
  options.seed = flags.seed;
  options.shrink = !flags.no_shrink;
  options.widen_narrow_floats = !flags.no_widen;
  options.execute = !flags.no_execute;
  options.lint = flags.lint;
  options.prove = flags.prove;
  const std::string& path = flags.paths[0];
  if (flags.paths.size() > 1 || std::filesystem::is_directory(path)) {
    if (format == "json" || page.has_value()) {
      return BadInput(err, "check", "--format json and --html take one FILE");
    }
    absl::StatusOr<std::vector<std::string>> files = ExpandPaths(flags.paths);
    if (!files.ok()) return BadInput(err, "check", files.status().message());
    return CheckMany(*files, *partitioners, options, out, err);
  }
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "check", module.status().message());
  std::unique_ptr<HloModule> compared;
  if (flags.compare.has_value()) {
    absl::StatusOr<std::unique_ptr<HloModule>> loaded = LoadVerifiedModule(*flags.compare, err);
    if (!loaded.ok()) return BadInput(err, "check", loaded.status().message());
    compared = *std::move(loaded);
  }
  const std::optional<std::string>& dump_dir = flags.dump;
  if (dump_dir.has_value()) std::filesystem::create_directories(*dump_dir);
  const int64_t effective_partitions =
      flags.partitions > 0 ? flags.partitions : (*module)->num_partitions();
  int worst = kExitHolds;
  bool any_xla = false;
  check::VersionMatrix matrix(choice->other_xla_pythons, choice->options);
  for (const auto& partitioner : *partitioners) {
    if (partitioners->size() > 1) out << "== " << partitioner->spec() << "\n";
    absl::StatusOr<check::CheckOutcome> outcome =
        check::CheckPartitioning(**module, *partitioner, options);
    if (!outcome.ok()) return BadInput(err, "check", outcome.status().message());
    const target::PartitionerCapabilities can = partitioner->capabilities();
    std::string reproduce =
        absl::StrCat("spmdcheck check ", path,
                     target::ReproducePartitionerFlags(partitioner->full_spec(), ShellWord),
                     " --seed ", flags.seed, " --trials ", flags.trials, choice->reproduce_flags);
    if (flags.partitions > 0) absl::StrAppend(&reproduce, " --num-partitions ", flags.partitions);
    if (!options.shrink) absl::StrAppend(&reproduce, " --no-shrink");
    if (!options.widen_narrow_floats) absl::StrAppend(&reproduce, " --no-widen");
    if (!options.execute) absl::StrAppend(&reproduce, " --no-execute");
    if (options.lint) absl::StrAppend(&reproduce, " --lint");
    if (options.prove) absl::StrAppend(&reproduce, " --prove");
    int code = Report(**module, *outcome, can.in_process, reproduce, out, err);
    PrintOptionalJudges(*outcome, out);
    // A finding of XLA's is tried on the other jaxlibs of the version matrix too.
    std::vector<check::VersionCheck> versions;
    const check::FailureSignature signature =
        check::SignatureOf(partitioner->spec(), *outcome, **module);
    if (code == kExitFails && signature.claim && !matrix.empty()) {
      versions = matrix.Try(partitioner->spec(), **module, signature.text, options);
      for (const check::VersionCheck& v : versions) {
        out << "also on " << (v.versions.empty() ? v.venv : v.versions) << ": " << v.verdict
            << "\n";
      }
    }
    if (format == "json") {
      nlohmann::json result =
          viz::CheckOutcomeJson(*outcome, path, reproduce, effective_partitions);
      if (!versions.empty()) {
        nlohmann::json list = nlohmann::json::array();
        for (const check::VersionCheck& v : versions) {
          list.push_back({{"venv", v.venv}, {"versions", v.versions}, {"verdict", v.verdict}});
        }
        result["other_versions"] = std::move(list);
      }
      json_results.push_back(std::move(result));
    }
    if (page.has_value()) page->Add(*outcome, reproduce, effective_partitions);
    if (flags.passes) {
      if (partitioner->pass_dumping() != nullptr) {
        absl::StatusOr<check::PassBisection> bisection =
            check::BisectPasses(**module, *partitioner, options);
        if (bisection.ok()) {
          out << "passes after spmd-partitioning, each against the global program:\n"
              << bisection->ToString();
        } else {
          out << "passes: unknown: " << bisection.status().message() << "\n";
        }
      } else {
        out << "passes: only XLA's partitioners (xla, shardy) dump their passes\n";
      }
    }
    if (code == kExitFails || (code == kExitUnknown && worst == kExitHolds)) worst = code;
    if (outcome->judged_global != nullptr) any_xla = true;
    if (dump_dir.has_value()) {
      const std::string spec = partitioner->spec();
      if (outcome->judged_global != nullptr) {
        WriteDump(*dump_dir, spec, "received", PrintModule(*outcome->judged_global), out);
      }
      WriteDump(*dump_dir, spec, "partitioned",
                !outcome->partitioned_text.empty()
                    ? outcome->partitioned_text
                    : (outcome->partitioned ? PrintModule(*outcome->partitioned) : ""),
                out);
    }
    if (flags.stats && outcome->partitioned != nullptr) {
      if (can.handler_stats) {
        out << "ours (reference partitioner):\n";
        PrintPartitionStats(
            outcome->stats,
            outcome->as_written != nullptr ? *outcome->as_written : *outcome->partitioned, out);
      } else {
        out << partitioner->spec() << ": " << CostLine(*outcome->partitioned, effective_partitions)
            << "\n";
      }
    }
  }
  if (flags.stats && any_xla) {
    // XLA's cost next to ours on the same module.
    absl::StatusOr<target::PartitionOutput> ours =
        target::MakeOurPartitioner()->Partition(**module, effective_partitions);
    if (ours.ok() && ours->status == target::PartitionStatus::kOk) {
      out << "reference (ours): " << CostLine(*ours->partitioned, effective_partitions) << "\n";
    } else if (ours.ok()) {
      out << "reference (ours): " << target::PartitionStatusName(ours->status) << ": "
          << ours->message << "\n";
    }
  }
  if (compared != nullptr) {
    out << "compared (" << *flags.compare
        << "): " << CostLine(*compared, compared->num_partitions()) << "\n";
  }
  if (format == "json") {
    real_out << nlohmann::json{{"schema", "spmdcheck-check/1"}, {"results", json_results}}.dump(2)
             << "\n";
  }
  if (page.has_value()) {
    if (absl::Status written = page->Write(*flags.html); !written.ok()) {
      return BadInput(err, "check", written.message());
    }
  }
  return worst;
}

}  // namespace spmdcheck::cli
