// `spmdcheck fuzz [--seconds T] [--cases K] [--seed S] [--max-devices N] [--inject-bug NAME]
// [--out DIR] [--jobs J] [--list-bugs]`: the generate -> partition -> check campaign (see
// docs/fuzz.md).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fuzz/campaign.h"
#include "partitioner/injected_bugs.h"
#include "tools/cli.h"
#include "tools/partitioner_flags.h"

namespace spmdcheck::cli {
namespace {

constexpr char kFuzzHelp[] =
    R"(usage: spmdcheck fuzz [--partitioner SPEC[,SPEC...]] [--seconds T] [--cases K] [--seed S]
                      [--max-devices N] [--inject-bug NAME] [--out DIR] [--jobs J] [--list-bugs]

Generates sharded programs (seeded; case i of seed S is always the same program), partitions
each with every partitioner under test (default: reference; xla and shardy run XLA's, one XLA
worker per job) and checks it as `spmdcheck check` does. Each new failure signature is reduced
and written as DIR/<signature>.hlo with a header saying how to reproduce it. For XLA only
miscompiles confirmed by XLA's own execution, crashes and rejections are failures; what only
our oracle sees is listed "to investigate".
  --seconds T        stop after T seconds (default 60)
  --cases K          stop after K cases (default: no limit)
  --seed S           campaign seed (default 1), printed in the summary and every repro
  --max-devices N    largest mesh (default 8)
  --inject-bug NAME  switch on an injected partitioner bug (see --list-bugs)
  --out DIR          where repros go (default fuzz-out)
  --jobs J           worker threads (default 1)
  --list-bugs        list the injectable bugs and exit
Ctrl-C (SIGINT) or SIGTERM stops the campaign at once and prints the summary so far; a second
one kills it.
Exit codes: 0 no failure, 1 failures found (repros written), 2 bad input or a repro that could
not be written, 3 stopped by a signal before its limit with no failure.
)";

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
  std::set<std::string> value_flags = {"--seconds",     "--cases", "--seed",
                                       "--max-devices", "--out",   "--jobs"};
  value_flags.insert(kPartitionerValueFlags.begin(), kPartitionerValueFlags.end());
  absl::StatusOr<Args> args = Args::Parse(argv, value_flags, {"--list-bugs", "--help"});
  if (!args.ok()) return BadInput(err, "fuzz", args.status().message());
  if (args->Has("--help")) {
    out << kFuzzHelp << kPartitionerFlagsHelp;
    return kExitHolds;
  }
  if (args->Has("--list-bugs")) {
    for (const partitioner::InjectedBug& bug : partitioner::InjectedBugs()) {
      out << bug.name << ": " << bug.description << "\n";
    }
    return kExitHolds;
  }
  if (!args->positional().empty()) {
    err << kFuzzHelp;
    return kExitBadInput;
  }
  absl::StatusOr<int64_t> seconds = args->GetInt("--seconds", args->Has("--cases") ? 0 : 60);
  absl::StatusOr<int64_t> cases = args->GetInt("--cases", 0);
  absl::StatusOr<uint64_t> seed = args->GetUint64("--seed", 1);
  absl::StatusOr<int64_t> devices = args->GetInt("--max-devices", 8);
  absl::StatusOr<int64_t> jobs = args->GetInt("--jobs", 1);
  for (const auto* value : {&seconds, &cases, &devices, &jobs}) {
    if (!value->ok()) return BadInput(err, "fuzz", value->status().message());
  }
  if (!seed.ok()) return BadInput(err, "fuzz", seed.status().message());
  if (*seconds < 0 || *cases < 0 || *devices < 1 || *devices > 512 || *jobs < 1 || *jobs > 256) {
    return BadInput(
        err, "fuzz",
        "--seconds/--cases must be >= 0, --max-devices in [1, 512], --jobs in [1, 256]");
  }
  absl::StatusOr<PartitionerChoice> choice = PartitionerChoiceFromArgs(*args);
  if (!choice.ok()) return BadInput(err, "fuzz", choice.status().message());
  fuzz::CampaignOptions options;
  options.partitioners = choice->specs;
  options.target = choice->options;
  // PartitionerChoice's flags include --inject-bug; the campaign prints that one itself.
  options.reproduce_flags = choice->reproduce_flags;
  if (!choice->options.inject_bug.empty()) {
    const std::string bug_flag = " --inject-bug " + choice->options.inject_bug;
    const size_t at = options.reproduce_flags.find(bug_flag);
    if (at != std::string::npos) options.reproduce_flags.erase(at, bug_flag.size());
  }
  options.seconds = static_cast<double>(*seconds);
  options.cases = *cases;
  options.seed = static_cast<uint64_t>(*seed);
  options.max_devices = *devices;
  options.inject_bug = args->Get("--inject-bug").value_or("");
  options.out_dir = args->Get("--out").value_or("fuzz-out");
  options.jobs = *jobs;
  options.cancel = &interrupted;
  const bool tty = isatty(fileno(stderr)) != 0;
  double last_log = 0;
  out << "spmdcheck fuzz: partitioners " << options.partitioners << ", seed " << options.seed
      << ", max devices " << options.max_devices
      << (options.inject_bug.empty() ? "" : ", injected bug " + options.inject_bug) << ", "
      << options.jobs << " job(s)\n";
  out.flush();
  StopSignals stop_signals;
  absl::StatusOr<fuzz::CampaignReport> report =
      fuzz::RunCampaign(options, [&](const fuzz::CampaignProgress& p) {
        const std::string line = absl::StrFormat(
            "cases %d (%.0f/s), failures %d, unsupported %d, elapsed %.0fs", p.cases,
            p.elapsed > 0 ? p.cases / p.elapsed : 0.0, p.failures, p.unsupported, p.elapsed);
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
  out << "reproduce: spmdcheck fuzz"
      << (options.partitioners == "reference" ? "" : " --partitioner " + options.partitioners)
      << options.reproduce_flags << " --seed " << options.seed << " --max-devices "
      << options.max_devices
      << (options.inject_bug.empty() ? "" : " --inject-bug " + options.inject_bug)
      << (options.cases > 0 ? absl::StrCat(" --cases ", options.cases)
                            : absl::StrCat(" --seconds ", *seconds))
      << "\n";
  for (const fuzz::CampaignFailure& f : report->failures) {
    if (f.claim) return kExitFails;
  }
  if (!report->unavailable.empty()) {
    err << "spmdcheck fuzz: unknown: " << report->unavailable << "\n";
    return kExitUnknown;
  }
  return report->stopped || !report->failures.empty() ? kExitUnknown : kExitHolds;
}

}  // namespace spmdcheck::cli
