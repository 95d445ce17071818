// Pipeline (inter-op) parallelism in a partitioned program: detection and checks.
//
// A pipeline over mesh axis A is a while loop whose body applies stage-stacked weights to
// stage-split state (a dot whose batch dim, or an elementwise op whose dim, is split over A in both
// the state and a weight: a value that reaches an entry parameter through data movement only) and
// either rotates loop state between neighbouring coordinates of A with collective-permutes
// ("rotations": pairs that move only along A) or carries state split over A that changes in the
// loop (its stages move some other way, e.g. a roll of the gathered state). A rotation without
// stage-stacked weights is a ring, not a pipeline. A program that only holds stage-stacked values
// (every value A splits has one entry per coordinate of A along that dim) and no such loop is
// reported as a pipeline seen from its values, without checks.
//
// Checks of a loop pipeline:
//  - rotation (Z3, every device): each rotation moves a device's stage output to the device of the
//    next stage (same coordinates on the other axes), and the last stage's output wraps to the
//    first exactly when the schedule reads the wrapped slot before overwriting it;
//  - own-weights (Z3, every device): the device that holds stage s of the state holds stage s of
//    the weights, and stage s is the device's coordinate along A;
//  - micro-batch-order (exhaustive over trips, stages and micro-batches): running the loop body's
//    slot-level schedule (inject, stage, rotate, extract, collect, partition-id selects) for the
//    loop's trip count, every micro-batch passes the stages in order and its result is collected
//    (or left in the final state) before anything overwrites it.
#ifndef SPMDCHECK_EXPLAIN_PIPELINE_H_
#define SPMDCHECK_EXPLAIN_PIPELINE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "explain/mesh_recovery.h"
#include "explain/program_facts.h"
#include "ir/hlo_module.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "smt/proof_result.h"

namespace spmdcheck::explain {

// An op that applies stage-stacked weights to stage-split state.
struct StageOp {
  const HloInstruction* op = nullptr;
  int64_t state_operand = 0;  // Operand index of the state.
  int64_t state_dim = 0;
  HloSharding state_sharding;
  int64_t weight_operand = 1;
  int64_t weight_dim = 0;
  HloSharding weight_sharding;
  const HloInstruction* weight_param = nullptr;
};

struct PipelineFinding {
  int axis = -1;
  const HloInstruction* loop = nullptr;  // Null for a pipeline seen only in stage-stacked values.
  std::vector<const HloInstruction*> rotations;
  std::vector<StageOp> stage_ops;
  std::vector<const HloInstruction*> bubble_selects;  // Selects on partition-id in the body.
  std::vector<std::string> stage_state;               // Loop state elements split over the axis.
  std::vector<std::string> stacked_values;            // Stage-stacked values (loopless).
  // Loopless findings whose stage-stacked values are loop state: the loop moves stages without a
  // rotation along the axis (e.g. it gathers them), so there is no schedule to check.
  const HloInstruction* loop_without_rotation = nullptr;
};

// Rotations along one axis in a loop that has no stage-stacked weights: a ring (windowed einsum,
// ring attention, collective matmul), not a pipeline.
struct RingFinding {
  int axis = -1;
  const HloInstruction* loop = nullptr;
  std::vector<const HloInstruction*> rotations;
};

struct PipelineDetection {
  std::vector<PipelineFinding> pipelines;
  std::vector<RingFinding> rings;
};
PipelineDetection DetectPipelines(const ProgramFacts& facts);

// Explicit pairs and device lists are Z3 tables; past this many devices a table makes Z3 slow
// (0.3 s at 128 devices, 2 s at 256, a 10 s timeout at 512), so the same claims are checked
// device by device instead (exhaustive, as exact, named in the check's claim).
inline constexpr int64_t kMaxZ3TableDevices = 128;

// How a rotation must treat the last stage's output.
enum class WrapPolicy { kRequired, kOptional };

// The rotation claim for `pairs` over `axis`: device d at coordinate s sends to the device with
// coordinate s + direction (other coordinates equal); at the edge it sends to the wrapped
// coordinate (kRequired) or to that or nowhere (kOptional). Z3 over every device.
smt::ProofResult ProveRotation(const RecoveredMesh& mesh, int axis, const SourceTargetPairs& pairs,
                               int direction, WrapPolicy wrap, int64_t timeout_ms);

// For every device: its tile index along `state_dim` of `state`, along `weight_dim` of `weights`
// and its coordinate along `axis` are equal. Z3 over every device (iota tile assignments are
// encoded symbolically).
smt::ProofResult ProveOwnWeights(const RecoveredMesh& mesh, int axis, const HloSharding& state,
                                 int64_t state_dim, const HloSharding& weights, int64_t weight_dim,
                                 int64_t timeout_ms);

// The majority direction (+1 or -1) of a rotation's moves along `axis`.
int RotationDirection(const RecoveredMesh& mesh, int axis, const SourceTargetPairs& pairs);

// Loop-state elements of `loop` that change in the loop and have a dim split over `axis` (the
// streams), with that dim; from the loop's (or its body parameter's) sharding annotation.
std::map<int, int64_t> StreamDims(const ProgramFacts& facts, const HloInstruction* loop, int axis);

// The slot-level run of a pipeline loop.
struct ScheduleRun {
  smt::ProofResult result;
  std::string schedule;       // One trip's events, e.g. "inject 0, stage, rotate +1".
  int64_t micro_batches = 0;  // 0 when unknown.
  std::map<const HloInstruction*, bool> wrap_read;  // Per rotation: the wrapped slot is read.
  std::map<const HloInstruction*, int> direction;   // Per rotation.
};
ScheduleRun RunSchedule(const ProgramFacts& facts, const PipelineFinding& pipeline);

}  // namespace spmdcheck::explain

#endif  // SPMDCHECK_EXPLAIN_PIPELINE_H_
