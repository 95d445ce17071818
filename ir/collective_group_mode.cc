#include "ir/collective_group_mode.h"

namespace spmdcheck {

absl::string_view CollectiveGroupModeName(CollectiveGroupMode mode) {
  switch (mode) {
    case CollectiveGroupMode::kCrossReplica:
      return "cross-replica";
    case CollectiveGroupMode::kCrossPartition:
      return "cross-partition";
    case CollectiveGroupMode::kCrossReplicaAndPartition:
      return "cross-replica-and-partition";
    case CollectiveGroupMode::kFlattenedId:
      return "flattened-id";
  }
  return "";
}

bool HasGlobalDeviceIdsFlag(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kReduceScatter:
      return true;
    default:
      return false;
  }
}

std::optional<CollectiveGroupMode> CollectiveGroupModeOf(const HloInstruction& instruction) {
  const HloAttributes& attrs = instruction.attrs();
  const bool has_channel = attrs.channel_id.has_value();
  const bool global_ids = attrs.use_global_device_ids.value_or(false);
  if (!HasGlobalDeviceIdsFlag(instruction.opcode())) {
    return has_channel ? CollectiveGroupMode::kCrossPartition : CollectiveGroupMode::kCrossReplica;
  }
  if (!has_channel) {
    if (global_ids) return std::nullopt;
    return CollectiveGroupMode::kCrossReplica;
  }
  return global_ids ? CollectiveGroupMode::kFlattenedId
                    : CollectiveGroupMode::kCrossReplicaAndPartition;
}

}  // namespace spmdcheck
