#include "ir/replica_groups.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace spmdcheck {

ReplicaGroups::ReplicaGroups(std::vector<std::vector<int64_t>> groups)
    : explicit_groups_(std::move(groups)) {}

ReplicaGroups::ReplicaGroups(IotaTileAssignment iota) : iota_(std::move(iota)) {}

int64_t ReplicaGroups::num_groups() const {
  return iota_ ? iota_->dims()[0] : static_cast<int64_t>(explicit_groups_.size());
}

std::vector<int64_t> ReplicaGroups::group(int64_t g) const {
  if (!iota_) return explicit_groups_[g];
  const int64_t size = iota_->dims()[1];
  std::vector<int64_t> out(size);
  for (int64_t i = 0; i < size; ++i) out[i] = iota_->ValueAtLinear(g * size + i);
  return out;
}

std::vector<std::vector<int64_t>> ReplicaGroups::groups() const {
  if (!iota_) return explicit_groups_;
  std::vector<std::vector<int64_t>> out;
  for (int64_t g = 0; g < num_groups(); ++g) out.push_back(group(g));
  return out;
}

int64_t ReplicaGroups::first_group_size() const {
  if (iota_) return iota_->dims()[1];
  return explicit_groups_.empty() ? 0 : static_cast<int64_t>(explicit_groups_[0].size());
}

bool ReplicaGroups::UniformSize() const {
  if (iota_) return true;
  for (const auto& g : explicit_groups_) {
    if (g.size() != explicit_groups_[0].size()) return false;
  }
  return true;
}

int64_t ReplicaGroups::TotalEntries() const {
  if (iota_) return iota_->num_elements();
  int64_t total = 0;
  for (const auto& g : explicit_groups_) total += static_cast<int64_t>(g.size());
  return total;
}

std::string ReplicaGroups::ToString() const {
  if (iota_) return iota_->ToString();
  std::string out = "{";
  for (size_t i = 0; i < explicit_groups_.size(); ++i) {
    if (i > 0) out += ",";
    absl::StrAppend(&out, "{", absl::StrJoin(explicit_groups_[i], ","), "}");
  }
  out += "}";
  return out;
}

ReplicaGroups ReplicaGroups::Canonical() const {
  if (iota_ || explicit_groups_.empty() || !UniformSize()) return *this;
  const int64_t size = first_group_size();
  if (size == 0) return *this;
  std::vector<int64_t> flat;
  for (const auto& g : explicit_groups_) flat.insert(flat.end(), g.begin(), g.end());
  std::vector<int64_t> dims = {num_groups(), size};
  std::optional<IotaTileAssignment> iota = DetectIota(dims, flat);
  return iota ? ReplicaGroups(*iota) : *this;
}

bool ReplicaGroups::operator==(const ReplicaGroups& other) const {
  return groups() == other.groups();
}

absl::Status ValidateReplicaGroups(const ReplicaGroups& groups, int64_t expected_participants,
                                   bool require_uniform) {
  if (groups.empty()) return absl::OkStatus();
  absl::flat_hash_set<int64_t> seen;
  int64_t max_id = -1;
  for (int64_t g = 0; g < groups.num_groups(); ++g) {
    std::vector<int64_t> members = groups.group(g);
    if (members.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("replica group ", g, " is empty"));
    }
    for (int64_t id : members) {
      if (id < 0) return absl::InvalidArgumentError(absl::StrCat("negative id ", id));
      if (!seen.insert(id).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("id ", id, " appears in more than one replica group"));
      }
      max_id = std::max(max_id, id);
    }
    if (require_uniform && static_cast<int64_t>(members.size()) != groups.first_group_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica groups must have equal sizes: group 0 has ",
                       groups.first_group_size(), " members, group ", g, " has ", members.size()));
    }
  }
  const int64_t n = static_cast<int64_t>(seen.size());
  if (max_id + 1 != n) {
    for (int64_t id = 0; id < n; ++id) {
      if (!seen.contains(id)) {
        return absl::InvalidArgumentError(
            absl::StrCat("replica groups do not cover ids 0..", n - 1, ": id ", id, " is missing"));
      }
    }
  }
  if (expected_participants > 1 && n != expected_participants) {
    return absl::InvalidArgumentError(absl::StrCat("replica groups cover ", n,
                                                   " ids but the op has ", expected_participants,
                                                   " participants"));
  }
  return absl::OkStatus();
}

std::string SourceTargetPairsToString(const SourceTargetPairs& pairs) {
  std::string out = "{";
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i > 0) out += ",";
    absl::StrAppend(&out, "{", pairs[i].first, ",", pairs[i].second, "}");
  }
  out += "}";
  return out;
}

absl::Status ValidateSourceTargetPairs(const SourceTargetPairs& pairs, int64_t limit) {
  absl::flat_hash_set<int64_t> sources, targets;
  for (const auto& [source, target] : pairs) {
    for (int64_t id : {source, target}) {
      if (id < 0 || (limit > 1 && id >= limit)) {
        return absl::InvalidArgumentError(
            absl::StrCat("id ", id, " in source_target_pairs is out of range [0, ", limit, ")"));
      }
    }
    if (!sources.insert(source).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("source ", source, " appears more than once in source_target_pairs"));
    }
    if (!targets.insert(target).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("target ", target, " appears more than once in source_target_pairs"));
    }
  }
  return absl::OkStatus();
}

}  // namespace spmdcheck
