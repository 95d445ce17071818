// How a collective's replica_groups name devices (XLA's CollectiveOpGroupMode, spec §3.2): the
// one definition the verifier, shape inference, the oracle and the partitioner share.
#ifndef SPMDCHECK_IR_COLLECTIVE_GROUP_MODE_H_
#define SPMDCHECK_IR_COLLECTIVE_GROUP_MODE_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"

namespace spmdcheck {

enum class CollectiveGroupMode {
  kCrossReplica,              // No channel_id: replica ids, one instance per partition.
  kCrossPartition,            // channel_id on an op without use_global_device_ids: partition ids.
  kCrossReplicaAndPartition,  // channel_id, use_global_device_ids=false: replica ids x all
                              // partitions.
  kFlattenedId,               // channel_id, use_global_device_ids=true: flattened ids
                              // (replica * num_partitions + partition).
};

// `cross-replica`, `cross-partition`, `cross-replica-and-partition`, `flattened-id`.
absl::string_view CollectiveGroupModeName(CollectiveGroupMode mode);

// True for the ops that carry a use_global_device_ids flag (all-reduce(-start),
// all-gather(-start), reduce-scatter); the others (all-to-all, collective-permute(-start),
// collective-broadcast) are cross-partition whenever they have a channel_id.
bool HasGlobalDeviceIdsFlag(HloOpcode opcode);

// The mode of `instruction`'s groups; nullopt when use_global_device_ids=true comes without a
// channel_id. The flag on an op that has none is ignored here (the oracle refuses it).
std::optional<CollectiveGroupMode> CollectiveGroupModeOf(const HloInstruction& instruction);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_COLLECTIVE_GROUP_MODE_H_
