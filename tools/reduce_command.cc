// `spmdcheck reduce FILE (--until fails|crash|unsupported | --until-cmd CMD) -o
// OUT
// [--num-partitions N] [--trials K] [--seed S] [--inject-bug NAME] [--match
// TEXT]
// [--max-calls M] [--max-seconds T] [--verbose]`: shrinks a module while it
// stays interesting (see docs/reduce.md).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file.h"
#include "base/process.h"
#include "check/check_pipeline.h"
#include "check/signature.h"
#include "fuzz/reducer.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "oracle/equivalence.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "tools/partitioner_flags.h"
#include "tools/reduce_finding.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck reduce FILE (--until same|fails|crash|unsupported | --until-cmd CMD) -o OUT
                        [--num-partitions N] [--trials K] [--seed S] [--inject-bug NAME]
                        [--match TEXT] [--max-calls M] [--max-seconds T] [--verbose]
       spmdcheck reduce DIR [--max-seconds T] [--trials K] [--partitioner SPEC] [--xla-venv DIR]
)";

constexpr char kDescription[] =
    R"(DIR: a finding folder of `spmdcheck fuzz` (finding.json, module.hlo) left unreduced, e.g. when
the campaign's time budget ran out: reduced while the partitioner fails with the same signature
(its case seed, default --max-seconds 300), then the folder is written again as the campaign
writes it (module.hlo, partitioned.hlo, inputs.txt, repro.py, finding.json, the other jaxlibs'
verdicts); the module as found is kept as module.unreduced.hlo.

FILE: shrinks FILE while it stays interesting: drops instructions (users rewired to an operand,
an earlier value of the same shape or a new parameter), shrinks dimensions, simplifies shardings,
shrinks the mesh and zeroes constants. Only candidates that verify are tried.)";

constexpr char kFooter[] =
    R"(Exit codes: 0 reduced (OUT written), 2 bad input or the original is not interesting, 3 the
predicate failed to run.)";

// The flags as given.
struct ReduceFlags {
  std::string path;
  std::optional<std::string> until, until_cmd, out_path;
  int64_t partitions = 0, max_calls = 20000;
  std::string match;
  bool verbose = false;
  ReduceFindingFlags finding;  // --trials, --seed, --max-seconds and the partitioner's flags.
};

void AddReduceFlags(CLI::App& app, ReduceFlags& flags) {
  app.add_option("FILE|DIR", flags.path, "the module, or a finding folder")->required();
  AddOptional(app, "--until", flags.until,
              "interesting = `spmdcheck check` gives that outcome (same: the failure\n"
              "signature of FILE, its kind and op, e.g. xla.miscompile.pad, as the fuzz\n"
              "campaign reduces; fails: the oracle found a counterexample (for XLA:\n"
              "confirmed by XLA); crash: the partitioner errored or produced invalid\n"
              "HLO; unsupported: the partitioner or oracle cannot judge it)")
      ->type_name("same|fails|crash|unsupported");
  AddOptional(app, "--until-cmd", flags.until_cmd,
              "interesting = `CMD CANDIDATE.hlo` exits 0 (run by the shell, killed\n"
              "with its process group after --timeout seconds: then not interesting)")
      ->type_name("CMD");
  AddOptional(app, "-o", flags.out_path, "where to write the reduced module (FILE: required)")
      ->type_name("OUT");
  app.add_option("--num-partitions", flags.partitions,
                 "partition count of FILE (default: the module's num_partitions)")
      ->type_name("N")
      ->transform(DecimalInt64());
  app.add_option("--trials", flags.finding.trials, "passed to the check behind --until (default 2)")
      ->type_name("K")
      ->transform(DecimalInt64());
  AddOptional(app, "--seed", flags.finding.seed,
              "passed to the check behind --until (default 1; DIR: the case seed)")
      ->type_name("S")
      ->transform(DecimalUint64());
  app.add_option("--match", flags.match,
                 "with --until: the outcome's message must also contain TEXT")
      ->type_name("TEXT");
  app.add_option("--max-calls", flags.max_calls, "stop after M predicate calls (default 20000)")
      ->type_name("M")
      ->transform(DecimalInt64());
  AddOptional(app, "--max-seconds", flags.finding.max_seconds,
              "stop after T seconds (default: no limit; DIR: 300)")
      ->type_name("T")
      ->transform(DecimalInt64());
  app.add_flag("--verbose", flags.verbose, "one line per accepted reduction step on stderr");
  AddPartitionerFlags(app, flags.finding.partitioner);
}

