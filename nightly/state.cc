#include "nightly/state.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file.h"
#include "check/signature.h"

namespace spmdcheck::nightly {
namespace {

template <typename T>
T Get(const nlohmann::json& json, const char* key, T fallback) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return fallback;
  return it->get<T>();
}

}  // namespace

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return text.status();
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  return json;
}

nlohmann::json TargetRun::ToJson() const {
  return {{"name", name},
          {"kind", kind},
          {"partitioner", partitioner},
          {"budget_seconds", budget_seconds},
          {"spent_seconds", spent_seconds},
          {"attempts", attempts},
          {"status", status},
          {"reason", reason},
          {"pid", pid},
          {"seed", seed},
          {"command", command},
          {"exit_code", exit_code},
          {"cases", cases},
          {"cases_per_second", cases_per_second},
          {"acceptance_rate", acceptance_rate},
          {"execs", execs},
          {"execs_per_second", execs_per_second},
          {"coverage", coverage},
          {"features", features},
          {"corpus_files", corpus_files},
          {"new_corpus_files", new_corpus_files},
          {"signatures", signatures}};
}

TargetRun TargetRun::FromJson(const nlohmann::json& json) {
  TargetRun t;
  t.name = Get<std::string>(json, "name", "");
  t.kind = Get<std::string>(json, "kind", "");
  t.partitioner = Get<std::string>(json, "partitioner", "");
  t.budget_seconds = Get<double>(json, "budget_seconds", 0);
  t.spent_seconds = Get<double>(json, "spent_seconds", 0);
  t.attempts = Get<int>(json, "attempts", 0);
  t.status = Get<std::string>(json, "status", "pending");
  t.reason = Get<std::string>(json, "reason", "");
  t.pid = Get<int64_t>(json, "pid", 0);
  t.seed = Get<uint64_t>(json, "seed", 0);
  t.command = Get<std::string>(json, "command", "");
  t.exit_code = Get<int>(json, "exit_code", -1);
  t.cases = Get<int64_t>(json, "cases", 0);
  t.cases_per_second = Get<double>(json, "cases_per_second", 0);
  t.acceptance_rate = Get<double>(json, "acceptance_rate", -1);
  t.execs = Get<int64_t>(json, "execs", 0);
  t.execs_per_second = Get<double>(json, "execs_per_second", 0);
  t.coverage = Get<int64_t>(json, "coverage", -1);
  t.features = Get<int64_t>(json, "features", -1);
  t.corpus_files = Get<int64_t>(json, "corpus_files", -1);
  t.new_corpus_files = Get<int64_t>(json, "new_corpus_files", 0);
  t.signatures = Get<std::vector<std::string>>(json, "signatures", {});
  return t;
}

TargetRun* NightRecord::Find(const std::string& name) {
  for (TargetRun& t : targets) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const TargetRun* NightRecord::Find(const std::string& name) const {
  for (const TargetRun& t : targets) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

double NightRecord::SpentSeconds() const {
  double spent = 0;
  for (const TargetRun& t : targets) spent += t.spent_seconds;
  return spent;
}

nlohmann::json NightRecord::ToJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const TargetRun& t : targets) list.push_back(t.ToJson());
  return {{"schema", "spmdcheck-nightly-night/1"},
          {"id", id},
          {"seed", seed},
          {"status", status},
          {"started", started},
          {"finished", finished},
          {"budget_seconds", budget_seconds},
          {"canary_bug", canary_bug},
          {"canary_signature", canary_signature},
          {"inject_bug", inject_bug},
          {"targets", list}};
}

