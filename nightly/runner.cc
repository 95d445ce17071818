#include "nightly/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/file.h"
#include "base/process.h"
#include "nightly/libfuzzer.h"
#include "nightly/report.h"
#include "nightly/state.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::nightly {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The file's last `max_bytes` (a log may have run away), or "" when it cannot be read.
std::string ReadText(const std::string& path, size_t max_bytes = size_t{4} << 20) {
  return base::ReadFileTail(path, max_bytes).value_or("");
}

int64_t CountFiles(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  int64_t n = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) ++n;
  }
  return n;
}

std::string Quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos) return arg;
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (const std::string& a : argv) quoted.push_back(Quote(a));
  return absl::StrJoin(quoted, " ");
}

// Holds an exclusive lock on DIR/.lock for the life of the run (a killed run's lock goes with it).
class DirLock {
 public:
  static absl::StatusOr<std::unique_ptr<DirLock>> Take(const std::string& dir) {
    const std::string path = dir + "/.lock";
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot open ", path));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      return absl::FailedPreconditionError(absl::StrCat(
          "another `spmdcheck nightly` is running on ", dir, " (", path, " is locked)"));
    }
    return std::unique_ptr<DirLock>(new DirLock(fd));
  }
  ~DirLock() { close(fd_); }

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

