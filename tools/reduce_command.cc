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
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "check/check_pipeline.h"
#include "check/signature.h"
#include "fuzz/reducer.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "oracle/equivalence.h"
#include "target/process.h"
#include "tools/cli.h"
#include "tools/module_loading.h"
#include "tools/partitioner_flags.h"
#include "tools/reduce_finding.h"

namespace spmdcheck::cli {
namespace {

constexpr char kReduceHelp[] =
    R"(usage: spmdcheck reduce FILE (--until same|fails|crash|unsupported | --until-cmd CMD) -o OUT
                        [--num-partitions N] [--trials K] [--seed S] [--inject-bug NAME]
                        [--match TEXT] [--max-calls M] [--max-seconds T] [--verbose]
       spmdcheck reduce DIR [--max-seconds T] [--trials K] [--partitioner SPEC] [--xla-venv DIR]

DIR: a finding folder of `spmdcheck fuzz` (finding.json, module.hlo) left unreduced, e.g. when
the campaign's time budget ran out: reduced while the partitioner fails with the same signature
(its case seed, default --max-seconds 300), then the folder is written again as the campaign
writes it (module.hlo, partitioned.hlo, inputs.txt, repro.py, finding.json, the other jaxlibs'
verdicts); the module as found is kept as module.unreduced.hlo.

FILE:

Shrinks FILE while it stays interesting: drops instructions (users rewired to an operand, an
earlier value of the same shape or a new parameter), shrinks dimensions, simplifies shardings,
shrinks the mesh and zeroes constants. Only candidates that verify are tried.
  --until same|fails|crash|unsupported
                      interesting = `spmdcheck check` gives that outcome (same: the failure
                      signature of FILE, its kind and op, e.g. xla.miscompile.pad, as the fuzz
                      campaign reduces; fails: the oracle found a counterexample (for XLA:
                      confirmed by XLA); crash: the partitioner errored or produced invalid
                      HLO; unsupported: the partitioner or oracle cannot judge it)
  --until-cmd CMD     interesting = `CMD CANDIDATE.hlo` exits 0 (run by the shell, killed
                      with its process group after --timeout seconds: then not interesting)
  -o OUT              where to write the reduced module (required)
  --num-partitions N  partition count of FILE (default: the module's num_partitions)
  --trials K, --seed S, --partitioner SPEC, --inject-bug NAME, --xla-venv DIR
                      passed to the check behind --until (defaults 2, 1, reference, none)
  --timeout SECONDS   per check or --until-cmd run (default 120)
  --match TEXT        with --until: the outcome's message must also contain TEXT
  --max-calls M       stop after M predicate calls (default 20000)
  --max-seconds T     stop after T seconds (default: no limit)
  --verbose           one line per accepted reduction step on stderr
Exit codes: 0 reduced (OUT written), 2 bad input or the original is not interesting, 3 the
predicate failed to run.
)";

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

absl::Status WriteFile(const std::string& path, absl::string_view text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return absl::InvalidArgumentError(absl::StrCat("cannot write ", path));
  f << text;
  f.close();
  if (!f) return absl::InvalidArgumentError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
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
  std::set<std::string> value_flags = {"--until",          "--until-cmd", "-o",
                                       "--num-partitions", "--trials",    "--seed",
                                       "--match",          "--max-calls", "--max-seconds"};
  value_flags.insert(kPartitionerValueFlags.begin(), kPartitionerValueFlags.end());
  absl::StatusOr<Args> args = Args::Parse(argv, value_flags, {"--verbose", "--help"});
  if (!args.ok()) return BadInput(err, "reduce", args.status().message());
  if (args->Has("--help")) {
    out << kReduceHelp;
    return kExitHolds;
  }
  if (args->positional().size() == 1 && std::filesystem::is_directory(args->positional()[0])) {
    return RunReduceFinding(args->positional()[0], *args, out, err);
  }
  if (args->positional().size() != 1 || !args->Has("-o") ||
      args->Has("--until") == args->Has("--until-cmd")) {
    err << kReduceHelp;
    return kExitBadInput;
  }
  const std::string until = args->Get("--until").value_or("");
  if (args->Has("--until") && until != "fails" && until != "crash" && until != "unsupported" &&
      until != "same") {
    return BadInput(err, "reduce", "--until must be same, fails, crash or unsupported");
  }
  absl::StatusOr<int64_t> partitions = args->GetInt("--num-partitions", 0);
  absl::StatusOr<int64_t> trials = args->GetInt("--trials", 2);
  absl::StatusOr<uint64_t> seed = args->GetUint64("--seed", 1);
  absl::StatusOr<int64_t> max_calls = args->GetInt("--max-calls", 20000);
  absl::StatusOr<int64_t> max_seconds = args->GetInt("--max-seconds", 0);
  for (const auto* value : {&partitions, &trials, &max_calls, &max_seconds}) {
    if (!value->ok()) return BadInput(err, "reduce", value->status().message());
  }
  if (!seed.ok()) return BadInput(err, "reduce", seed.status().message());
  if (*partitions < 0 || *partitions > 65536 || *trials < 1 || *max_calls < 1 || *max_seconds < 0) {
    return BadInput(err, "reduce",
                    "--num-partitions must be in [1, 65536], --trials and "
                    "--max-calls >= 1, "
                    "--max-seconds >= 0");
  }
  absl::StatusOr<PartitionerChoice> choice = PartitionerChoiceFromArgs(*args);
  if (!choice.ok()) return BadInput(err, "reduce", choice.status().message());
  const std::string& path = args->positional()[0];
  const std::string out_path = *args->Get("-o");
  absl::StatusOr<std::unique_ptr<HloModule>> module = LoadVerifiedModule(path, err);
  if (!module.ok()) return BadInput(err, "reduce", module.status().message());
  if (*partitions > 0 && *partitions != (*module)->num_partitions()) {
    (*module)->set_num_partitions(*partitions);
    absl::Status verified = VerifyModule(**module);
    if (!verified.ok()) {
      return BadInput(err, "reduce",
                      absl::StrCat(path, " does not verify with --num-partitions ", *partitions,
                                   ":\n", verified.message()));
    }
  }

  fuzz::InterestingnessFn interesting;
  std::string what;
  TempFile temp;
  if (args->Has("--until-cmd")) {
    if (temp.path().empty()) return BadInput(err, "reduce", "cannot create a temporary file");
    const std::string command = *args->Get("--until-cmd");
    what = absl::StrCat("--until-cmd ", command);
    const double timeout = choice->options.command_timeout_seconds;
    interesting = [command, timeout, &temp](const HloModule& m) -> absl::StatusOr<bool> {
      absl::Status written = WriteFile(temp.path(), PrintModule(m));
      if (!written.ok()) return written;
      target::ProcessOptions process;
      process.timeout_seconds = timeout;
      process.max_output_bytes = 4096;
      absl::StatusOr<target::ProcessResult> run = target::RunProcess(
          target::ShellCommand(absl::StrCat(command, " ", ShellQuote(temp.path()))), process);
      if (!run.ok()) return absl::InternalError(absl::StrCat("cannot run: ", command));
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
    options.trials = *trials;
    options.seed = static_cast<uint64_t>(*seed);
    const check::CheckStatus wanted = until == "fails"   ? check::CheckStatus::kFails
                                      : until == "crash" ? check::CheckStatus::kCrash
                                                         : check::CheckStatus::kUnsupported;
    const std::string match = args->Get("--match").value_or("");
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
  options.max_predicate_calls = *max_calls;
  options.max_seconds = static_cast<double>(*max_seconds);
  if (args->Has("--verbose")) {
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
  absl::Status written = WriteFile(out_path, result->hlo_text);
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
