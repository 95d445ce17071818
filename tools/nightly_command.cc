// `spmdcheck nightly --hours H --out DIR [--targets ...] [--resume]`: every campaign of the
// project for one night, time-boxed and resumable, with reports (docs/nightly.md).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/data_dir.h"
#include "nightly/libfuzzer.h"
#include "nightly/runner.h"
#include "nightly/state.h"
#include "target/partitioner_under_test.h"
#include "target/xla_worker.h"
#include "tools/cli.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: spmdcheck nightly (--hours H | --minutes M | --seconds S) --out DIR
                         [--targets xla,shardy,reference,libfuzzer] [--resume] [--night NAME]
                         [--seed S] [--jobs J] [--max-devices N]
                         [--libfuzzer-dir DIR] [--libfuzzer-targets T1,T2,...]
                         [--canary-bug NAME] [--canary-signature SIG] [--canary-seconds S]
                         [--ray ADDRESS|auto] [--ray-workers K] [--inject-bug NAME]
                         [--reduce-seconds T]
)";

constexpr char kDescription[] =
    R"(Runs one night of fuzzing into the state directory DIR, each target time-boxed: the canary
(the reference partitioner with an injected bug, which it must find: a night that misses it is
broken), `spmdcheck fuzz` with the reference partitioner and with XLA's (xla, shardy), and every
libFuzzer binary in fork mode with its corpus merged into DIR/corpora/. Findings are deduplicated
by signature across targets and nights in DIR/findings.json (first and last night seen), new
ones are reduced and kept in DIR/findings/<signature>/. Reports of the night: DIR/report.md,
report.html, report.json, junit.xml. A killed run loses nothing: `--resume` continues the
unfinished night with the time it had left.)";

constexpr char kFooter[] =
    R"(Ctrl-C (SIGINT) or SIGTERM stops the night at once; it stays resumable.
Exit codes: 0 a complete night with no new finding, 1 new bug claims, 2 bad input or a state
that cannot be written, 3 a broken night (canary missed), a target that could not run (not
built, XLA unavailable), new findings to investigate, or stopped before the end.)";

// The flags as given.
struct NightlyFlags {
  std::optional<double> hours, minutes, seconds, canary_seconds, reduce_seconds;
  std::optional<std::string> out, night, libfuzzer_dir;
  std::optional<std::vector<std::string>> targets;
  std::vector<std::string> libfuzzer_targets;
  std::optional<uint64_t> seed;
  int64_t jobs = 1, max_devices = 8, ray_workers = 2;
  std::string canary_bug = "dot-padding-unmasked", canary_signature, ray, inject_bug;
  bool resume = false;
};