// Kills the process group of a child a killed run left behind (still fuzzing into the night's
// directory), when /proc says it is one of ours.
void KillStaleChild(int64_t pid, const std::string& night_dir, std::ostream& out) {
  if (pid <= 0) return;
  const std::string cmdline = ReadText(absl::StrCat("/proc/", pid, "/cmdline"));
  if (cmdline.find(night_dir) == std::string::npos) return;
  out << "  stopping process " << pid << " left running by the killed run\n";
  kill(-static_cast<pid_t>(pid), SIGKILL);
  kill(static_cast<pid_t>(pid), SIGKILL);
  for (int i = 0; i < 50 && fs::exists(absl::StrCat("/proc/", pid)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Copies a finding folder into the state directory once (to a temporary name, then renamed, so
// that a folder that is there is whole).
void KeepFolder(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (from.empty() || fs::exists(to, ec) || !fs::is_directory(from, ec)) return;
  const std::string temp = to + ".tmp";
  fs::remove_all(temp, ec);
  fs::create_directories(fs::path(to).parent_path(), ec);
  fs::copy(from, temp, fs::copy_options::recursive, ec);
  if (!ec) fs::rename(temp, to, ec);
}

class Night {
 public:
  Night(const NightlyOptions& options, std::ostream& out)
      : options_(options), out_(out), state_(options.dir) {}

  absl::StatusOr<NightlyResult> Run();

 private:
  absl::Status Prepare();
  absl::Status RunTarget(TargetRun& target);
  absl::Status RunCampaign(TargetRun& target, double budget);
  absl::Status RunLibFuzzer(TargetRun& target, double budget);
  // Runs argv with stdout and stderr appended to `log`, for up to `timeout` seconds, saving the
  // night (the target's spent time) every couple of seconds.
  absl::StatusOr<base::ProcessResult> RunChild(TargetRun& target,
                                               const std::vector<std::string>& argv,
                                               const std::string& log, double timeout, bool track);
  absl::Status Save() { return state_.SaveNight(night_); }
  // Everything the night has on disk -> the findings database (idempotent).
  absl::Status Ingest();
  std::vector<Observation> CampaignObservations(const TargetRun& target);
  std::vector<Observation> LibFuzzerObservations(const TargetRun& target);
  void SummarizeCampaign(TargetRun& target);
  absl::Status AnalyzeArtifacts(TargetRun& target, const std::string& attempt_dir);
  absl::Status WriteAllReports(int exit_code);
  NightlyResult Result() const;
  bool Cancelled() const { return options_.cancel != nullptr && options_.cancel->load(); }
  std::string AttemptDir(const TargetRun& t, int attempt) const {
    return absl::StrCat(state_.TargetDir(night_.id, t.name), "/attempt-", attempt);
  }

  const NightlyOptions& options_;
  std::ostream& out_;
  StateDir state_;
  std::vector<std::string> nights_;
  NightRecord night_;
  FindingsDb db_;
  bool stopped_ = false;
};

absl::Status Night::Prepare() {
  absl::StatusOr<std::vector<std::string>> nights = state_.LoadNights();
  if (!nights.ok()) return nights.status();
  nights_ = *nights;
  absl::StatusOr<FindingsDb> db = state_.LoadFindings();
  if (!db.ok()) return db.status();
  db_ = *db;
  // The last night, when a killed (or stopped) run left it unfinished.
  std::optional<NightRecord> unfinished;
  if (!nights_.empty()) {
    absl::StatusOr<NightRecord> last = state_.LoadNight(nights_.back());
    if (!last.ok() && !absl::IsNotFound(last.status())) return last.status();
    if (last.ok() && last->status == "running") unfinished = *last;
  }
  if (options_.resume && unfinished.has_value()) {
    night_ = *unfinished;
    out_ << "resuming night " << night_.id << " (seed " << night_.seed << "): "
         << absl::StrFormat("%.0f", std::max(0.0, night_.budget_seconds - night_.SpentSeconds()))
         << "s of " << absl::StrFormat("%.0f", night_.budget_seconds) << "s left\n";
    for (TargetRun& t : night_.targets) {
      if (t.status == "running") {
        KillStaleChild(t.pid, state_.NightDir(night_.id), out_);
        t.pid = 0;
      }
    }
    return Save();
  }
  if (options_.resume) {
    if (options_.seconds <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("no unfinished night to resume in ", options_.dir,
                       "; give the time of a new night (--hours, --minutes or --seconds)"));
    }
    out_ << "nothing to resume in " << options_.dir << ": a new night\n";
  }
  if (unfinished.has_value()) {
    // Not resumed: it stays as far as it got; what it found is kept.
    night_ = *unfinished;
    night_.status = "interrupted";
    night_.finished = UtcNow();
    for (TargetRun& t : night_.targets) {
      if (t.status == "running") KillStaleChild(t.pid, state_.NightDir(night_.id), out_);
    }
    if (absl::Status s = Save(); !s.ok()) return s;
    if (absl::Status s = Ingest(); !s.ok()) return s;
    out_ << "night " << night_.id << " was left unfinished: marked interrupted (--resume "
         << "continues a night)\n";
  }
  night_ = NightRecord();
  if (!options_.night.empty()) {
    if (std::find(nights_.begin(), nights_.end(), options_.night) != nights_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("night '", options_.night, "' already exists in ", options_.dir));
    }
    night_.id = options_.night;
  } else {
    night_.id = NewNightId(UtcDate(), nights_);
  }
  night_.seed = options_.seed.value_or(SeedForNight(night_.id));
  night_.started = UtcNow();
  night_.budget_seconds = options_.seconds;
  night_.inject_bug = options_.inject_bug;
  auto wants = [&](const std::string& t) {
    return std::find(options_.targets.begin(), options_.targets.end(), t) != options_.targets.end();
  };
  // The canary runs on the first campaign target whose partitioner takes injected bugs (ours).
  const auto canary_target =
      std::find_if(kCampaignTargets.begin(), kCampaignTargets.end(), [&](const std::string& t) {
        return wants(t) && target::AnySpecCan(t, &target::PartitionerCapabilities::injected_bugs);
      });
  if (canary_target != kCampaignTargets.end()) {
    night_.canary_bug = options_.canary_bug;
    night_.canary_signature = options_.canary_signature.empty()
                                  ? CanarySignatureFor(options_.canary_bug)
                                  : options_.canary_signature;
    TargetRun canary;
    canary.name = "canary";
    canary.kind = "canary";
    canary.partitioner = *canary_target;
    canary.budget_seconds = options_.canary_seconds > 0
                                ? options_.canary_seconds
                                : std::clamp(options_.seconds * 0.05, 3.0, 60.0);
    night_.targets.push_back(canary);
  }
  for (const std::string& p : kCampaignTargets) {
    if (!wants(p)) continue;
    TargetRun t;
    t.name = p;
    t.kind = "campaign";
    t.partitioner = p;
    night_.targets.push_back(t);
  }
  if (wants("libfuzzer")) {
    for (const std::string& name :
         options_.libfuzzer_targets.empty() ? LibFuzzerTargets() : options_.libfuzzer_targets) {
      TargetRun t;
      t.name = "libfuzzer." + name;
      t.kind = "libfuzzer";
      t.partitioner = name;
      // A binary that is not built is unknown from the start: its time goes to the others.
      const std::string binary = options_.libfuzzer_dir + "/" + name;
      if (access(binary.c_str(), X_OK) != 0) {
        t.status = "unknown";
        t.reason = "not built: no " + binary + " (scripts/fuzz-smoke builds build-fuzz/)";
      }
      night_.targets.push_back(t);
    }
  }
  // The plan: the canary's fixed share, the rest equally (a target that ends early leaves its
  // time to the next ones).
  double fixed = 0;
  int shared = 0;
  for (const TargetRun& t : night_.targets) {
    if (t.kind == "canary") {
      fixed += t.budget_seconds;
    } else if (!t.finished()) {
      ++shared;
    }
  }
  for (TargetRun& t : night_.targets) {
    if (t.kind == "canary") continue;
    t.budget_seconds =
        t.finished() ? 0.0 : std::max(0.0, options_.seconds - fixed) / std::max(shared, 1);
  }
  nights_.push_back(night_.id);
  if (absl::Status s = Save(); !s.ok()) return s;
  if (absl::Status s = state_.SaveNights(nights_); !s.ok()) return s;
  out_ << "night " << night_.id << " in " << options_.dir << ": seed " << night_.seed << ", "
       << absl::StrFormat("%.0f", night_.budget_seconds) << "s"
       << (night_.inject_bug.empty()
               ? ""
               : ", drill: injected bug " + night_.inject_bug + " in the reference campaign")
       << "\n";
  out_ << "plan:\n";
  for (const TargetRun& t : night_.targets) {
    out_ << absl::StrFormat("  %-30s %6.0fs", t.name, t.budget_seconds);
    if (t.status == "unknown") out_ << "  unknown: " << t.reason;
    if (t.kind == "canary") {
      out_ << "  reference with injected bug " << night_.canary_bug << ", must find "
           << (night_.canary_signature.empty() ? "a bug claim" : night_.canary_signature);
    }
    out_ << "\n";
  }
  out_.flush();
  return absl::OkStatus();
}

absl::StatusOr<base::ProcessResult> Night::RunChild(TargetRun& target,
                                                    const std::vector<std::string>& argv,
                                                    const std::string& log, double timeout,
                                                    bool track) {
  std::error_code ec;
  fs::create_directories(fs::path(log).parent_path(), ec);
  base::ProcessOptions process_options;
  process_options.env["SPMDCHECK_NIGHTLY_LOG"] = log;
  std::vector<std::string> shell = {"/bin/sh", "-c",
                                    "exec \"$0\" \"$@\" >>\"$SPMDCHECK_NIGHTLY_LOG\" 2>&1"};
  shell.insert(shell.end(), argv.begin(), argv.end());
  // The log's header line; when the log cannot be written the child's redirect says so.
  base::AppendFile(log, absl::StrCat("$ ", CommandLine(argv), "\n")).IgnoreError();
  absl::StatusOr<std::unique_ptr<base::ChildProcess>> child =
      base::ChildProcess::Start(shell, process_options);
  if (!child.ok()) return child.status();
  const double spent_before = target.spent_seconds;
  const Clock::time_point start = Clock::now();
  if (track) {
    target.pid = (*child)->pid();
    if (absl::Status s = Save(); !s.ok()) return s;
  }
  Clock::time_point last_save = start;
  bool timed_out = false;
  while ((*child)->running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (Cancelled()) {
      // The campaign's own SIGINT handling writes its summary; libFuzzer writes its stats.
      kill(static_cast<pid_t>((*child)->pid()), SIGINT);
      for (int i = 0; i < 100 && (*child)->running(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      (*child)->Kill();
      break;
    }
    if (SecondsSince(start) > timeout) {
      timed_out = true;
      (*child)->Kill();
      break;
    }
    if (track && SecondsSince(last_save) >= 2) {
      target.spent_seconds = spent_before + SecondsSince(start);
      if (absl::Status s = Save(); !s.ok()) return s;
      last_save = Clock::now();
    }
  }
  base::ProcessResult result = (*child)->Wait(5);
  result.timed_out = result.timed_out || timed_out;
  if (track) {
    target.spent_seconds = spent_before + SecondsSince(start);
    target.pid = 0;
  }
  return result;
}

absl::Status Night::RunTarget(TargetRun& target) {
  // Its share of what is left: the canary its fixed time, the others the rest over the targets
  // not finished yet.
  double budget = target.budget_seconds;
  if (target.kind != "canary") {
    double fixed_left = 0;
    int open = 0;
    for (const TargetRun& t : night_.targets) {
      if (t.finished()) continue;
      if (t.kind == "canary") {
        fixed_left += std::max(0.0, t.budget_seconds - t.spent_seconds);
      } else {
        ++open;
      }
    }
    const double left = night_.budget_seconds - night_.SpentSeconds() - fixed_left;
    budget = std::max(0.0, left) / std::max(open, 1);
    target.budget_seconds = target.spent_seconds + budget;
  } else if (target.attempts > 0) {
    budget = target.budget_seconds;  // A canary starts over: it must find its bug in one run.
  }
  if (budget < 1) {
    target.status = "unknown";
    target.reason = "no time left in the night";
    out_ << "  " << target.name << ": unknown (no time left)\n";
    return Save();
  }
  ++target.attempts;
  target.seed = SeedForAttempt(night_.seed, target.attempts);
  target.status = "running";
  out_ << absl::StrFormat("%s: %.0fs, seed %d%s\n", target.name, budget, target.seed,
                          target.attempts > 1 ? absl::StrCat(", attempt ", target.attempts) : "");
  out_.flush();
  if (absl::Status s = Save(); !s.ok()) return s;
  absl::Status status =
      target.kind == "libfuzzer" ? RunLibFuzzer(target, budget) : RunCampaign(target, budget);
  if (!status.ok()) return status;
  if (Cancelled()) {
    target.status = "running";  // Resumable: starts again with the time left.
    stopped_ = true;
  }
  if (absl::Status s = Save(); !s.ok()) return s;
  return Ingest();
}

absl::Status Night::RunCampaign(TargetRun& target, double budget) {
  const std::string dir = AttemptDir(target, target.attempts);
  const int64_t seconds = std::max<int64_t>(1, static_cast<int64_t>(std::floor(budget)));
  std::vector<std::string> argv;
  const bool canary = target.kind == "canary";
  if (!options_.ray_address.empty() && !canary) {
    const std::string& script = options_.ray_driver;
    if (!fs::exists(script)) {
      target.status = "unknown";
      target.reason = "the Ray driver " + script + " is not there";
      out_ << "  " << target.name << ": unknown (" << target.reason << ")\n";
      return absl::OkStatus();
    }
    argv = {options_.xla_python,
            script,
            "--address",
            options_.ray_address,
            "--spmdcheck",
            options_.spmdcheck_binary,
            "--out",
            dir,
            "--seconds",
            absl::StrCat(seconds),
            "--seed",
            absl::StrCat(target.seed),
            "--partitioner",
            target.partitioner,
            "--workers",
            absl::StrCat(options_.ray_workers),
            "--jobs-per-worker",
            absl::StrCat(options_.jobs),
            "--max-devices",
            absl::StrCat(options_.max_devices)};
  } else {
    argv = {options_.spmdcheck_binary,
            "fuzz",
            "--partitioner",
            target.partitioner,
            "--seconds",
            absl::StrCat(seconds),
            "--seed",
            absl::StrCat(target.seed),
            "--max-devices",
            absl::StrCat(options_.max_devices),
            "--jobs",
            absl::StrCat(options_.jobs),
            "--out",
            dir};
  }
  // Flags the Ray driver passes on to its shards as they are.
  {
    if (canary) {
      argv.insert(argv.end(), {"--inject-bug", night_.canary_bug, "--reduce-seconds", "1"});
    } else {
      if (!night_.inject_bug.empty() &&
          target::AnySpecCan(target.partitioner, &target::PartitionerCapabilities::injected_bugs)) {
        argv.insert(argv.end(), {"--inject-bug", night_.inject_bug});
      }
      // A new finding's reduction runs past the campaign's time: bounded to a quarter of the
      // target's share (spmdcheck fuzz's default, 10 s for ours and 90 s with XLA, at most).
      double reduce = options_.reduce_seconds;
      if (reduce < 0) {
        reduce =
            std::min(target::ReduceSecondsOf(target.partitioner), std::max(2.0, budget * 0.25));
      }
      argv.insert(argv.end(),
                  {"--reduce-seconds", absl::StrCat(static_cast<int64_t>(std::ceil(reduce)))});
    }
  }
  target.command = CommandLine(argv);
  // A campaign at its limit finishes the reduction in hand (90 s with XLA).
  const double timeout = static_cast<double>(seconds) * 1.25 + 150;
  absl::StatusOr<base::ProcessResult> result =
      RunChild(target, argv, dir + "/campaign.log", timeout, /*track=*/true);
  if (!result.ok()) {
    target.status = "error";
    target.reason = std::string(result.status().message());
    return absl::OkStatus();
  }
  target.exit_code = result->exited() ? result->exit_code : -1;
  SummarizeCampaign(target);
  if (Cancelled()) return absl::OkStatus();
  absl::StatusOr<nlohmann::json> summary = ReadJsonFile(dir + "/summary.json");
  const std::string unavailable =
      summary.ok() ? summary->value("unavailable", std::string()) : std::string();
  if (!unavailable.empty()) {
    target.status = "unknown";
    target.reason = unavailable;
  } else if (!result->exited()) {
    target.status = "error";
    target.reason = "the campaign " + result->Describe() + " (log " + dir + "/campaign.log)";
  } else if (result->exit_code == 2) {
    target.status = "error";
    target.reason = "the campaign failed (exit 2, log " + dir + "/campaign.log)";
  } else if (!summary.ok()) {
    target.status = "error";
    target.reason = "no summary.json (log " + dir + "/campaign.log)";
  } else {
    target.status = "done";
    target.reason.clear();
  }
  out_ << absl::StrFormat("  %s: %s, %d cases (%.1f/s)%s\n", target.name, target.status,
                          target.cases, target.cases_per_second,
                          target.reason.empty() ? "" : ": " + target.reason);
  return absl::OkStatus();
}

// Cases, rates and signatures of a campaign target over its attempts (summary.json of each; an
// attempt killed before writing one adds only the findings it wrote).
void Night::SummarizeCampaign(TargetRun& target) {
  int64_t cases = 0, accepted = 0, partitionings = 0;
  double elapsed = 0;
  std::set<std::string> signatures;
  for (int attempt = 1; attempt <= target.attempts; ++attempt) {
    const std::string dir = AttemptDir(target, attempt);
    absl::StatusOr<nlohmann::json> summary = ReadJsonFile(dir + "/summary.json");
    if (summary.ok()) {
      // Throughput over the time spent on cases (reductions left out: they depend on what a
      // night finds); summed over jobs in the summary.
      const int64_t n = summary->value("cases", int64_t{0});
      const double jobs = std::max<double>(1.0, summary->value("jobs", 1.0));
      const nlohmann::json times = summary->value("times", nlohmann::json::object());
      const double case_seconds = times.value("cases", 0.0) / jobs;
      cases += n;
      elapsed += case_seconds > 0 ? case_seconds : summary->value("elapsed_seconds", 0.0);
      const nlohmann::json per_partitioner =
          summary->value("per_partitioner", nlohmann::json::object());
      for (const auto& [spec, p] : per_partitioner.items()) {
        accepted += p.value("accepted", int64_t{0});
        partitionings += p.value("cases", int64_t{0});
      }
      for (const nlohmann::json& f : summary->value("findings", nlohmann::json::array())) {
        signatures.insert(f.value("signature", std::string()));
      }
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      absl::StatusOr<nlohmann::json> finding = ReadJsonFile(e.path().string() + "/finding.json");
      if (finding.ok()) signatures.insert(finding->value("signature", std::string()));
    }
  }
  signatures.erase("");
  target.cases = cases;
  target.cases_per_second = elapsed > 0 ? static_cast<double>(cases) / elapsed : 0;
  target.acceptance_rate =
      partitionings > 0 ? static_cast<double>(accepted) / static_cast<double>(partitionings) : -1;
  target.signatures.assign(signatures.begin(), signatures.end());
}

absl::Status Night::RunLibFuzzer(TargetRun& target, double budget) {
  const std::string name = target.partitioner;
  const std::string binary = options_.libfuzzer_dir + "/" + name;
  if (access(binary.c_str(), X_OK) != 0) {
    target.status = "unknown";
    target.reason = "not built: no " + binary + " (scripts/fuzz-smoke builds build-fuzz/)";
    out_ << "  " << target.name << ": unknown (" << target.reason << ")\n";
    return absl::OkStatus();
  }
  const std::string dir = AttemptDir(target, target.attempts);
  const std::string corpus = state_.CorpusDir(name);
  const std::string fresh = dir + "/new";
  const std::string artifacts = dir + "/artifacts/";
  std::error_code ec;
  for (const std::string& d : {corpus, fresh, artifacts}) fs::create_directories(d, ec);
  std::vector<std::string> seeds;
  for (const std::string& d : {options_.source_dir + "/corpus/" + name,
                               options_.source_dir + "/corpus/regressions-" + name}) {
    if (fs::is_directory(d, ec)) seeds.push_back(d);
  }
  const std::vector<std::string> flags = LibFuzzerTargetFlags(name, options_.source_dir);
  // Fuzzing gets most of the share; the merge and the coverage replay the rest.
  const int64_t fuzz_seconds = std::max<int64_t>(1, static_cast<int64_t>(budget * 0.8));
  std::vector<std::string> argv = {binary,
                                   absl::StrCat("-fork=", options_.jobs),
                                   "-ignore_crashes=1",
                                   "-ignore_timeouts=1",
                                   "-ignore_ooms=1",
                                   absl::StrCat("-max_total_time=", fuzz_seconds),
                                   absl::StrCat("-seed=", target.seed & 0x7fffffff),
                                   "-artifact_prefix=" + artifacts,
                                   "-print_final_stats=1"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(fresh);
  argv.push_back(corpus);
  argv.insert(argv.end(), seeds.begin(), seeds.end());
  target.command = CommandLine(argv);
  const int64_t corpus_before = CountFiles(corpus);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<base::ProcessResult> fuzzed = RunChild(
      target, argv, dir + "/fuzz.log", static_cast<double>(fuzz_seconds) + 60, /*track=*/true);
  const double fuzz_time = SecondsSince(start);
  if (!fuzzed.ok()) {
    target.status = "error";
    target.reason = std::string(fuzzed.status().message());
    return absl::OkStatus();
  }
  target.exit_code = fuzzed->exited() ? fuzzed->exit_code : -1;
  const LibFuzzerStats stats = ParseLibFuzzerStats(ReadText(dir + "/fuzz.log"));
  if (stats.execs > 0) {
    target.execs += stats.execs;
    target.execs_per_second = fuzz_time > 0 ? static_cast<double>(stats.execs) / fuzz_time : 0;
  }
  if (Cancelled()) return absl::OkStatus();
  // The merge: what tonight found that adds coverage joins the kept corpus (resumable through
  // its control file).
  std::vector<std::string> merge = {binary, "-merge=1", "-merge_control_file=" + dir + "/merge.ctl",
                                    "-artifact_prefix=" + artifacts};
  merge.insert(merge.end(), flags.begin(), flags.end());
  merge.push_back(corpus);
  // Tonight's new inputs, those of attempts a kill interrupted included.
  for (int attempt = 1; attempt <= target.attempts; ++attempt) {
    const std::string d = AttemptDir(target, attempt) + "/new";
    if (fs::is_directory(d, ec)) merge.push_back(d);
  }
  merge.insert(merge.end(), seeds.begin(), seeds.end());
  absl::StatusOr<base::ProcessResult> merged =
      RunChild(target, merge, dir + "/merge.log", std::max(60.0, budget), /*track=*/true);
  if (!merged.ok() || !merged->exited() || merged->exit_code != 0) {
    target.status = "error";
    target.reason = "the corpus merge failed (log " + dir + "/merge.log)";
    return absl::OkStatus();
  }
  target.new_corpus_files += CountFiles(corpus) - corpus_before;
  // The kept corpus's coverage: one pass over it.
  std::vector<std::string> replay = {binary, "-runs=0"};
  replay.insert(replay.end(), flags.begin(), flags.end());
  replay.push_back(corpus);
  absl::StatusOr<base::ProcessResult> replayed =
      RunChild(target, replay, dir + "/coverage.log", std::max(60.0, budget), /*track=*/true);
  if (replayed.ok()) {
    const LibFuzzerStats kept = ParseLibFuzzerStats(ReadText(dir + "/coverage.log"));
    target.coverage = kept.coverage;
    target.features = kept.features;
  }
  target.corpus_files = CountFiles(corpus);
  // The crash inputs of every attempt (one a kill interrupted wrote some before its analysis).
  for (int attempt = 1; attempt <= target.attempts; ++attempt) {
    if (absl::Status s = AnalyzeArtifacts(target, AttemptDir(target, attempt)); !s.ok()) return s;
  }
  if (Cancelled()) return absl::OkStatus();
  target.status = "done";
  target.reason.clear();
  out_ << absl::StrFormat(
      "  %s: %d execs (%.0f/s), coverage %d, features %d, corpus %d (+%d), %d finding(s)\n",
      target.name, target.execs, target.execs_per_second, target.coverage, target.features,
      target.corpus_files, target.new_corpus_files, target.signatures.size());
  return absl::OkStatus();
}

// Each crash, leak, timeout or OOM input of an attempt: replayed once for its stack (the
// signature), kept as findings/<signature>/ with its log, a minimized input (crashes) and the
// commands that reproduce it. The results are cached in the attempt's artifacts.json.
absl::Status Night::AnalyzeArtifacts(TargetRun& target, const std::string& attempt_dir) {
  const std::string name = target.partitioner;
  const std::string binary = options_.libfuzzer_dir + "/" + name;
  const std::string cache_path = attempt_dir + "/artifacts.json";
  absl::StatusOr<nlohmann::json> cached = ReadJsonFile(cache_path);
  nlohmann::json cache = cached.ok() ? *cached : nlohmann::json::object();
  const std::vector<std::string> flags = LibFuzzerTargetFlags(name, options_.source_dir);
  std::error_code ec;
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(attempt_dir + "/artifacts", ec)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const std::string file_name = file.filename().string();
    const std::string kind = ArtifactKind(file_name);
    if (kind.empty() || kind == "slow-unit" || cache.contains(file_name)) continue;
    if (Cancelled()) break;
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back(file.string());
    const std::string log = absl::StrCat(attempt_dir, "/replay-", file_name, ".log");
    absl::StatusOr<base::ProcessResult> replayed =
        RunChild(target, argv, log, 120, /*track=*/false);
    CrashInfo crash;
    if (replayed.ok() && replayed->exited() && replayed->exit_code == 0) {
      crash.kind = kind;
      crash.summary = "did not fail when replayed alone (flaky, or needs the fuzzing state)";
    } else {
      crash = ParseCrash(ReadText(log));
      if (crash.kind == "crash" && kind != "crash") crash.kind = kind;
    }
    const std::string signature = LibFuzzerSignature(name, crash);
    const std::string kept_rel = StateDir::KeptFindingFolder(signature);
    const std::string kept = options_.dir + "/" + kept_rel;
    const std::string reproduce = CommandLine({binary, kept + "/input"});
    if (!fs::exists(kept, ec)) {
      const std::string temp = kept + ".tmp";
      fs::remove_all(temp, ec);
      fs::create_directories(temp, ec);
      fs::copy_file(file, temp + "/input", fs::copy_options::overwrite_existing, ec);
      fs::copy_file(log, temp + "/log.txt", fs::copy_options::overwrite_existing, ec);
      if (kind == "crash") {
        // Reduced: libFuzzer's crash minimization, a few seconds.
        std::vector<std::string> minimize = {binary, "-minimize_crash=1", "-max_total_time=10",
                                             "-exact_artifact_path=" + temp + "/input.min"};
        minimize.insert(minimize.end(), flags.begin(), flags.end());
        minimize.push_back(file.string());
        (void)RunChild(target, minimize, temp + "/minimize.log", 60, /*track=*/false);
      }
      nlohmann::json finding = {
          {"signature", signature},
          {"target", name},
          {"kind", crash.kind},
          {"frames", crash.frames},
          {"summary", crash.summary},
          {"artifact", file.string()},
          {"minimized", fs::exists(temp + "/input.min", ec) ? "input.min" : ""},
          {"reproduce", reproduce},
          {"replay_without_sanitizers",
           absl::StrCat("build/fuzz/", name, "_replay ", kept, "/input")},
          {"regression",
           absl::StrCat("cp ", kept, "/input corpus/regressions-", name, "/<what-it-is>")}};
      if (absl::Status s = base::WriteFileAtomic(temp + "/finding.json", finding.dump(2) + "\n");
          !s.ok()) {
        return s;
      }
      fs::rename(temp, kept, ec);
      if (ec) return absl::UnavailableError(absl::StrCat("cannot write ", kept));
    }
    cache[file_name] = {{"signature", signature},
                        {"kind", crash.kind},
                        {"summary", crash.summary},
                        {"folder", kept_rel},
                        {"reproduce", reproduce}};
    if (absl::Status s = base::WriteFileAtomic(cache_path, cache.dump(2) + "\n"); !s.ok()) return s;
    out_ << "  " << target.name << ": " << file_name << " -> " << signature << "\n";
  }
  std::set<std::string> signatures(target.signatures.begin(), target.signatures.end());
  for (const auto& [file_name, info] : cache.items()) {
    signatures.insert(info.value("signature", std::string()));
  }
  signatures.erase("");
  target.signatures.assign(signatures.begin(), signatures.end());
  return absl::OkStatus();
}

std::vector<Observation> Night::CampaignObservations(const TargetRun& target) {
  std::map<std::string, Observation> seen;
  for (int attempt = 1; attempt <= target.attempts; ++attempt) {
    const std::string dir = AttemptDir(target, attempt);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    // The findings the campaign wrote (also those of a campaign killed before its summary).
    std::map<std::string, std::string> folders;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      absl::StatusOr<nlohmann::json> finding = ReadJsonFile(e.path().string() + "/finding.json");
      if (!finding.ok()) continue;
      const std::string signature = finding->value("signature", std::string());
      if (signature.empty()) continue;
      folders[signature] = e.path().string();
      Observation& o = seen[signature];
      if (o.signature.empty()) {
        o.signature = signature;
        o.target = target.name;
        o.count = 0;
        o.bug_claim = finding->value("bug_claim", true);
        o.message = finding->value("message", std::string());
        o.reproduce = finding->value("reproduce", std::string());
      }
    }
    absl::StatusOr<nlohmann::json> summary = ReadJsonFile(dir + "/summary.json");
    std::set<std::string> counted;
    if (summary.ok()) {
      for (const nlohmann::json& f : summary->value("findings", nlohmann::json::array())) {
        const std::string signature = f.value("signature", std::string());
        if (signature.empty()) continue;
        Observation& o = seen[signature];
        if (o.signature.empty()) {
          o.signature = signature;
          o.target = target.name;
          o.count = 0;
          o.bug_claim = f.value("bug_claim", true);
          o.message = f.value("message", std::string());
        }
        o.known_as = f.value("known_as", std::string());
        o.count += f.value("count", int64_t{1});
        counted.insert(signature);
      }
    }
    for (const auto& [signature, folder] : folders) {
      if (!counted.count(signature)) seen[signature].count += 1;  // Killed: at least one case.
      const std::string kept_rel = StateDir::KeptFindingFolder(signature);
      KeepFolder(folder, options_.dir + "/" + kept_rel);
      seen[signature].folder = kept_rel;
    }
  }
  std::vector<Observation> list;
  for (auto& [signature, o] : seen) list.push_back(o);
  return list;
}

std::vector<Observation> Night::LibFuzzerObservations(const TargetRun& target) {
  std::map<std::string, Observation> seen;
  for (int attempt = 1; attempt <= target.attempts; ++attempt) {
    absl::StatusOr<nlohmann::json> cache =
        ReadJsonFile(AttemptDir(target, attempt) + "/artifacts.json");
    if (!cache.ok()) continue;
    for (const auto& [file_name, info] : cache->items()) {
      const std::string signature = info.value("signature", std::string());
      Observation& o = seen[signature];
      if (o.signature.empty()) {
        o.signature = signature;
        o.target = target.name;
        o.count = 0;
        o.bug_claim = true;
        o.message = info.value("summary", std::string());
        o.reproduce = info.value("reproduce", std::string());
        o.folder = info.value("folder", std::string());
      }
      ++o.count;
    }
  }
  std::vector<Observation> list;
  for (auto& [signature, o] : seen) list.push_back(o);
  return list;
}

absl::Status Night::Ingest() {
  std::vector<Observation> all;
  for (TargetRun& t : night_.targets) {
    if (t.attempts == 0) continue;
    if (t.kind == "campaign") {
      std::vector<Observation> seen = CampaignObservations(t);
      if (t.status == "running") SummarizeCampaign(t);  // Interrupted: what it wrote so far.
      all.insert(all.end(), seen.begin(), seen.end());
    } else if (t.kind == "libfuzzer") {
      std::vector<Observation> seen = LibFuzzerObservations(t);
      all.insert(all.end(), seen.begin(), seen.end());
    } else if (t.kind == "canary") {
      SummarizeCampaign(t);  // Its findings are the injected bug's: not in the database.
    }
  }
  db_.RecordNight(night_.id, nights_, all);
  if (absl::Status s = state_.SaveFindings(db_); !s.ok()) return s;
  return Save();
}

NightlyResult Night::Result() const {
  NightlyResult r;
  r.night = night_.id;
  r.status = night_.status;
  r.broken = night_.status == "broken";
  r.stopped = stopped_;
  for (const TargetRun& t : night_.targets) {
    if (t.status == "unknown" || t.status == "error") ++r.unknown_targets;
  }
  for (const auto& [signature, e] : db_.entries()) {
    if (!e.NewIn(night_.id)) continue;
    if (e.bug_claim) {
      ++r.new_bug_claims;
    } else if (!absl::StrContains(signature, ".wasteful.")) {
      ++r.new_to_investigate;
    }
  }
  return r;
}

absl::Status Night::WriteAllReports(int exit_code) {
  std::vector<NightRecord> records;
  for (const std::string& id : nights_) {
    if (id == night_.id) {
      records.push_back(night_);
      continue;
    }
    absl::StatusOr<NightRecord> record = state_.LoadNight(id);
    if (record.ok()) records.push_back(*record);
  }
  return WriteReports(options_.dir, BuildReport(records, db_, night_.id, exit_code));
}

absl::StatusOr<NightlyResult> Night::Run() {
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("cannot create ", options_.dir));
  absl::StatusOr<std::unique_ptr<DirLock>> lock = DirLock::Take(options_.dir);
  if (!lock.ok()) return lock.status();
  if (absl::Status s = Prepare(); !s.ok()) return s;
  for (TargetRun& target : night_.targets) {
    if (Cancelled()) {
      stopped_ = true;
      break;
    }
    if (target.finished()) continue;
    if (absl::Status s = RunTarget(target); !s.ok()) return s;
  }
  if (!stopped_) {
    const TargetRun* canary = night_.Find("canary");
    night_.status = "complete";
    if (canary != nullptr) {
      bool found = false;
      for (const std::string& s : canary->signatures) {
        if (night_.canary_signature.empty() || s == night_.canary_signature) found = true;
      }
      if (!found) {
        night_.status = "broken";
        out_ << "BROKEN NIGHT: the canary did not find its injected bug " << night_.canary_bug
             << " (expected "
             << (night_.canary_signature.empty() ? "a bug claim" : night_.canary_signature)
             << "; found: "
             << (canary->signatures.empty() ? "nothing" : absl::StrJoin(canary->signatures, ", "))
             << (canary->reason.empty() ? "" : "; " + canary->reason) << ")\n";
      } else {
        out_ << "canary: found " << night_.canary_signature << " (injected " << night_.canary_bug
             << ")\n";
      }
    }
    night_.finished = UtcNow();
    if (absl::Status s = Ingest(); !s.ok()) return s;
  } else {
    if (absl::Status s = Ingest(); !s.ok()) return s;
    out_ << "stopped: night " << night_.id << " is resumable with --resume\n";
  }
  NightlyResult result = Result();
  if (absl::Status s = WriteAllReports(result.ExitCode()); !s.ok()) return s;
  int64_t new_count = 0, known_count = 0;
  for (const auto& [signature, e] : db_.entries()) {
    if (!e.counts_by_night.count(night_.id)) continue;
    if (e.NewIn(night_.id)) {
      ++new_count;
    } else {
      ++known_count;
    }
  }
  out_ << absl::StrFormat(
      "night %s: %s; findings tonight: %d new, %d known; %d target(s) unknown\n", night_.id,
      night_.status, new_count, known_count, result.unknown_targets);
  out_ << "reports: " << options_.dir << "/report.md, report.html, report.json, junit.xml\n";
  return result;
}

}  // namespace

int NightlyResult::ExitCode() const {
  if (new_bug_claims > 0) return 1;
  if (broken || stopped || unknown_targets > 0 || new_to_investigate > 0) return 3;
  return 0;
}

std::string CanarySignatureFor(const std::string& bug) {
  if (bug == "dot-padding-unmasked") return "wrong-result.all-reduce";
  return "";
}

absl::StatusOr<NightlyResult> RunNightly(const NightlyOptions& options, std::ostream& out) {
  Night night(options, out);
  return night.Run();
}

}  // namespace spmdcheck::nightly
