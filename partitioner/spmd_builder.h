// SpmdBuilder: adds the instructions of a partitioned computation (local arithmetic, partition-id
// offset tables, collectives with channel ids and global device ids) with unique names and
// explicit shapes. One builder per computation; ModuleBuildState is shared by all of them.
#ifndef SPMDCHECK_PARTITIONER_SPMD_BUILDER_H_
#define SPMDCHECK_PARTITIONER_SPMD_BUILDER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/hlo_attributes.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "ir/replica_groups.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck::partitioner {

// What every computation of one partitioned module shares.
struct ModuleBuildState {
  HloModule* module = nullptr;
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  int64_t next_channel_id = 1;
  // Scalar reducer computations by "opcode.type".
  std::map<std::string, HloComputation*> reducers;
  // The injected bug switched on (PartitionOptions::inject_bug), empty for none.
  std::string inject_bug;
  // Names of computations already in the module.
  absl::flat_hash_set<std::string> computation_names;
  std::string UniqueComputationName(absl::string_view base);
  // The global array value being resharded (its name), while one is: each reshard step's result
  // is recorded as holding it under the step's sharding, so that the oracle can check every step
  // and a wrong value is localised to the step that made it (PartitionResult::step_claims). A
  // tuple's leaf is named with its path, `sort.3{1}` (oracle::EquivOptions::HeldValue).
  std::string resharding;
  absl::flat_hash_map<const HloInstruction*, std::pair<std::string, HloSharding>> step_claims;
  // Per computation being built: the index of the first instruction the handler of the global
  // instruction being partitioned made.
  absl::flat_hash_map<const HloComputation*, int64_t> handler_start;
};

// Sets ModuleBuildState::resharding for its lifetime (nested scopes restore the outer one).
class ReshardingScope {
 public:
  ReshardingScope(ModuleBuildState* state, std::string global)
      : state_(state), outer_(std::exchange(state->resharding, std::move(global))) {}
  ~ReshardingScope() { state_->resharding = std::move(outer_); }
  ReshardingScope(const ReshardingScope&) = delete;
  ReshardingScope& operator=(const ReshardingScope&) = delete;

 private:
  ModuleBuildState* state_;
  std::string outer_;
};

class SpmdBuilder {
 public:
  // `reserved` names may not be given to helper instructions (the global names the partitioned
  // values will carry).
  SpmdBuilder(ModuleBuildState* state, HloComputation* computation,
              absl::flat_hash_set<std::string> reserved);

  HloComputation* computation() const { return computation_; }
  ModuleBuildState* state() const { return state_; }
  int64_t num_partitions() const { return state_->num_partitions; }
  // True when the named injected bug is switched on (see injected_bugs.h).
  bool Bug(absl::string_view name) const { return state_->inject_bug == name; }

  // Adds an instruction; `name` is made unique (and kept off the reserved names unless
  // `use_reserved`).
  HloInstruction* Add(HloOpcode opcode, Shape shape, std::vector<HloInstruction*> operands,
                      absl::string_view name, bool use_reserved = false);
  // Renames `instruction` to `name` when that name is free; returns whether it did.
  bool TryRename(HloInstruction* instruction, const std::string& name);
  // Marks a reserved name as taken.
  void Release(const std::string& name) { reserved_.erase(name); }

  HloInstruction* PartitionId();
  HloInstruction* ConstantLiteral(Literal literal, absl::string_view name = "constant");
  HloInstruction* ConstantScalar(PrimitiveType type, double value);
  HloInstruction* ConstantS32(int64_t value) { return ConstantScalar(PrimitiveType::kS32, value); }
  // This device's entry of a per-partition table, as an s32[] scalar (constant table +
  // dynamic-slice by partition-id + reshape); a constant when every entry is equal.
  HloInstruction* TableLookup(const std::vector<int64_t>& per_partition, absl::string_view name);

