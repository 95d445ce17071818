// `spmdcheck fuzz [--seconds T] [--cases K] [--seed S] [--max-devices N] [--inject-bug NAME]
// [--out DIR] [--jobs J] [--list-bugs]`: the generate -> partition -> check campaign (see
// docs/fuzz.md).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fuzz/campaign.h"
#include "fuzz/program_gen.h"
#include "fuzz/sdy_program_gen.h"
#include "ir/data_dir.h"
#include "lint/lint.h"
#include "target/partitioner_under_test.h"
#include "target/xla_worker.h"
#include "tools/cli.h"
#include "tools/lint_cost_check.h"
#include "tools/partitioner_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck fuzz [--partitioner SPEC[,SPEC...]] [--seconds T] [--cases K] [--seed S]
                      [--max-devices N] [--inject-bug NAME] [--out DIR] [--jobs J] [--list-bugs]
                      [--known FILE] [--reduce-seconds T] [--no-bisect] [--no-lint]
                      [--summary FILE] [--pattern-weights NAME=W,...] [--one-mesh-percent P]
                      [--first-case K] [--shard I/N] [--save-modules DIR]
)";

constexpr char kDescription[] =
    R"(Generates sharded programs (seeded; case i of seed S is always the same program), partitions
each with every partitioner under test (default: reference; xla and shardy run XLA's, one XLA
worker per job) and checks it as `spmdcheck check` does. Each new failure signature is reduced
while it keeps its signature and handed over as a folder DIR/<signature>/ (module.hlo with a
header saying how to reproduce it, the partitioned module, the inputs, repro.py that needs
only jax, finding.json); signatures of known findings are counted, not written again. For XLA
only miscompiles confirmed by XLA's own execution, crashes and rejections are bug claims; what
only our oracle sees is listed "to investigate". DIR/summary.json has the whole summary.)";

constexpr char kFooter[] =
    R"(Ctrl-C (SIGINT) or SIGTERM stops the campaign at once and prints the summary so far; a second
one kills it.
Exit codes: 0 no new finding but wasteful ones (known findings are listed), 1 new bug claims
found (written), 2 bad input or a finding that could not be written, 3 no new bug claim but new
differences to investigate, or stopped by a signal before its limit, or XLA unavailable.)";

// The flags as given.
struct FuzzFlags {
  std::optional<int64_t> seconds, cases, reduce_seconds, sdy_percent, one_mesh_percent;
  std::optional<uint64_t> print_sdy_program;
  uint64_t seed = 1;
  int64_t max_devices = 8, jobs = 1, first_case = 0;
  std::string out_dir = "fuzz-out", pattern_weights, summary, save_modules;
  std::optional<std::string> known, shard;
  bool list_bugs = false, no_bisect = false, no_lint = false;
  PartitionerFlags partitioner;
};

CLI::Option* AddInt(CLI::App& app, const std::string& name, std::optional<int64_t>& value,
                    const std::string& type, const std::string& description) {
  return AddOptional(app, name, value, description)->type_name(type)->transform(DecimalInt64());
}

