// `spmdcheck nightly --hours H --out DIR [--targets ...] [--resume]`: every campaign of the
// project for one night, time-boxed and resumable, with reports (docs/nightly.md).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/data_dir.h"
#include "nightly/libfuzzer.h"
#include "nightly/runner.h"
#include "nightly/state.h"
#include "partitioner/injected_bugs.h"
#include "target/xla_worker.h"
#include "tools/cli.h"

namespace spmdcheck::cli {
namespace {

constexpr char kNightlyHelp[] =
    R"(usage: spmdcheck nightly (--hours H | --minutes M | --seconds S) --out DIR
                         [--targets xla,shardy,reference,libfuzzer] [--resume] [--night NAME]
                         [--seed S] [--jobs J] [--max-devices N]
                         [--libfuzzer-dir DIR] [--libfuzzer-targets T1,T2,...]
                         [--canary-bug NAME] [--canary-signature SIG] [--canary-seconds S]
                         [--ray ADDRESS|auto] [--ray-workers K] [--inject-bug NAME]
                         [--reduce-seconds T]

Runs one night of fuzzing into the state directory DIR, each target time-boxed: the canary
(the reference partitioner with an injected bug, which it must find: a night that misses it is
broken), `spmdcheck fuzz` with the reference partitioner and with XLA's (xla, shardy), and every
libFuzzer binary in fork mode with its corpus merged into DIR/corpora/. Findings are deduplicated
by signature across targets and nights in DIR/findings.json (first and last night seen), new
ones are reduced and kept in DIR/findings/<signature>/. Reports of the night: DIR/report.md,
report.html, report.json, junit.xml. A killed run loses nothing: `--resume` continues the
unfinished night with the time it had left.
  --hours H / --minutes M / --seconds S   the night's time budget (fractions allowed)
  --out DIR             the state directory (created; reused night after night)
  --targets LIST        of xla, shardy, reference (with the canary), libfuzzer
                        (default: all four)
  --resume              continue the last unfinished night of DIR (a new night when there is
                        none); without it an unfinished night is marked interrupted
  --night NAME          the night's id (default: the UTC date, .2, .3, ... when taken)
  --seed S              the night's seed (default: derived from its id; printed)
  --jobs J              threads per campaign, libFuzzer -fork jobs (default 1)
  --max-devices N       largest mesh of the campaigns (default 8)
  --libfuzzer-dir DIR   the libFuzzer binaries (default: build-fuzz/fuzz of the checkout)
  --libfuzzer-targets L which of them (default: all five)
  --canary-bug NAME     the injected bug (default dot-padding-unmasked; fuzz --list-bugs)
  --canary-signature S  the signature it must produce (default wrong-result.all-reduce for the
                        default bug; for others any bug claim)
  --canary-seconds S    the canary's time (default 5% of the night, 3 to 60 s)
  --ray ADDRESS|auto    run the xla/shardy/reference campaigns through the Ray driver
                        workers/ray/ray_fuzz.py (with $SPMDCHECK_XLA_VENV's python)
  --ray-workers K       Ray workers per campaign (default 2)
  --reduce-seconds T    time to reduce each new campaign finding (default: a quarter of the
                        target's share, at most 10 s for ours, 90 s with XLA)
  --inject-bug NAME     a drill: switch the bug on in the reference campaign too, so that the
                        whole pipeline (findings, new vs known, reports) runs on a real finding
Ctrl-C (SIGINT) or SIGTERM stops the night at once; it stays resumable.
Exit codes: 0 a complete night with no new finding, 1 new bug claims, 2 bad input or a state
that cannot be written, 3 a broken night (canary missed), a target that could not run (not
built, XLA unavailable), new findings to investigate, or stopped before the end.
)";

std::atomic<bool> nightly_interrupted{false};
extern "C" void OnNightlySignal(int) { nightly_interrupted.store(true); }

class NightlySignals {
 public:
  NightlySignals() {
    nightly_interrupted.store(false);
    struct sigaction action = {};
    action.sa_handler = OnNightlySignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~NightlySignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  NightlySignals(const NightlySignals&) = delete;
  NightlySignals& operator=(const NightlySignals&) = delete;

 private:
  struct sigaction old_int_ = {};
  struct sigaction old_term_ = {};
};

std::string SelfBinary() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return "spmdcheck";
  return std::string(buffer, static_cast<size_t>(n));
}

}  // namespace

int RunNightly(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args =
      Args::Parse(argv,
                  {"--hours", "--minutes", "--seconds", "--out", "--targets", "--night", "--seed",
                   "--jobs", "--max-devices", "--libfuzzer-dir", "--libfuzzer-targets",
                   "--canary-bug", "--canary-signature", "--canary-seconds", "--ray",
                   "--ray-workers", "--inject-bug", "--reduce-seconds"},
                  {"--resume", "--help"});
  if (!args.ok()) return BadInput(err, "nightly", args.status().message());
  if (args->Has("--help")) {
    out << kNightlyHelp;
    return kExitHolds;
  }
  if (!args->positional().empty()) {
    err << kNightlyHelp;
    return kExitBadInput;
  }
  nightly::NightlyOptions options;
  int budgets = 0;
  for (const auto& [flag, scale] : std::vector<std::pair<std::string, double>>{
           {"--hours", 3600}, {"--minutes", 60}, {"--seconds", 1}}) {
    std::optional<std::string> value = args->Get(flag);
    if (!value.has_value()) continue;
    ++budgets;
    double amount = 0;
    if (!absl::SimpleAtod(*value, &amount) || !(amount > 0) || amount * scale > 30 * 86400) {
      return BadInput(err, "nightly", flag + " takes a positive number (at most 30 days)");
    }
    options.seconds = amount * scale;
  }
  std::optional<std::string> dir = args->Get("--out");
  if (!dir.has_value() || dir->empty()) {
    return BadInput(err, "nightly", "--out DIR (the state directory) is required");
  }
  if (budgets != 1 && !args->Has("--resume")) {
    return BadInput(err, "nightly", "give the night's time: one of --hours, --minutes, --seconds");
  }
  if (budgets > 1) {
    return BadInput(err, "nightly", "give only one of --hours, --minutes, --seconds");
  }
  std::error_code ec;
  options.dir = std::filesystem::absolute(*dir, ec).lexically_normal().string();
  if (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  options.resume = args->Has("--resume");
  if (options.resume && budgets == 0) options.seconds = 0;  // Unused when a night is resumed.
  if (std::optional<std::string> targets = args->Get("--targets")) {
    options.targets.clear();
    for (absl::string_view t : absl::StrSplit(*targets, ',', absl::SkipEmpty())) {
      const std::vector<std::string>& campaigns = nightly::kCampaignTargets;
      if (t != "libfuzzer" && std::find(campaigns.begin(), campaigns.end(), t) == campaigns.end()) {
        return BadInput(err, "nightly",
                        absl::StrCat("unknown target '", t,
                                     "' (--targets takes xla, shardy, reference, libfuzzer)"));
      }
      options.targets.emplace_back(t);
    }
    if (options.targets.empty()) return BadInput(err, "nightly", "--targets is empty");
  }
  if (std::optional<std::string> night = args->Get("--night")) {
    if (!nightly::ValidNightName(*night)) {
      return BadInput(err, "nightly", "--night takes a name of letters, digits, '.', '_', '-'");
    }
    options.night = *night;
  }
  if (args->Has("--seed")) {
    absl::StatusOr<uint64_t> seed = args->GetUint64("--seed", 1);
    if (!seed.ok()) return BadInput(err, "nightly", seed.status().message());
    options.seed = *seed;
  }
  absl::StatusOr<int64_t> jobs = args->GetInt("--jobs", 1);
  absl::StatusOr<int64_t> devices = args->GetInt("--max-devices", 8);
  absl::StatusOr<int64_t> ray_workers = args->GetInt("--ray-workers", 2);
  for (const auto* value : {&jobs, &devices, &ray_workers}) {
    if (!value->ok()) return BadInput(err, "nightly", value->status().message());
  }
  if (*jobs < 1 || *jobs > 256 || *devices < 1 || *devices > 512 || *ray_workers < 1) {
    return BadInput(err, "nightly",
                    "--jobs in [1, 256], --max-devices in [1, 512], --ray-workers >= 1");
  }
  options.jobs = *jobs;
  options.max_devices = *devices;
  options.ray_workers = *ray_workers;
  options.source_dir = SpmdcheckDataDir();
  options.spmdcheck_binary = SelfBinary();
  options.libfuzzer_dir =
      args->Get("--libfuzzer-dir").value_or(options.source_dir + "/build-fuzz/fuzz");
  options.libfuzzer_dir = std::filesystem::absolute(options.libfuzzer_dir, ec).string();
  if (std::optional<std::string> list = args->Get("--libfuzzer-targets")) {
    for (absl::string_view t : absl::StrSplit(*list, ',', absl::SkipEmpty())) {
      const std::vector<std::string>& known = nightly::LibFuzzerTargets();
      if (std::find(known.begin(), known.end(), t) == known.end()) {
        return BadInput(err, "nightly", absl::StrCat("unknown libFuzzer target '", t, "'"));
      }
      options.libfuzzer_targets.emplace_back(t);
    }
  }
  options.canary_bug = args->Get("--canary-bug").value_or("dot-padding-unmasked");
  if (!partitioner::IsInjectedBug(options.canary_bug)) {
    return BadInput(
        err, "nightly",
        "--canary-bug: no injected bug '" + options.canary_bug + "' (spmdcheck fuzz --list-bugs)");
  }
  options.canary_signature = args->Get("--canary-signature").value_or("");
  options.inject_bug = args->Get("--inject-bug").value_or("");
  if (!options.inject_bug.empty() && !partitioner::IsInjectedBug(options.inject_bug)) {
    return BadInput(
        err, "nightly",
        "--inject-bug: no injected bug '" + options.inject_bug + "' (spmdcheck fuzz --list-bugs)");
  }
  if (std::optional<std::string> s = args->Get("--canary-seconds")) {
    if (!absl::SimpleAtod(*s, &options.canary_seconds) || !(options.canary_seconds >= 1)) {
      return BadInput(err, "nightly", "--canary-seconds takes a number of seconds >= 1");
    }
  }
  if (std::optional<std::string> s = args->Get("--reduce-seconds")) {
    // (> 0: spmdcheck fuzz's reducer takes 0 as "no limit".)
    if (!absl::SimpleAtod(*s, &options.reduce_seconds) || !(options.reduce_seconds > 0)) {
      return BadInput(err, "nightly", "--reduce-seconds takes a number of seconds > 0");
    }
  }
  options.ray_address = args->Get("--ray").value_or("");
  // The driver (workers/ray/ray_fuzz.py); SPMDCHECK_RAY_DRIVER names another (tests use a
  // stand-in).
  const char* driver = getenv("SPMDCHECK_RAY_DRIVER");
  options.ray_driver = driver != nullptr && driver[0] != '\0'
                           ? std::string(driver)
                           : options.source_dir + "/workers/ray/ray_fuzz.py";
  options.xla_python = target::DefaultXlaPython();
  options.cancel = &nightly_interrupted;
  NightlySignals signals;
  absl::StatusOr<nightly::NightlyResult> result = nightly::RunNightly(options, out);
  if (!result.ok()) return BadInput(err, "nightly", result.status().message());
  return result->ExitCode();
}

}  // namespace spmdcheck::cli