absl::StatusOr<NightRecord> NightRecord::FromJson(const nlohmann::json& json) {
  if (Get<std::string>(json, "schema", "") != "spmdcheck-nightly-night/1") {
    return absl::InvalidArgumentError("not a night record (schema spmdcheck-nightly-night/1)");
  }
  NightRecord n;
  try {
    n.id = Get<std::string>(json, "id", "");
    n.seed = Get<uint64_t>(json, "seed", 0);
    n.status = Get<std::string>(json, "status", "running");
    n.started = Get<std::string>(json, "started", "");
    n.finished = Get<std::string>(json, "finished", "");
    n.budget_seconds = Get<double>(json, "budget_seconds", 0);
    n.canary_bug = Get<std::string>(json, "canary_bug", "");
    n.canary_signature = Get<std::string>(json, "canary_signature", "");
    n.inject_bug = Get<std::string>(json, "inject_bug", "");
    for (const nlohmann::json& t : json.value("targets", nlohmann::json::array())) {
      n.targets.push_back(TargetRun::FromJson(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed night record: ", e.what()));
  }
  if (!ValidNightName(n.id)) return absl::InvalidArgumentError("night record without a valid id");
  return n;
}

int64_t FindingEntry::count() const {
  int64_t total = 0;
  for (const auto& [night, n] : counts_by_night) total += n;
  return total;
}

nlohmann::json FindingEntry::ToJson() const {
  return {{"signature", signature},   {"first_night", first_night},
          {"last_night", last_night}, {"nights_seen", nights_seen()},
          {"count", count()},         {"counts_by_night", counts_by_night},
          {"targets", targets},       {"folder", folder},
          {"bug_claim", bug_claim},   {"known_as", known_as},
          {"message", message},       {"reproduce", reproduce}};
}

FindingEntry FindingEntry::FromJson(const nlohmann::json& json) {
  FindingEntry e;
  e.signature = Get<std::string>(json, "signature", "");
  e.first_night = Get<std::string>(json, "first_night", "");
  e.last_night = Get<std::string>(json, "last_night", "");
  e.counts_by_night = Get<std::map<std::string, int64_t>>(json, "counts_by_night", {});
  e.targets = Get<std::set<std::string>>(json, "targets", {});
  e.folder = Get<std::string>(json, "folder", "");
  e.bug_claim = Get<bool>(json, "bug_claim", true);
  e.known_as = Get<std::string>(json, "known_as", "");
  e.message = Get<std::string>(json, "message", "");
  e.reproduce = Get<std::string>(json, "reproduce", "");
  return e;
}

void FindingsDb::RecordNight(const std::string& night, const std::vector<std::string>& night_order,
                             const std::vector<Observation>& seen) {
  // Forget what this night contributed before, then add what it saw.
  for (auto& [signature, entry] : entries_) entry.counts_by_night.erase(night);
  for (const Observation& o : seen) {
    FindingEntry& e = entries_[o.signature];
    if (e.signature.empty()) {
      e.signature = o.signature;
      e.bug_claim = o.bug_claim;
    }
    e.counts_by_night[night] += std::max<int64_t>(o.count, 1);
    e.targets.insert(o.target);
    if (e.folder.empty()) e.folder = o.folder;
    if (e.known_as.empty()) e.known_as = o.known_as;
    if (e.message.empty()) e.message = o.message;
    if (e.reproduce.empty()) e.reproduce = o.reproduce;
  }
  auto rank = [&](const std::string& n) {
    auto it = std::find(night_order.begin(), night_order.end(), n);
    return it == night_order.end() ? night_order.size()
                                   : static_cast<size_t>(it - night_order.begin());
  };
  for (auto it = entries_.begin(); it != entries_.end();) {
    FindingEntry& e = it->second;
    if (e.counts_by_night.empty()) {
      it = entries_.erase(it);
      continue;
    }
    e.first_night.clear();
    e.last_night.clear();
    for (const auto& [n, count] : e.counts_by_night) {
      if (e.first_night.empty() || rank(n) < rank(e.first_night)) e.first_night = n;
      if (e.last_night.empty() || rank(n) > rank(e.last_night)) e.last_night = n;
    }
    ++it;
  }
}

nlohmann::json FindingsDb::ToJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [signature, entry] : entries_) list.push_back(entry.ToJson());
  return {{"schema", "spmdcheck-nightly-findings/1"}, {"findings", list}};
}

absl::StatusOr<FindingsDb> FindingsDb::FromJson(const nlohmann::json& json) {
  if (Get<std::string>(json, "schema", "") != "spmdcheck-nightly-findings/1") {
    return absl::InvalidArgumentError("not a findings database (spmdcheck-nightly-findings/1)");
  }
  FindingsDb db;
  try {
    for (const nlohmann::json& f : json.value("findings", nlohmann::json::array())) {
      FindingEntry e = FindingEntry::FromJson(f);
      if (e.signature.empty()) return absl::InvalidArgumentError("a finding without a signature");
      db.entries_[e.signature] = std::move(e);
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed findings database: ", e.what()));
  }
  return db;
}

std::string StateDir::KeptFindingFolder(const std::string& signature) {
  return "findings/" + check::SanitizedName(signature);
}

absl::StatusOr<std::vector<std::string>> StateDir::LoadNights() const {
  absl::StatusOr<nlohmann::json> json = ReadJsonFile(StatePath());
  if (absl::IsNotFound(json.status())) return std::vector<std::string>{};
  if (!json.ok()) return json.status();
  if (Get<std::string>(*json, "schema", "") != "spmdcheck-nightly-state/1") {
    return absl::InvalidArgumentError(
        absl::StrCat(StatePath(), ": not a nightly state (schema spmdcheck-nightly-state/1)"));
  }
  try {
    std::vector<std::string> nights = Get<std::vector<std::string>>(*json, "nights", {});
    for (const std::string& n : nights) {
      if (!ValidNightName(n)) {
        return absl::InvalidArgumentError(absl::StrCat(StatePath(), ": bad night id '", n, "'"));
      }
    }
    return nights;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(StatePath(), ": ", e.what()));
  }
}

absl::Status StateDir::SaveNights(const std::vector<std::string>& nights) const {
  nlohmann::json json = {{"schema", "spmdcheck-nightly-state/1"}, {"nights", nights}};
  return base::WriteFileAtomic(StatePath(), json.dump(2) + "\n");
}

absl::StatusOr<NightRecord> StateDir::LoadNight(const std::string& night) const {
  absl::StatusOr<nlohmann::json> json = ReadJsonFile(NightPath(night));
  if (!json.ok()) return json.status();
  absl::StatusOr<NightRecord> record = NightRecord::FromJson(*json);
  if (!record.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(NightPath(night), ": ", record.status().message()));
  }
  return record;
}

