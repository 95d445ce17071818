// ChainModel: what the chain encoding needs to know about the instructions between a chain's
// inputs and its end, checked and precomputed once: which instructions carry data (a function of
// the inputs) and which carry integers (partition-id, offset tables, iota, masks), the device
// groups of every collective, the sources of every collective-permute, constant tables, and the
// global meaning of the chain (the global shape of each data value and the index map from it back
// to the global input it copies), lifted from the local ops and the `sharding=` annotations.
#ifndef SPMDCHECK_SMT_CHAIN_MODEL_H_
#define SPMDCHECK_SMT_CHAIN_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/hlo_module.h"
#include "ir/sharding.h"
#include "ir/tile_assignment.h"

namespace spmdcheck::smt {

// A value of the chain whose contents are a global array laid out by a sharding: a parameter, or
// the instruction named by --from. `key` identifies the global array across two modules.
struct ChainInput {
  const HloInstruction* instruction = nullptr;
  std::string key;
  HloSharding sharding;  // Replicated when the instruction has none.
  std::vector<int64_t> local_dims;
  std::vector<int64_t> global_dims;  // local dims times the data tile counts (even split assumed).
};

// Device -> (group, position in group) and (group, position) -> device for one collective.
// Either an iota `[G,S]<=[R]T(perm)` (encoded with constant div/mod, never expanded) or explicit
// tables. Every device in [0, P) is in exactly one group.
struct DeviceGroups {
  int64_t num_groups = 0;
  int64_t group_size = 0;  // Largest group size.
  bool uniform = true;
  std::optional<IotaTileAssignment> iota;
  std::vector<int64_t> group_of;     // Per device (explicit form).
  std::vector<int64_t> position_of;  // Per device (explicit form).
  std::vector<int64_t> members;      // num_groups * group_size, row-major; padded with member 0.
  std::vector<int64_t> sizes;        // Per group.
};

// A tile assignment's device -> data tile index, for an input or the end of a chain.
struct ShardingLayout {
  bool replicated = true;
  int64_t data_rank = 0;
  TileAssignment tiles;
  // Explicit assignments: per data dim, the tile index of each device in [0, P).
  std::vector<std::vector<int64_t>> tile_index_tables;
};

// One step of the global meaning of a chain, from an operand's global array to a result's.
struct GlobalStep {
  enum class Kind { kReshape, kTranspose, kBroadcast, kDropDims };
  Kind kind = Kind::kReshape;
  std::vector<int64_t> operand_dims;  // Global dims of the operand.
  std::vector<int64_t> result_dims;   // Global dims of the result.
  // kTranspose: the permutation; kBroadcast: result dim of each operand dim; kDropDims: for each
  // operand dim, the result dim it becomes or -1 (that dim is read at index 0).
  std::vector<int64_t> map;
};

// The global meaning of a data instruction that depends on exactly one input.
struct GlobalMeaning {
  int64_t input = -1;
  std::vector<int64_t> global_dims;
  std::vector<GlobalStep> steps;  // From the input to this instruction, in order.
  std::string error;              // Set when the meaning could not be lifted.
  // Set from an all-to-all, or a local reshape that merges or splits sharded dims without a
  // sharding= annotation (XLA's all-to-all resharding), until the next annotated instruction: the
  // steps stop at the last known global value, and that annotation re-anchors the global value as
  // the same elements in row-major order.
  std::string opaque_since;
  // Set when a step of the lifting was a guess (a local slice, pad or concatenate of the data, a
  // mask that depends on the element index, an annotation read as a leading slice): a chain that
  // holds is proved against `text`, but one that does not is `unknown`, not refuted, because the
  // global program may have meant something else.
  std::string guess;
  std::string text;  // E.g. `reshape(transpose(param))`.
};

enum class ValueDomain { kInteger, kData };

struct InstructionFacts {
  ValueDomain domain = ValueDomain::kInteger;
  int64_t input = -1;  // Index into inputs() when this instruction is a chain input.
  bool depends_on_input = false;
  // Integer values that vary with the element index (iota, non-uniform constants).
  bool depends_on_index = false;
  std::optional<DeviceGroups> groups;
  std::vector<int64_t> permute_source;  // Per device; -1 when it receives nothing.
  std::vector<int64_t> int_table;       // Integer constants, row-major.
  std::vector<double> data_table;       // Floating constants, row-major.
  GlobalMeaning meaning;
};

class ChainModel {
 public:
  // Checks and precomputes every instruction `end` depends on, stopping at `cut` (when not null)
  // and at parameters. Unimplemented/InvalidArgument name the instruction that is not covered.
  static absl::StatusOr<ChainModel> Build(const HloInstruction* end, const HloInstruction* cut,
                                          int64_t num_partitions);

  int64_t num_partitions() const { return num_partitions_; }
  const HloInstruction* end() const { return end_; }
  const std::vector<ChainInput>& inputs() const { return inputs_; }
  const InstructionFacts& facts(const HloInstruction* instruction) const {
    return facts_.at(instruction);
  }
  const ShardingLayout& input_layout(int64_t input) const { return input_layouts_[input]; }

 private:
  // Build's two steps per instruction: a chain input (a parameter or the cut) and a computed
  // instruction (its domain, coverage and op-specific facts).
  absl::Status AddInput(const HloInstruction* h);
  absl::Status AddComputed(const HloInstruction* h);

  int64_t num_partitions_ = 1;
  const HloInstruction* end_ = nullptr;
  std::vector<ChainInput> inputs_;
  std::vector<ShardingLayout> input_layouts_;
  absl::flat_hash_map<const HloInstruction*, InstructionFacts> facts_;
};

// The layout of `sharding` over `num_partitions` devices; an error unless every device holds
// exactly one tile position (tiled) or the sharding is replicated.
absl::StatusOr<ShardingLayout> MakeShardingLayout(const HloSharding& sharding,
                                                  int64_t num_partitions, int64_t data_rank);

// The global dims an instruction's `sharding=` annotation implies for its local shape (local dim
// times the data tile count), or nullopt when it has no tiled or replicated annotation.
std::optional<std::vector<int64_t>> AnnotatedGlobalDims(const HloInstruction& instruction);

// `[a,b,c]`.
std::string DimsText(absl::Span<const int64_t> dims);

// The collectives a chain may contain (synchronous ones; async start/done pairs are not covered).
bool IsChainCollective(HloOpcode op);

// Operands that must be integers (dynamic-slice/update offsets, select predicates) whatever the
// result is.
bool IsIndexOperand(const HloInstruction& h, int64_t i);

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_CHAIN_MODEL_H_
