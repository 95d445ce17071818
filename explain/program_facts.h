// What `explain` reads from a module before it judges anything: the sharding each value is
// annotated with (its `sharding=`, or the `// holds=NAME sharding={...}` comment of XLA-style
// dumps), each collective with its device groups and bytes, each while loop with its trip count,
// each dot with its operands' shardings, and which values are weights (reach an entry parameter
// through data movement only). Also a small evaluator of the scalar integer expressions of a
// loop body (loop counter, partition-id, constant tables), for pipeline bubbles and offsets.
#ifndef SPMDCHECK_EXPLAIN_PROGRAM_FACTS_H_
#define SPMDCHECK_EXPLAIN_PROGRAM_FACTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "explain/mesh_recovery.h"
#include "ir/hlo_module.h"
#include "ir/sharding.h"

namespace spmdcheck::explain {

// A module with its source text (for `// holds=` comments).
struct ModuleSource {
  const HloModule* module = nullptr;
  std::string text;
};

// Annotated shardings of a module's instructions: the `sharding=` attribute, else a `sharding=`
// in a `//` comment on the instruction's lines.
class Annotations {
 public:
  Annotations() = default;
  explicit Annotations(const ModuleSource& source);
  const HloSharding* Of(const HloInstruction* instruction) const;
  bool FromComment(const HloInstruction* instruction) const;
  int64_t comment_count() const { return comments_; }

 private:
  absl::flat_hash_map<const HloInstruction*, std::pair<HloSharding, bool>> map_;
  int64_t comments_ = 0;
};

// True for collectives whose operand and result live in a manual region (written by the user,
// e.g. a shard_map or SPMDFullToShardShape region of a global program).
bool IsManualCollective(const HloInstruction& instruction, const Annotations& annotations);
bool CountsAsCollective(HloOpcode opcode);

// A global program (before partitioning) or a partitioned one: partitioned when it has a
// collective outside manual regions, an entry named `*_spmd`, or `// holds=` comments.
bool LooksPartitioned(const HloModule& module, const Annotations& annotations);

// The mesh evidence of a module: every array sharding annotation and every collective's groups.
void CollectMeshObservations(const HloModule& module, const Annotations& annotations,
                             MeshObservations& observations);

// The device groups (partition ids) of a collective other than collective-permute; each
// partition alone when it communicates with no other partition.
std::vector<std::vector<int64_t>> PartitionGroups(const HloInstruction& instruction,
                                                  int64_t num_partitions);

struct ValueFact {
  const HloInstruction* instruction = nullptr;
  std::string name;  // `NAME` or `NAME{i}` for tuple element i.
  bool in_global = false;
  bool from_comment = false;
  HloSharding sharding;
  std::vector<int64_t> global_dims;
  std::vector<std::vector<AxisPart>> dim_axes;  // Per data dim.
  std::vector<AxisPart> replicated_over;        // Axes of the replication subgroup.
  bool manual = false;
  bool regular = true;  // false: the tile assignment is not a product of mesh axes.
};

struct CollectiveFact {
  const HloInstruction* instruction = nullptr;
  std::optional<std::vector<AxisPart>> axes;  // nullopt: groups that are no mesh (sub-)axes.
  std::vector<std::vector<int64_t>> groups;
  int64_t bytes = 0;       // Most bytes one device receives, per execution.
  int64_t executions = 1;  // Per step (trip counts multiplied); -1 when a trip count is unknown.
  const HloInstruction* loop = nullptr;  // Innermost enclosing while loop.
  bool manual = false;
  // collective-permute: the moves of non-identity pairs, per axis coordinate delta.
  struct Move {
    int64_t source = 0;
    int64_t target = 0;
    std::vector<int64_t> delta;
  };
  std::vector<Move> moves;
  std::vector<bool> axis_moved;  // Per axis: some pair changes its coordinate.
};

struct LoopFact {
  const HloInstruction* loop = nullptr;
  std::optional<int64_t> trips;
  std::string trip_source;     // "known_trip_count", "counter i < 5", ...
  int64_t counter_index = -1;  // Tuple index of the loop counter, when found.
  int64_t counter_init = 0;    // Its initial value.
  int64_t executions = 1;      // Executions of the loop per step; -1 unknown.
  const HloInstruction* parent_loop = nullptr;
};

struct DotFact {
  const HloInstruction* dot = nullptr;
  bool in_global = false;
  const HloSharding* lhs = nullptr;  // Annotations found for the operands and result (may be
  const HloSharding* rhs = nullptr;  // null).
  const HloSharding* out = nullptr;
  const HloInstruction* lhs_weight = nullptr;  // The entry parameter an operand reads, if any.
  const HloInstruction* rhs_weight = nullptr;
  const HloInstruction* loop = nullptr;
};

class ProgramFacts {
 public:
  // `global` may be null. The mesh must have the module's device count.
  ProgramFacts(const ModuleSource& input, const ModuleSource* global, const RecoveredMesh& mesh);