  HloInstruction* Reshape(HloInstruction* x, absl::Span<const int64_t> dims);
  HloInstruction* Copy(HloInstruction* x);
  HloInstruction* Slice(HloInstruction* x, const std::vector<SliceDim>& slice);
  // Slices [0, limit) of every dim (no-op when already that shape).
  HloInstruction* SliceToSize(HloInstruction* x, absl::Span<const int64_t> limits);
  HloInstruction* PadHigh(HloInstruction* x, absl::Span<const int64_t> high,
                          HloInstruction* pad_value);
  // Pads with zeros (the constant is only created when some dim grows).
  HloInstruction* PadHighWithZero(HloInstruction* x, absl::Span<const int64_t> high);
  // The identity of addition, -0.0 for floats (0 for integers): what a masked all-reduce(sum)
  // fills the other devices' part with, so that x + fill == x bit for bit (+0.0 would turn a
  // -0.0 into +0.0, which a total-order compare, a sort or a TopK then sees).
  HloInstruction* AddIdentity(const Shape& shape) { return Filled(shape, -0.0); }
  HloInstruction* Pad(HloInstruction* x, const std::vector<PadDim>& padding,
                      HloInstruction* pad_value);
  HloInstruction* DynamicSlice(HloInstruction* x, absl::Span<HloInstruction* const> starts,
                               absl::Span<const int64_t> sizes);
  HloInstruction* DynamicUpdateSlice(HloInstruction* x, HloInstruction* update,
                                     absl::Span<HloInstruction* const> starts);
  HloInstruction* Transpose(HloInstruction* x, absl::Span<const int64_t> perm);
  HloInstruction* Broadcast(HloInstruction* x, const Shape& shape, absl::Span<const int64_t> dims);
  HloInstruction* Iota(const Shape& shape, int64_t dim);
  HloInstruction* Compare(HloInstruction* a, HloInstruction* b, ComparisonDirection direction);
  HloInstruction* Binary(HloOpcode opcode, HloInstruction* a, HloInstruction* b);
  HloInstruction* Convert(HloInstruction* x, PrimitiveType type);
  HloInstruction* Select(HloInstruction* pred, HloInstruction* on_true, HloInstruction* on_false);
  HloInstruction* Concatenate(std::vector<HloInstruction*> parts, int64_t dim);
  HloInstruction* Tuple(std::vector<HloInstruction*> elements);
  HloInstruction* GetTupleElement(HloInstruction* tuple, int64_t index);
  // A scalar broadcast to `shape` (a constant when `shape` is a scalar).
  HloInstruction* Filled(const Shape& shape, double value);

  // Collectives over partition groups (replica groups hold global device ids, one copy of each
  // group per replica; iota form when the groups are an iota).
  HloInstruction* AllGather(HloInstruction* x, int64_t dim,
                            const std::vector<std::vector<int64_t>>& groups);
  HloInstruction* AllReduce(HloInstruction* x, const std::vector<std::vector<int64_t>>& groups,
                            HloComputation* reducer);
  HloInstruction* ReduceScatter(HloInstruction* x, int64_t dim,
                                const std::vector<std::vector<int64_t>>& groups,
                                HloComputation* reducer);
  HloInstruction* AllToAll(HloInstruction* x, int64_t dim,
                           const std::vector<std::vector<int64_t>>& groups);
  HloInstruction* CollectivePermute(HloInstruction* x, const SourceTargetPairs& pairs);
  // The first device of each group sends its x to the others.
  HloInstruction* CollectiveBroadcast(HloInstruction* x,
                                      const std::vector<std::vector<int64_t>>& groups);

  // `add` (or `or` for pred) over scalars of `type`, created once per module.
  HloComputation* AddReducer(PrimitiveType type);

  // Replica groups in the module's global device numbering (one copy of each partition group per
  // replica) when `flatten_replicas`, else the partition groups themselves.
  ReplicaGroups GlobalGroups(const std::vector<std::vector<int64_t>>& partition_groups,
                             bool flatten_replicas = true) const;

 private:
  std::string UniqueName(absl::string_view base, bool use_reserved);
  HloInstruction* Collective(HloOpcode opcode, Shape shape, HloInstruction* x,
                             const std::vector<std::vector<int64_t>>& groups);

  ModuleBuildState* state_;
  HloComputation* computation_;
  absl::flat_hash_set<std::string> reserved_;
  absl::flat_hash_set<std::string> taken_;
  absl::flat_hash_map<std::string, int64_t> name_counters_;
  HloInstruction* partition_id_ = nullptr;
  std::map<std::vector<int64_t>, HloInstruction*> table_cache_;
};

}  // namespace spmdcheck::partitioner

#endif  // SPMDCHECK_PARTITIONER_SPMD_BUILDER_H_
