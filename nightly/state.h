// The nightly job's state directory: what survives between nights and across a kill.
//
// DIR/
//   state.json                   the nights in order (schema spmdcheck-nightly-state/1)
//   findings.json                the findings database, one entry per signature
//   findings/<signature>/        the kept folder of each finding (module.hlo, repro.py, ... or
//                                the libFuzzer input and its log)
//   corpora/<libFuzzer target>/  the kept corpus of each libFuzzer target (merged every night)
//   nights/<night>/night.json    the night's record: plan, per-target progress and results
//   nights/<night>/<target>/     the runs of one target (attempt-K/ per start; logs, outputs)
//   report.md, report.html, report.json, junit.xml   the reports of the latest night
// Every JSON file is written atomically (a temporary file in the same directory, fsync, rename):
// a kill leaves either the old or the new content.
#ifndef SPMDCHECK_NIGHTLY_STATE_H_
#define SPMDCHECK_NIGHTLY_STATE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace spmdcheck::nightly {

// Reads a JSON file: NotFound when absent, InvalidArgument (naming the file) when malformed.
// (State files are written with base::WriteFileAtomic.)
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// One target of a night and how far it got. Kinds: "canary" (the reference partitioner with an
// injected bug, which must be found), "campaign" (`spmdcheck fuzz --partitioner P`),
// "libfuzzer" (one libFuzzer binary).
struct TargetRun {
  std::string name;         // "canary", "reference", "xla", "shardy", "libfuzzer.fuzz_reshard"
  std::string kind;         // "canary", "campaign", "libfuzzer"
  std::string partitioner;  // Campaigns: the --partitioner spec.
  double budget_seconds = 0;
  double spent_seconds = 0;  // Updated while it runs (a heartbeat), so a resume knows the rest.
  int attempts = 0;          // Starts (a resume starts an interrupted target again).
  // "pending", "running" (or interrupted while running), "done", "unknown" (could not be run:
  // not built, XLA unavailable, no time left), "error" (the run itself failed).
  std::string status = "pending";
  std::string reason;   // For unknown and error; for done, a note.
  int64_t pid = 0;      // The child process while running (a resume kills a stale one).
  uint64_t seed = 0;    // Of the last attempt.
  std::string command;  // The last command run.
  int exit_code = -1;
  // Results (summed over attempts where that makes sense).
  int64_t cases = 0;
  double cases_per_second = 0;
  double acceptance_rate = -1;  // Share of partitionings that produced a module; -1: none.
  int64_t execs = 0;            // libFuzzer: inputs run.
  double execs_per_second = 0;
  int64_t coverage = -1;  // libFuzzer: `cov:` (edges) of the kept corpus after the merge.
  int64_t features = -1;  // libFuzzer: `ft:`.
  int64_t corpus_files = -1;
  int64_t new_corpus_files = 0;         // Added to the kept corpus by tonight's merge.
  std::vector<std::string> signatures;  // Seen tonight (canary: what it found).

  bool finished() const { return status == "done" || status == "unknown" || status == "error"; }
  nlohmann::json ToJson() const;
  static TargetRun FromJson(const nlohmann::json& json);
};

struct NightRecord {
  std::string id;
  uint64_t seed = 0;
  // "running" (also after a kill: resumable), "complete", "broken" (the canary missed its bug
  // or could not run), "interrupted" (a later night started without resuming it).
  std::string status = "running";
  std::string started;   // UTC, ISO 8601.
  std::string finished;  // Empty while running.
  double budget_seconds = 0;
  std::string canary_bug;
  std::string canary_signature;  // Expected; empty: any bug claim.
  std::string inject_bug;        // A drill: switched on in the reference campaign too.
  std::vector<TargetRun> targets;

  TargetRun* Find(const std::string& name);
  const TargetRun* Find(const std::string& name) const;
  double SpentSeconds() const;
  nlohmann::json ToJson() const;
  static absl::StatusOr<NightRecord> FromJson(const nlohmann::json& json);
};