  const RecoveredMesh& mesh() const { return mesh_; }
  bool partitioned() const { return partitioned_; }
  const HloModule& module() const { return *input_.module; }
  const HloModule* global_module() const { return global_ != nullptr ? global_->module : nullptr; }
  const Annotations& annotations() const { return annotations_; }
  const Annotations& global_annotations() const { return global_annotations_; }

  const std::vector<ValueFact>& values() const { return values_; }
  const std::vector<CollectiveFact>& collectives() const { return collectives_; }
  const std::vector<LoopFact>& loops() const { return loops_; }
  const std::vector<DotFact>& dots() const { return dots_; }
  const LoopFact* LoopOf(const HloInstruction* loop) const;
  // Innermost while loop whose body (or a computation it calls) holds `instruction`.
  const HloInstruction* EnclosingLoop(const HloInstruction* instruction) const;
  // The while instruction whose body is `body`.
  const HloInstruction* LoopWithBody(const HloComputation* body) const;

  // The entry parameter `instruction` reads through data movement only (copies, reshapes,
  // transposes, gathers, slices, loop-invariant loop state), or null: a weight.
  const HloInstruction* WeightSource(const HloInstruction* instruction) const;
  // The annotation of `instruction` or of the value it copies (looking through copy, convert,
  // bitcast and sharding custom-calls), in its module.
  const HloSharding* AnnotationThrough(const HloInstruction* instruction) const;
  // Per data dim of `sharding` (an array leaf), the axis parts splitting it; nullopt when
  // irregular or not tiled.
  std::optional<std::vector<std::vector<AxisPart>>> DimAxes(const HloSharding& sharding) const;

 private:
  void AddValues(const ModuleSource& source, const Annotations& annotations, bool in_global);
  void AddLeaf(const HloInstruction* instruction, std::string name, const Shape& shape,
               const HloSharding& sharding, bool in_global, bool from_comment);
  void WalkCalls();
  void AddCollectives();
  void AddDots(const ModuleSource& source, const Annotations& annotations, bool in_global);

  ModuleSource input_;
  const ModuleSource* global_ = nullptr;
  const RecoveredMesh& mesh_;
  Annotations annotations_;
  Annotations global_annotations_;
  bool partitioned_ = false;
  std::vector<ValueFact> values_;
  std::vector<CollectiveFact> collectives_;
  std::vector<LoopFact> loops_;
  std::vector<DotFact> dots_;
  // Per computation: executions per step (-1 unknown) and innermost loop.
  absl::flat_hash_map<const HloComputation*, std::pair<int64_t, const HloInstruction*>> calls_;
  absl::flat_hash_map<const HloComputation*, const HloInstruction*> loop_of_body_;
  mutable absl::flat_hash_map<const HloInstruction*, const HloInstruction*> weight_memo_;
  mutable absl::flat_hash_map<std::string, std::optional<std::vector<std::vector<AxisPart>>>>
      dim_axes_memo_;
};

// The trip count of a while loop: XLA's known_trip_count backend config, else the pattern
// `counter < N` (or <=, !=) with a constant initial value and a +1 step.
LoopFact AnalyzeLoop(const HloInstruction& loop);

// Scalar integer values of a computation for one device and one loop trip: constants, the loop
// counter (`counter_index` of the body parameter, valued init + trip), partition-id, replica-id
// (0), arithmetic, clamp, compare, select, convert, reshape/bitcast/broadcast of scalars, and
// lookups in constant tables (dynamic-slice of a rank-1 constant by a scalar).
class IntEvaluator {
 public:
  IntEvaluator(int64_t counter_index, int64_t counter_init)
      : counter_index_(counter_index), counter_init_(counter_init) {}
  std::optional<int64_t> Eval(const HloInstruction* h, int64_t device, int64_t trip) const;
  // True when the value depends on partition-id (or replica-id).
  bool DependsOnDevice(const HloInstruction* h) const;
  bool DependsOnCounter(const HloInstruction* h) const;

 private:
  std::optional<int64_t> EvalRec(const HloInstruction* h, int64_t device, int64_t trip,
                                 int depth) const;
  int64_t counter_index_;
  int64_t counter_init_;
};

}  // namespace spmdcheck::explain

#endif  // SPMDCHECK_EXPLAIN_PROGRAM_FACTS_H_
