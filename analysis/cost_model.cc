#include "analysis/cost_model.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/replica_groups.h"

namespace spmdcheck::analysis {
namespace {

int64_t OperandBytes(const HloInstruction& instruction) {
  int64_t bytes = 0;
  for (const HloInstruction* operand : instruction.operands()) {
    const Shape& s = operand->shape();
    if (s.IsArray()) {
      bytes += s.ByteSize();
    } else if (s.IsTuple()) {
      for (const Shape& e : s.tuple_shapes()) {
        if (e.IsArray()) bytes += e.ByteSize();
      }
    }
  }
  return bytes;
}

// Devices (partition ids) in each group; the whole set of partitions when groups are empty.
std::vector<std::vector<int64_t>> PartitionGroups(const HloInstruction& instruction,
                                                  int64_t num_partitions) {
  std::vector<std::vector<int64_t>> groups;
  if (instruction.attrs().replica_groups.has_value()) {
    groups = instruction.attrs().replica_groups->groups();
  }
  if (groups.empty()) {
    std::vector<int64_t> all(num_partitions);
    for (int64_t i = 0; i < num_partitions; ++i) all[i] = i;
    groups.push_back(all);
  }
  for (auto& g : groups) {
    for (int64_t& d : g) d %= std::max<int64_t>(num_partitions, 1);
  }
  return groups;
}

// The charge for `bytes` moving between partitions a and b.
int64_t Weighted(const DomainWeights* weights, int64_t a, int64_t b, int64_t bytes) {
  if (weights == nullptr) return bytes;
  const auto domain = [&](int64_t d) {
    return d < static_cast<int64_t>(weights->domain_of.size()) ? weights->domain_of[d] : -1 - d;
  };
  return domain(a) == domain(b) ? bytes : bytes * weights->cross_factor;
}

// `bytes` a device of `group` exchanges, spread evenly over its peers, weighted.
int64_t WeightedGroupBytes(const DomainWeights* weights, const std::vector<int64_t>& group,
                           int64_t device, int64_t bytes) {
  if (weights == nullptr || group.size() < 2) return bytes;
  const int64_t peers = static_cast<int64_t>(group.size()) - 1;
  int64_t total = 0;
  for (int64_t peer : group) {
    if (peer != device) total += Weighted(weights, device, peer, bytes);
  }
  return total / peers;
}

// Fills per-device receive/send bytes of one collective.
void AccumulateDeviceBytes(const HloInstruction& instruction, int64_t num_partitions,
                           std::vector<int64_t>& recv, std::vector<int64_t>& send,
                           const DomainWeights* weights = nullptr) {
  const int64_t b = OperandBytes(instruction);
  switch (instruction.opcode()) {
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart: {
      if (!instruction.attrs().source_target_pairs.has_value()) return;
      for (const auto& [source, target] : *instruction.attrs().source_target_pairs) {
        if (source == target) continue;
        const int64_t w = Weighted(weights, source, target, b);
        if (target < num_partitions) recv[target] += w;
        if (source < num_partitions) send[source] += w;
      }
      return;
    }
    case HloOpcode::kCollectiveBroadcast: {
      for (const auto& group : PartitionGroups(instruction, num_partitions)) {
        for (size_t i = 0; i < group.size(); ++i) {
          if (i == 0) {
            for (size_t j = 1; j < group.size(); ++j) {
              send[group[i]] += Weighted(weights, group[0], group[j], b);
            }
          } else {
            recv[group[i]] += Weighted(weights, group[0], group[i], b);
          }
        }
      }
      return;
    }
    default:
      break;
  }
  for (const auto& group : PartitionGroups(instruction, num_partitions)) {
    const int64_t n = static_cast<int64_t>(group.size());
    int64_t bytes = 0;
    switch (instruction.opcode()) {
      case HloOpcode::kAllGather:
      case HloOpcode::kAllGatherStart:
        bytes = (n - 1) * b;
        break;
      case HloOpcode::kAllReduce:
      case HloOpcode::kAllReduceStart:
        bytes = n == 0 ? 0 : 2 * (n - 1) * b / n;
        break;
      case HloOpcode::kReduceScatter:
      case HloOpcode::kAllToAll:
      case HloOpcode::kRaggedAllToAll:
        bytes = n == 0 ? 0 : (n - 1) * b / n;
        break;
      default:
        return;
    }
    for (int64_t d : group) {
      const int64_t w = WeightedGroupBytes(weights, group, d, bytes);
      recv[d] += w;
      send[d] += w;
    }
  }
}

}  // namespace

CollectiveCost& CollectiveCost::operator+=(const CollectiveCost& other) {
  collectives += other.collectives;
  collective_permutes += other.collective_permutes;
  max_recv_bytes += other.max_recv_bytes;
  max_send_bytes += other.max_send_bytes;
  return *this;
}

std::string CollectiveCost::ToString() const {
  return absl::StrCat(collectives, " collective(s) (", collective_permutes,
                      " collective-permute), max bytes received per device ", max_recv_bytes,
                      ", sent ", max_send_bytes);
}

CollectiveCost CostOfInstruction(const HloInstruction& instruction, int64_t num_partitions) {
  CollectiveCost cost;
  if (!IsCollective(instruction.opcode()) || num_partitions <= 0) return cost;
  std::vector<int64_t> recv(num_partitions, 0), send(num_partitions, 0);
  AccumulateDeviceBytes(instruction, num_partitions, recv, send);
  cost.collectives = 1;
  const bool permute = instruction.opcode() == HloOpcode::kCollectivePermute ||
                       instruction.opcode() == HloOpcode::kCollectivePermuteStart;
  cost.collective_permutes = permute ? 1 : 0;
  cost.max_recv_bytes = *std::max_element(recv.begin(), recv.end());
  cost.max_send_bytes = *std::max_element(send.begin(), send.end());
  return cost;
}

ModuleCost CostOfModule(const HloModule& module, int64_t num_partitions,
                        const DomainWeights* weights) {
  ModuleCost cost;
  const int64_t n = std::max<int64_t>(num_partitions, 1);
  cost.recv_bytes_per_device.assign(n, 0);
  cost.send_bytes_per_device.assign(n, 0);
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (!IsCollective(instruction->opcode())) continue;
      ++cost.total.collectives;
      if (instruction->opcode() == HloOpcode::kCollectivePermute ||
          instruction->opcode() == HloOpcode::kCollectivePermuteStart) {
        ++cost.total.collective_permutes;
      }
      AccumulateDeviceBytes(*instruction, n, cost.recv_bytes_per_device, cost.send_bytes_per_device,
                            weights);
    }
  }
  cost.total.max_recv_bytes =
      *std::max_element(cost.recv_bytes_per_device.begin(), cost.recv_bytes_per_device.end());
  cost.total.max_send_bytes =
      *std::max_element(cost.send_bytes_per_device.begin(), cost.send_bytes_per_device.end());
  return cost;
}

}  // namespace spmdcheck::analysis
