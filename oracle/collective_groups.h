// Participant groups of a collective instruction (spec §3.2): which flattened devices
// (replica * num_partitions + partition) take part in each instance of the collective, in rank
// order.
#ifndef SPMDCHECK_ORACLE_COLLECTIVE_GROUPS_H_
#define SPMDCHECK_ORACLE_COLLECTIVE_GROUPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/collective_group_mode.h"
#include "ir/hlo_module.h"

namespace spmdcheck::oracle {

// How the ids in replica_groups are read: ir/collective_group_mode.h.
using GroupMode = CollectiveGroupMode;

// The group mode of a collective. InvalidArgument (naming the instruction) for
// use_global_device_ids=true without a channel_id, or the flag on an op that has none.
absl::StatusOr<GroupMode> GroupModeOf(const HloInstruction& instruction);

// Every instance of the collective as a list of flattened device ids in rank order. Empty
// replica_groups mean one group of everyone per mode (collective-permute(-start) always uses this:
// its rendezvous is every replica, resp. every partition of a replica, whatever its pairs).
// Every device in [0, replica_count * num_partitions) is in exactly one group. InvalidArgument
// naming the instruction for: an id twice, an id out of range, an empty group, a device in no
// group, use_global_device_ids without channel_id, empty groups in flattened-id mode.
absl::StatusOr<std::vector<std::vector<int64_t>>> CollectiveGroups(
    const HloInstruction& instruction, int64_t num_partitions, int64_t replica_count);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_COLLECTIVE_GROUPS_H_