absl::Status StateDir::SaveNight(const NightRecord& night) const {
  return base::WriteFileAtomic(NightPath(night.id), night.ToJson().dump(2) + "\n");
}

absl::StatusOr<FindingsDb> StateDir::LoadFindings() const {
  absl::StatusOr<nlohmann::json> json = ReadJsonFile(FindingsPath());
  if (absl::IsNotFound(json.status())) return FindingsDb{};
  if (!json.ok()) return json.status();
  absl::StatusOr<FindingsDb> db = FindingsDb::FromJson(*json);
  if (!db.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(FindingsPath(), ": ", db.status().message()));
  }
  return db;
}

absl::Status StateDir::SaveFindings(const FindingsDb& db) const {
  return base::WriteFileAtomic(FindingsPath(), db.ToJson().dump(2) + "\n");
}

bool ValidNightName(absl::string_view name) {
  if (name.empty() || name.size() > 100 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string NewNightId(const std::string& date, const std::vector<std::string>& existing) {
  auto taken = [&](const std::string& id) {
    return std::find(existing.begin(), existing.end(), id) != existing.end();
  };
  if (!taken(date)) return date;
  for (int k = 2;; ++k) {
    std::string id = absl::StrCat(date, ".", k);
    if (!taken(id)) return id;
  }
}

uint64_t SeedForNight(const std::string& night) {
  // FNV-1a, folded to 31 bits so that libFuzzer's -seed (an unsigned int) takes it as is.
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : night) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  const uint64_t seed = (hash ^ (hash >> 31) ^ (hash >> 62)) & 0x7fffffffull;
  return seed == 0 ? 1 : seed;
}

uint64_t SeedForAttempt(uint64_t night_seed, int attempt) {
  return attempt <= 1 ? night_seed : night_seed + 7919 * static_cast<uint64_t>(attempt - 1);
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm = {};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string UtcDate() { return UtcNow().substr(0, 10); }

}  // namespace spmdcheck::nightly