void AddFuzzFlags(CLI::App& app, FuzzFlags& flags) {
  AddInt(app, "--seconds", flags.seconds, "T", "stop after T seconds (default 60)");
  AddInt(app, "--cases", flags.cases, "K", "stop after K cases (default: no limit)");
  app.add_option("--seed", flags.seed,
                 "campaign seed (default 1), printed in the summary and every repro")
      ->type_name("S")
      ->transform(DecimalUint64());
  app.add_option("--max-devices", flags.max_devices, "largest mesh (default 8)")
      ->type_name("N")
      ->transform(DecimalInt64());
  app.add_option("--out", flags.out_dir, "where findings go (default fuzz-out)")->type_name("DIR");
  app.add_option("--jobs", flags.jobs, "worker threads (default 1)")
      ->type_name("J")
      ->transform(DecimalInt64());
  AddOptional(app, "--known", flags.known,
              "known findings to triage against (default, for xla/shardy:\n"
              "corpus/xla-findings/known.json of the checkout; `--known none`: none)")
      ->type_name("FILE");
  AddInt(app, "--reduce-seconds", flags.reduce_seconds, "T",
         "time budget per new finding's reduction (default 10; 90 with xla/shardy;\n"
         "0: write findings unreduced)");
  app.add_flag("--no-bisect", flags.no_bisect,
               "do not look for the XLA pass that broke a miscompile made after\n"
               "spmd-partitioning");
  app.add_flag("--no-lint", flags.no_lint,
               "do not run the collective lint on correct partitionings of XLA's and\n"
               "commands (a proved cheaper chain is a finding <partitioner>.wasteful.<rule>)");
  app.add_option("--summary", flags.summary,
                 "where the JSON summary goes (default DIR/summary.json)")
      ->type_name("FILE");
  app.add_option("--pattern-weights", flags.pattern_weights,
                 "weights of the generator's bug patterns (docs/fuzz.md lists them; `all=W`\n"
                 "sets every one, 0 switches a pattern off); the summary counts the cases\n"
                 "that contain each pattern (\"patterns hit\")")
      ->type_name("NAME=W,...");
  AddInt(app, "--one-mesh-percent", flags.one_mesh_percent, "P",
         "share of one-mesh programs, whose shardings all come from the program's\n"
         "mesh (no random tile dims or device orders, no manual regions): only those\n"
         "import into Shardy (default: 50 with shardy under test, else 0)");
  AddInt(app, "--sdy-percent", flags.sdy_percent, "P",
         "share of cases that are sdy-level programs (StableHLO with the sdy\n"
         "dialect, as jax lowers for Shardy: open dims, priorities, sub-axes,\n"
         "constraints, reshards, sharding groups, unreduced axes, manual\n"
         "computations with collectives), compiled by Shardy as jax.jit compiles\n"
         "them (default: 50 with shardy under test, else 0; only shardy runs them)");
  AddOptional(app, "--print-sdy-program", flags.print_sdy_program,
              "print the sdy-level program of that seed (a case's seed is in its\n"
              "finding) and exit")
      ->type_name("SEED")
      ->transform(DecimalUint64());
  app.add_option("--first-case", flags.first_case, "start at case index K (default 0)")
      ->type_name("K")
      ->transform(DecimalInt64());
  AddOptional(app, "--shard", flags.shard,
              "run only case indices K + I, K + I + N, ... (split one seed's cases over\n"
              "N processes or machines)")
      ->type_name("I/N");
  app.add_option("--save-modules", flags.save_modules,
                 "write each generated HLO-level case's module there as case-<index>.hlo\n"
                 "(bench/xla_vs_jax_bench.sh runs the same modules through a bare jax loop)")
      ->type_name("DIR");
  app.add_flag("--list-bugs", flags.list_bugs, "list the injectable bugs and exit");
  AddPartitionerFlags(app, flags.partitioner);
}

// Set by SIGINT/SIGTERM while a campaign runs (lock-free, so async-signal-safe).
std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void OnStopSignal(int) { interrupted.store(true); }

// Routes SIGINT and SIGTERM to `interrupted` for its lifetime; the handlers reset themselves
// after one signal (SA_RESETHAND), so a second Ctrl-C ends the process as usual.
class StopSignals {
 public:
  StopSignals() {
    interrupted.store(false);
    struct sigaction action = {};
    action.sa_handler = OnStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ = {};
  struct sigaction old_term_ = {};
};

}  // namespace

