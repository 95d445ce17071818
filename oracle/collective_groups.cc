#include "oracle/collective_groups.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/replica_groups.h"
#include "oracle/kernel_util.h"

namespace spmdcheck::oracle {
namespace {

// Largest replica_count * num_partitions we simulate.
constexpr int64_t kMaxDevices = int64_t{1} << 20;

bool IsCollectivePermute(HloOpcode opcode) {
  return opcode == HloOpcode::kCollectivePermute || opcode == HloOpcode::kCollectivePermuteStart;
}

absl::string_view IdKind(GroupMode mode) {
  switch (mode) {
    case GroupMode::kCrossReplica:
    case GroupMode::kCrossReplicaAndPartition:
      return "replica id";
    case GroupMode::kCrossPartition:
      return "partition id";
    case GroupMode::kFlattenedId:
      return "flattened id";
  }
  return "id";
}

}  // namespace

absl::StatusOr<GroupMode> GroupModeOf(const HloInstruction& instruction) {
  if (!HasGlobalDeviceIdsFlag(instruction.opcode()) &&
      instruction.attrs().use_global_device_ids.value_or(false)) {
    return InstructionError(instruction, absl::StrCat(HloOpcodeString(instruction.opcode()),
                                                      " has no use_global_device_ids attribute"));
  }
  std::optional<GroupMode> mode = CollectiveGroupModeOf(instruction);
  if (!mode.has_value()) {
    return InstructionError(instruction, "use_global_device_ids=true requires a channel_id");
  }
  return *mode;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> CollectiveGroups(
    const HloInstruction& instruction, int64_t num_partitions, int64_t replica_count) {
  if (!IsCollective(instruction.opcode())) {
    return InstructionError(instruction, "not a collective with participant groups");
  }
  if (num_partitions < 1 || replica_count < 1) {
    return InstructionError(instruction,
                            absl::StrCat("invalid device counts: num_partitions=", num_partitions,
                                         ", replica_count=", replica_count));
  }
  if (num_partitions > kMaxDevices || replica_count > kMaxDevices / num_partitions) {
    return Unsupported(instruction, absl::StrCat("more than ", kMaxDevices, " devices"));
  }
  const int64_t P = num_partitions;
  const int64_t R = replica_count;
  absl::StatusOr<GroupMode> mode_or = GroupModeOf(instruction);
  if (!mode_or.ok()) return mode_or.status();
  const GroupMode mode = *mode_or;

  ReplicaGroups written;
  if (IsCollectivePermute(instruction.opcode())) {
    if (instruction.attrs().replica_groups && !instruction.attrs().replica_groups->empty()) {
      return InstructionError(instruction,
                              "collective-permute takes source_target_pairs, not replica_groups");
    }
  } else {
    written = instruction.attrs().replica_groups.value_or(ReplicaGroups());
  }

  int64_t id_limit = 0;
  switch (mode) {
    case GroupMode::kCrossReplica:
    case GroupMode::kCrossReplicaAndPartition:
      id_limit = R;
      break;
    case GroupMode::kCrossPartition:
      id_limit = P;
      break;
    case GroupMode::kFlattenedId:
      id_limit = R * P;
      break;
  }

  // The groups as written, in ids of the mode.
  std::vector<std::vector<int64_t>> id_groups;
  if (written.empty()) {
    if (mode == GroupMode::kFlattenedId) {
      return InstructionError(instruction,
                              "empty replica_groups are not allowed in flattened-id mode "
                              "(channel_id with use_global_device_ids=true)");
    }
    std::vector<int64_t> all(id_limit);
    for (int64_t i = 0; i < id_limit; ++i) all[i] = i;
    id_groups.push_back(std::move(all));
  } else {
    // Read entry by entry (never materialising a hostile iota); any list longer than id_limit
    // must repeat an id or leave the range, and stops at the first such entry.
    std::vector<char> seen(id_limit, 0);
    const int64_t num_groups = written.num_groups();
    const std::optional<IotaTileAssignment>& iota = written.iota();
    if (iota && iota->dims().size() != 2) {
      return InstructionError(instruction, absl::StrCat("iota replica_groups ", iota->ToString(),
                                                        " must have two dims [groups, size]"));
    }
    std::vector<std::vector<int64_t>> explicit_groups;
    if (!iota) explicit_groups = written.groups();
    for (int64_t g = 0; g < num_groups; ++g) {
      const int64_t size = iota ? iota->dims()[1] : static_cast<int64_t>(explicit_groups[g].size());
      if (size == 0) {
        return InstructionError(instruction, absl::StrCat("replica group ", g, " is empty"));
      }
      std::vector<int64_t> members;
      for (int64_t i = 0; i < size; ++i) {
        const int64_t id = iota ? iota->ValueAtLinear(g * size + i) : explicit_groups[g][i];
        if (id < 0 || id >= id_limit) {
          return InstructionError(
              instruction, absl::StrCat(IdKind(mode), " ", id, " in replica_groups ",
                                        written.ToString(), " is out of range [0, ", id_limit,
                                        ") in ", CollectiveGroupModeName(mode),
                                        " mode (replica_count=", R, ", num_partitions=", P, ")"));
        }
        if (seen[id]) {
          return InstructionError(
              instruction,
              absl::StrCat(IdKind(mode), " ", id, " appears more than once in replica_groups ",
                           written.ToString()));
        }
        seen[id] = 1;
        members.push_back(id);
      }
      id_groups.push_back(std::move(members));
    }
    for (int64_t id = 0; id < id_limit; ++id) {
      if (!seen[id]) {
        return InstructionError(
            instruction, absl::StrCat(IdKind(mode), " ", id, " is in no group of replica_groups ",
                                      written.ToString(), " (", CollectiveGroupModeName(mode),
                                      " mode, replica_count=", R, ", num_partitions=", P, ")"));
      }
    }
  }

  std::vector<std::vector<int64_t>> out;
  switch (mode) {
    case GroupMode::kCrossReplica:
      for (const auto& group : id_groups) {
        for (int64_t p = 0; p < P; ++p) {
          std::vector<int64_t> members;
          members.reserve(group.size());
          for (int64_t r : group) members.push_back(r * P + p);
          out.push_back(std::move(members));
        }
      }
      break;
    case GroupMode::kCrossPartition:
      for (const auto& group : id_groups) {
        for (int64_t r = 0; r < R; ++r) {
          std::vector<int64_t> members;
          members.reserve(group.size());
          for (int64_t p : group) members.push_back(r * P + p);
          out.push_back(std::move(members));
        }
      }
      break;
    case GroupMode::kCrossReplicaAndPartition:
      for (const auto& group : id_groups) {
        std::vector<int64_t> members;
        members.reserve(group.size() * P);
        for (int64_t r : group) {
          for (int64_t p = 0; p < P; ++p) members.push_back(r * P + p);
        }
        out.push_back(std::move(members));
      }
      break;
    case GroupMode::kFlattenedId:
      out = std::move(id_groups);
      break;
  }
  return out;
}

}  // namespace spmdcheck::oracle