// What one night saw of one signature (from one target).
struct Observation {
  std::string signature;
  std::string target;
  int64_t count = 1;  // Cases (campaigns) or inputs (libFuzzer) with this signature.
  bool bug_claim = true;
  std::string known_as;  // A finding of corpus/xla-findings it matches, or empty.
  std::string message;
  std::string reproduce;
  std::string folder;  // The kept folder, relative to DIR (findings/<signature>).
};

struct FindingEntry {
  std::string signature;
  std::string first_night;
  std::string last_night;
  std::map<std::string, int64_t> counts_by_night;  // Night -> cases that night.
  std::set<std::string> targets;
  std::string folder;
  bool bug_claim = true;
  std::string known_as;
  std::string message;
  std::string reproduce;

  int64_t count() const;
  int64_t nights_seen() const { return static_cast<int64_t>(counts_by_night.size()); }
  // New in `night`: first seen that night and not a known finding of corpus/xla-findings.
  bool NewIn(const std::string& night) const { return first_night == night && known_as.empty(); }
  nlohmann::json ToJson() const;
  static FindingEntry FromJson(const nlohmann::json& json);
};

// The findings of every night, deduplicated by signature across targets and nights.
class FindingsDb {
 public:
  // Replaces what `night` contributed by `seen` (so recording a night again, after a resume,
  // changes nothing but what is new); `night_order` lists every night in order, for first/last.
  void RecordNight(const std::string& night, const std::vector<std::string>& night_order,
                   const std::vector<Observation>& seen);
  const std::map<std::string, FindingEntry>& entries() const { return entries_; }
  nlohmann::json ToJson() const;
  static absl::StatusOr<FindingsDb> FromJson(const nlohmann::json& json);

 private:
  std::map<std::string, FindingEntry> entries_;
};

// The directory and its files.
class StateDir {
 public:
  explicit StateDir(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }
  std::string StatePath() const { return root_ + "/state.json"; }
  std::string FindingsPath() const { return root_ + "/findings.json"; }
  std::string NightDir(const std::string& night) const { return root_ + "/nights/" + night; }
  std::string NightPath(const std::string& night) const { return NightDir(night) + "/night.json"; }
  std::string TargetDir(const std::string& night, const std::string& target) const {
    return NightDir(night) + "/" + target;
  }
  std::string CorpusDir(const std::string& libfuzzer_target) const {
    return root_ + "/corpora/" + libfuzzer_target;
  }
  // Relative to the root (what the database stores).
  static std::string KeptFindingFolder(const std::string& signature);

  // The nights in order (empty for a new directory).
  absl::StatusOr<std::vector<std::string>> LoadNights() const;
  absl::Status SaveNights(const std::vector<std::string>& nights) const;
  absl::StatusOr<NightRecord> LoadNight(const std::string& night) const;
  absl::Status SaveNight(const NightRecord& night) const;
  absl::StatusOr<FindingsDb> LoadFindings() const;  // Empty when absent.
  absl::Status SaveFindings(const FindingsDb& db) const;

 private:
  std::string root_;
};

// A name usable as a night id and a directory: [A-Za-z0-9._-]+, not starting with '.'.
bool ValidNightName(absl::string_view name);
// The date (UTC, YYYY-MM-DD) and, when that is taken, YYYY-MM-DD.2, .3, ...
std::string NewNightId(const std::string& date, const std::vector<std::string>& existing);
// The default seed of a night: a hash of its id (printed, so that a night can be rerun).
uint64_t SeedForNight(const std::string& night);
// The seed of attempt `attempt` (1, 2, ...) of a target: attempt 1 uses the night's seed, later
// ones (after a resume) other cases.
uint64_t SeedForAttempt(uint64_t night_seed, int attempt);
std::string UtcNow();
std::string UtcDate();

}  // namespace spmdcheck::nightly

#endif  // SPMDCHECK_NIGHTLY_STATE_H_