int RunFuzz(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("fuzz", kUsage, kDescription, kFooter);
  FuzzFlags flags;
  AddFuzzFlags(command.app(), flags);
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  if (flags.list_bugs) {
    for (const target::InjectableBug& bug : target::InjectableBugs()) {
      out << bug.name << ": " << bug.description << "\n";
    }
    return kExitHolds;
  }
  if (flags.print_sdy_program.has_value()) {
    if (flags.max_devices < 2) return BadInput(err, "fuzz", "--max-devices must be >= 2");
    fuzz::SdyProgramOptions sdy;
    sdy.max_devices = flags.max_devices;
    const fuzz::SdyProgram program = fuzz::GenerateSdyProgram(*flags.print_sdy_program, sdy);
    out << "// sdy program, seed " << *flags.print_sdy_program << ", " << program.num_devices
        << " devices; constructs: " << absl::StrJoin(program.constructs, ", ") << "\n"
        << program.text;
    return kExitHolds;
  }
  const int64_t seconds = flags.seconds.value_or(flags.cases.has_value() ? 0 : 60);
  const int64_t cases = flags.cases.value_or(0);
  const int64_t devices = flags.max_devices, jobs = flags.jobs;
  if (seconds < 0 || cases < 0 || devices < 1 || devices > 512 || jobs < 1 || jobs > 256) {
    return BadInput(
        err, "fuzz",
        "--seconds/--cases must be >= 0, --max-devices in [1, 512], --jobs in [1, 256]");
  }
  absl::StatusOr<PartitionerChoice> choice = ChoosePartitioner(flags.partitioner);
  if (!choice.ok()) return BadInput(err, "fuzz", choice.status().message());
  fuzz::CampaignOptions options;
  options.partitioners = choice->specs;
  options.target = choice->options;
  if (!flags.partitioner.timeout.has_value() && seconds > 0) {
    // A compile that never returns must not take the budget: without --timeout each compile (or
    // command) of a campaign gets a quarter of --seconds, 10 to 120 s (a timeout is tried once
    // more alone before it is called a hang).
    const double per_compile = std::clamp(0.25 * static_cast<double>(seconds), 10.0, 120.0);
    options.target.compile_timeout_seconds = per_compile;
    options.target.command_timeout_seconds = per_compile;
  }
  options.reproduce_flags = choice->reproduce_flags;
  options.seconds = static_cast<double>(seconds);
  options.cases = cases;
  options.seed = flags.seed;
  options.max_devices = devices;
  options.pattern_weights = flags.pattern_weights;
  {
    fuzz::ProgramGenOptions gen;
    const absl::Status weights = fuzz::SetPatternWeights(options.pattern_weights, &gen);
    if (!weights.ok()) return BadInput(err, "fuzz", weights.message());
  }
  if (const std::optional<int64_t>& percent = flags.sdy_percent) {
    if (*percent < 0 || *percent > 100) {
      return BadInput(err, "fuzz", "--sdy-percent takes a percentage in [0, 100]");
    }
    options.sdy_percent = static_cast<int>(*percent);
  }
  if (const std::optional<int64_t>& percent = flags.one_mesh_percent) {
    if (*percent < 0 || *percent > 100) {
      return BadInput(err, "fuzz", "--one-mesh-percent takes a percentage in [0, 100]");
    }
    options.one_mesh_percent = static_cast<int>(*percent);
  }
  options.out_dir = flags.out_dir;
  options.jobs = jobs;
  options.cancel = &interrupted;
  options.other_xla_pythons = choice->other_xla_pythons;
  if (flags.first_case < 0) return BadInput(err, "fuzz", "--first-case takes a case index >= 0");
  options.first_case = flags.first_case;
  if (const std::optional<std::string>& shard = flags.shard) {
    std::vector<std::string> parts = absl::StrSplit(*shard, '/');
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &options.shard_index) ||
        !absl::SimpleAtoi(parts[1], &options.shard_count) || options.shard_count < 1 ||
        options.shard_index < 0 || options.shard_index >= options.shard_count) {
      return BadInput(err, "fuzz", "--shard takes I/N with 0 <= I < N");
    }
  }
  options.bisect_passes = !flags.no_bisect;
  if (!flags.no_lint) {
    // XLA's correct partitionings go through the collective lint: a proved cheaper chain is a
    // wasteful finding (`xla.wasteful.<pattern>`).
    options.cost_check = LintCostCheck();
  }
  options.summary_path = flags.summary;
  options.save_modules_dir = flags.save_modules;
  const int64_t reduce_seconds = flags.reduce_seconds.value_or(
      static_cast<int64_t>(target::ReduceSecondsOf(options.partitioners)));
  if (reduce_seconds < 0) {
    return BadInput(err, "fuzz", "--reduce-seconds takes a number of seconds >= 0");
  }
  options.reduce_seconds = static_cast<double>(reduce_seconds);
  if (const std::optional<std::string>& known = flags.known) {
    if (*known != "none") options.known_findings = *known;
  } else if (target::AnySpecCan(options.partitioners,
                                &target::PartitionerCapabilities::xla_findings)) {
    const std::string path = SpmdcheckDataDir() + "/corpus/xla-findings/known.json";
    if (std::filesystem::exists(path)) options.known_findings = path;
  }
  const bool tty = isatty(fileno(stderr)) != 0;
  double last_log = 0;
  if (!options.known_findings.empty()) {
    out << "known findings: " << options.known_findings << "\n";
  }
  const std::string bug = target::InjectedBugOf(options.partitioners);
  out << "spmdcheck fuzz: partitioners " << target::WithoutInjectedBugs(options.partitioners)
      << ", seed " << options.seed << ", max devices " << options.max_devices
      << (bug.empty() ? "" : ", injected bug " + bug) << ", " << options.jobs << " job(s)\n";
  out.flush();
  StopSignals stop_signals;
  absl::StatusOr<fuzz::CampaignReport> report =
      fuzz::RunCampaign(options, [&](const fuzz::CampaignProgress& p) {
        const std::string line = absl::StrFormat(
            "cases %d (%.1f/s), accepted %.1f%%, findings %d (%d new), failures %d, unknown %d, "
            "elapsed %.0fs",
            p.cases, p.elapsed > 0 ? p.cases / p.elapsed : 0.0,
            p.partitionings > 0 ? 100.0 * p.accepted / p.partitionings : 100.0, p.findings,
            p.new_findings, p.failures, p.unsupported, p.elapsed);
        if (tty) {
          err << "\r" << line << "   " << std::flush;
        } else if (p.elapsed - last_log >= 5) {
          last_log = p.elapsed;
          err << line << "\n";
        }
      });
  if (tty) err << "\n";
  if (!report.ok()) return BadInput(err, "fuzz", report.status().message());
  out << report->ToString();
  out << "reproduce: spmdcheck fuzz" << target::ReproducePartitionerFlags(options.partitioners)
      << options.reproduce_flags << " --seed " << options.seed << " --max-devices "
      << options.max_devices
      << (options.pattern_weights.empty() ? "" : " --pattern-weights " + options.pattern_weights)
      << (options.one_mesh_percent >= 0
              ? absl::StrCat(" --one-mesh-percent ", options.one_mesh_percent)
              : "")
      << (options.cases > 0 ? absl::StrCat(" --cases ", options.cases)
                            : absl::StrCat(" --seconds ", seconds))
      << (options.first_case > 0 ? absl::StrCat(" --first-case ", options.first_case) : "")
      << (options.shard_count > 1
              ? absl::StrCat(" --shard ", options.shard_index, "/", options.shard_count)
              : "")
      << "\n";
  out << "summary: "
      << (options.summary_path.empty() ? options.out_dir + "/summary.json" : options.summary_path)
      << "\n";
  for (const fuzz::CampaignFailure& f : report->failures) {
    if (f.claim && f.known_as.empty()) return kExitFails;
  }
  if (!report->unavailable.empty()) {
    err << "spmdcheck fuzz: unknown: " << report->unavailable << "\n";
    return kExitUnknown;
  }
  for (const fuzz::CampaignFailure& f : report->failures) {
    // A new difference only our oracle sees is unknown until investigated (wasteful
    // partitionings are correct: findings, not unknowns).
    if (f.known_as.empty() && !absl::StrContains(f.signature, ".wasteful.")) return kExitUnknown;
  }
  return report->stopped ? kExitUnknown : kExitHolds;
}

}  // namespace spmdcheck::cli