void AddNightlyFlags(CLI::App& app, NightlyFlags& flags) {
  AddOptional(app, "--hours", flags.hours, "the night's time budget (fractions allowed)")
      ->type_name("H")
      ->check(Number());
  AddOptional(app, "--minutes", flags.minutes, "the same in minutes")
      ->type_name("M")
      ->check(Number());
  AddOptional(app, "--seconds", flags.seconds, "the same in seconds")
      ->type_name("S")
      ->check(Number());
  AddOptional(app, "--out", flags.out, "the state directory (created; reused night after night)")
      ->type_name("DIR");
  AddOptional(app, "--targets", flags.targets,
              "of xla, shardy, reference (with the canary), libfuzzer (default: all four)")
      ->type_name("LIST")
      ->delimiter(',');
  app.add_flag("--resume", flags.resume,
               "continue the last unfinished night of DIR (a new night when there is\n"
               "none); without it an unfinished night is marked interrupted");
  AddOptional(app, "--night", flags.night,
              "the night's id (default: the UTC date, .2, .3, ... when taken)")
      ->type_name("NAME");
  AddOptional(app, "--seed", flags.seed, "the night's seed (default: derived from its id; printed)")
      ->type_name("S")
      ->transform(DecimalUint64());
  app.add_option("--jobs", flags.jobs, "threads per campaign, libFuzzer -fork jobs (default 1)")
      ->type_name("J")
      ->transform(DecimalInt64());
  app.add_option("--max-devices", flags.max_devices, "largest mesh of the campaigns (default 8)")
      ->type_name("N")
      ->transform(DecimalInt64());
  AddOptional(app, "--libfuzzer-dir", flags.libfuzzer_dir,
              "the libFuzzer binaries (default: build-fuzz/fuzz of the checkout)")
      ->type_name("DIR");
  app.add_option("--libfuzzer-targets", flags.libfuzzer_targets,
                 "which of them (default: all five)")
      ->type_name("L")
      ->delimiter(',');
  app.add_option("--canary-bug", flags.canary_bug,
                 "the injected bug (default dot-padding-unmasked; fuzz --list-bugs)")
      ->type_name("NAME");
  app.add_option("--canary-signature", flags.canary_signature,
                 "the signature it must produce (default wrong-result.all-reduce for the\n"
                 "default bug; for others any bug claim)")
      ->type_name("S");
  AddOptional(app, "--canary-seconds", flags.canary_seconds,
              "the canary's time (default 5% of the night, 3 to 60 s)")
      ->type_name("S")
      ->check(Number());
  app.add_option("--ray", flags.ray,
                 "run the xla/shardy/reference campaigns through the Ray driver\n"
                 "workers/ray/ray_fuzz.py (with $SPMDCHECK_XLA_VENV's python)")
      ->type_name("ADDRESS|auto");
  app.add_option("--ray-workers", flags.ray_workers, "Ray workers per campaign (default 2)")
      ->type_name("K")
      ->transform(DecimalInt64());
  AddOptional(app, "--reduce-seconds", flags.reduce_seconds,
              "time to reduce each new campaign finding (default: a quarter of the\n"
              "target's share, at most 10 s for ours, 90 s with XLA)")
      ->type_name("T")
      ->check(Number());
  app.add_option("--inject-bug", flags.inject_bug,
                 "a drill: switch the bug on in the reference campaign too, so that the\n"
                 "whole pipeline (findings, new vs known, reports) runs on a real finding")
      ->type_name("NAME");
}

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
  Command command("nightly", kUsage, kDescription, kFooter);
  NightlyFlags flags;
  AddNightlyFlags(command.app(), flags);
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  nightly::NightlyOptions options;
  int budgets = 0;
  for (const auto& [flag, value, scale] :
       std::vector<std::tuple<std::string, std::optional<double>, double>>{
           {"--hours", flags.hours, 3600},
           {"--minutes", flags.minutes, 60},
           {"--seconds", flags.seconds, 1}}) {
    if (!value.has_value()) continue;
    ++budgets;
    const double amount = *value;
    if (!(amount > 0) || amount * scale > 30 * 86400) {
      return BadInput(err, "nightly", flag + " takes a positive number (at most 30 days)");
    }
    options.seconds = amount * scale;
  }
  if (!flags.out.has_value() || flags.out->empty()) {
    return BadInput(err, "nightly", "--out DIR (the state directory) is required");
  }
  const std::string& dir = *flags.out;
  if (budgets != 1 && !flags.resume) {
    return BadInput(err, "nightly", "give the night's time: one of --hours, --minutes, --seconds");
  }
  if (budgets > 1) {
    return BadInput(err, "nightly", "give only one of --hours, --minutes, --seconds");
  }
  std::error_code ec;
  options.dir = std::filesystem::absolute(dir, ec).lexically_normal().string();
  if (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  options.resume = flags.resume;
  if (options.resume && budgets == 0) options.seconds = 0;  // Unused when a night is resumed.
  if (flags.targets.has_value()) {
    options.targets.clear();
    for (const std::string& t : *flags.targets) {
      if (t.empty()) continue;
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
  if (const std::optional<std::string>& night = flags.night) {
    if (!nightly::ValidNightName(*night)) {
      return BadInput(err, "nightly", "--night takes a name of letters, digits, '.', '_', '-'");
    }
    options.night = *night;
  }
  if (flags.seed.has_value()) options.seed = *flags.seed;
  const int64_t jobs = flags.jobs, devices = flags.max_devices, ray_workers = flags.ray_workers;
  if (jobs < 1 || jobs > 256 || devices < 1 || devices > 512 || ray_workers < 1) {
    return BadInput(err, "nightly",
                    "--jobs in [1, 256], --max-devices in [1, 512], --ray-workers >= 1");
  }
  options.jobs = jobs;
  options.max_devices = devices;
  options.ray_workers = ray_workers;
  options.source_dir = SpmdcheckDataDir();
  options.spmdcheck_binary = SelfBinary();
  options.libfuzzer_dir = flags.libfuzzer_dir.value_or(options.source_dir + "/build-fuzz/fuzz");
  options.libfuzzer_dir = std::filesystem::absolute(options.libfuzzer_dir, ec).string();
  for (const std::string& t : flags.libfuzzer_targets) {
    if (t.empty()) continue;
    const std::vector<std::string>& known = nightly::LibFuzzerTargets();
    if (std::find(known.begin(), known.end(), t) == known.end()) {
      return BadInput(err, "nightly", absl::StrCat("unknown libFuzzer target '", t, "'"));
    }
    options.libfuzzer_targets.emplace_back(t);
  }
  options.canary_bug = flags.canary_bug;
  if (!target::IsInjectableBug(options.canary_bug)) {
    return BadInput(
        err, "nightly",
        "--canary-bug: no injected bug '" + options.canary_bug + "' (spmdcheck fuzz --list-bugs)");
  }
  options.canary_signature = flags.canary_signature;
  options.inject_bug = flags.inject_bug;
  if (!options.inject_bug.empty() && !target::IsInjectableBug(options.inject_bug)) {
    return BadInput(
        err, "nightly",
        "--inject-bug: no injected bug '" + options.inject_bug + "' (spmdcheck fuzz --list-bugs)");
  }
  if (flags.canary_seconds.has_value()) {
    options.canary_seconds = *flags.canary_seconds;
    if (!(options.canary_seconds >= 1)) {
      return BadInput(err, "nightly", "--canary-seconds takes a number of seconds >= 1");
    }
  }
  if (flags.reduce_seconds.has_value()) {
    // (> 0: spmdcheck fuzz's reducer takes 0 as "no limit".)
    options.reduce_seconds = *flags.reduce_seconds;
    if (!(options.reduce_seconds > 0)) {
      return BadInput(err, "nightly", "--reduce-seconds takes a number of seconds > 0");
    }
  }
  options.ray_address = flags.ray;
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