// `'text'` for the shell.
std::string ShellQuote(absl::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A temporary .hlo file, removed when this goes away.
class TempFile {
 public:
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl =
        absl::StrCat(dir != nullptr && *dir != '\0' ? dir : "/tmp", "/spmdcheck-reduce-XXXXXX.hlo");
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    const int fd = mkstemps(buf.data(), 4);
    if (fd >= 0) {
      close(fd);
      path_ = buf.data();
    }
  }
  ~TempFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

int RunReduce(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("reduce", kUsage, kDescription, kFooter);
  ReduceFlags flags;
  AddReduceFlags(command.app(), flags);
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  if (std::filesystem::is_directory(flags.path)) {
    return RunReduceFinding(flags.path, flags.finding, out, err);
  }
  if (!flags.out_path.has_value()) return command.UsageError(err, "-o OUT is required");
  if (flags.until.has_value() == flags.until_cmd.has_value()) {
    return command.UsageError(err, "give one of --until and --until-cmd");
  }
  const std::string until = flags.until.value_or("");
  if (flags.until.has_value() && until != "fails" && until != "crash" && until != "unsupported" &&
      until != "same") {
    return BadInput(err, "reduce", "--until must be same, fails, crash or unsupported");
  }
  const int64_t partitions = flags.partitions, trials = flags.finding.trials;
  const uint64_t seed = flags.finding.seed.value_or(1);
  const int64_t max_calls = flags.max_calls, max_seconds = flags.finding.max_seconds.value_or(0);
  if (partitions < 0 || partitions > 65536 || trials < 1 || max_calls < 1 || max_seconds < 0) {
    return BadInput(err, "reduce",
                    "--num-partitions must be in [1, 65536], --trials and "
                    "--max-calls >= 1, "
                    "--max-seconds >= 0");
  }
  absl::StatusOr<PartitionerChoice> choice = ChoosePartitioner(flags.finding.partitioner);
  if (!choice.ok()) return BadInput(err, "reduce", choice.status().message());
  const std::string& path = flags.path;
  const std::string& out_path = *flags.out_path;
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "reduce", module.status().message());
  if (partitions > 0 && partitions != (*module)->num_partitions()) {
    (*module)->set_num_partitions(partitions);
    absl::Status verified = VerifyModule(**module);
    if (!verified.ok()) {
      return BadInput(err, "reduce",
                      absl::StrCat(path, " does not verify with --num-partitions ", partitions,
                                   ":\n", verified.message()));
    }
  }

  fuzz::InterestingnessFn interesting;
  std::string what;
  TempFile temp;
  if (flags.until_cmd.has_value()) {
    if (temp.path().empty()) return BadInput(err, "reduce", "cannot create a temporary file");
    const std::string& until_cmd = *flags.until_cmd;
    what = absl::StrCat("--until-cmd ", until_cmd);
    const double timeout = choice->options.command_timeout_seconds;
    interesting = [until_cmd, timeout, &temp](const HloModule& m) -> absl::StatusOr<bool> {
      // InvalidArgument, as the reducer reports a predicate's bad input (any other code of a
      // failed write could read as "not interesting").
      absl::Status written = base::WriteFile(temp.path(), PrintModule(m));
      if (!written.ok()) return absl::InvalidArgumentError(written.message());
      base::ProcessOptions process;
      process.timeout_seconds = timeout;
      process.max_output_bytes = 4096;
      absl::StatusOr<base::ProcessResult> run = base::RunProcess(
          base::ShellCommand(absl::StrCat(until_cmd, " ", ShellQuote(temp.path()))), process);
      if (!run.ok()) return absl::InternalError(absl::StrCat("cannot run: ", until_cmd));
      return run->exited() && run->exit_code == 0;
    };
  } else {
    absl::StatusOr<std::vector<std::unique_ptr<target::PartitionerUnderTest>>> made =
        target::MakePartitioners(choice->specs, choice->options);
    if (!made.ok()) return BadInput(err, "reduce", made.status().message());
    if (made->size() != 1) return BadInput(err, "reduce", "--until takes one --partitioner");
    std::shared_ptr<target::PartitionerUnderTest> partitioner = std::move(made->front());
    check::CheckOptions options;
    options.num_partitions = 0;  // Each candidate's own count (the reducer shrinks the mesh).
    options.trials = trials;
    options.seed = seed;
    const check::CheckStatus wanted = until == "fails"   ? check::CheckStatus::kFails
                                      : until == "crash" ? check::CheckStatus::kCrash
                                                         : check::CheckStatus::kUnsupported;
    const std::string& match = flags.match;
    // --until same: the original's failure signature (kind and op) must stay.
    std::string signature;
    if (until == "same") {
      options.num_partitions = 0;
      absl::StatusOr<check::CheckOutcome> original =
          check::CheckPartitioning(**module, *partitioner, options);
      if (!original.ok()) return BadInput(err, "reduce", original.status().message());
      signature = check::SignatureOf(partitioner->spec(), *original, **module).text;
      if (signature.empty()) {
        return BadInput(
            err, "reduce",
            absl::StrCat(path, " does not fail (", check::CheckStatusName(original->status), ": ",
                         original->message.substr(0, 200), "): nothing to reduce"));
      }
      out << "signature: " << signature << "\n";
    }
    what =
        absl::StrCat("--until ", until, target::ReproducePartitionerFlags(partitioner->full_spec()),
                     choice->reproduce_flags);
    if (!match.empty()) absl::StrAppend(&what, " --match '", match, "'");
    interesting = [options, wanted, match, signature,
                   partitioner](const HloModule& m) -> absl::StatusOr<bool> {
      absl::StatusOr<check::CheckOutcome> outcome =
          check::CheckPartitioning(m, *partitioner, options);
      if (!outcome.ok()) return false;  // The candidate does not verify for the pipeline.
      if (!signature.empty()) {
        if (check::SignatureOf(partitioner->spec(), *outcome, m).text != signature) return false;
      } else if (outcome->status != wanted) {
        return false;
      }
      if (match.empty()) return true;
      return absl::StrContains(outcome->message, match) ||
             absl::StrContains(oracle::FormatEquivReport(outcome->report), match);
    };
  }

  fuzz::ReduceOptions options;
  options.max_predicate_calls = max_calls;
  options.max_seconds = static_cast<double>(max_seconds);
  if (flags.verbose) {
    options.log = [&err](absl::string_view line) { err << "reduce: " << line << "\n"; };
  }
  absl::StatusOr<fuzz::ReduceResult> result = fuzz::ReduceModule(**module, interesting, options);
  if (!result.ok()) {
    if (absl::IsFailedPrecondition(result.status())) {
      return BadInput(err, "reduce",
                      absl::StrCat(path, " is not interesting (", what, "): nothing to reduce"));
    }
    if (absl::IsInvalidArgument(result.status())) {
      return BadInput(err, "reduce", result.status().message());
    }
    err << "spmdcheck reduce: unknown: the predicate failed: " << result.status().message() << "\n";
    return kExitUnknown;
  }
  absl::Status written = base::WriteFile(out_path, result->hlo_text);
  if (!written.ok()) return BadInput(err, "reduce", written.message());
  const fuzz::ReduceReport& r = result->report;
  out << "reduce: " << path << " (" << what << ")\n";
  out << absl::StrFormat("instructions: %d -> %d (entry %d -> %d)\n", r.instructions_before,
                         r.instructions_after, r.entry_instructions_before,
                         r.entry_instructions_after);
  out << absl::StrFormat("devices: %d -> %d\n", r.devices_before, r.devices_after);
  out << absl::StrFormat("time: %.2fs, %d predicate calls (%d candidates did not verify)%s\n",
                         r.seconds, r.predicate_calls, r.rejected_by_verifier,
                         r.stopped_by_limit ? ", stopped by --max-calls/--max-seconds" : "");
  out << "wrote " << out_path << "\n";
  return kExitHolds;
}

}  // namespace spmdcheck::cli
