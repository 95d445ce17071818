// Generated SPMD pipelines: global programs whose while loop runs micro-batches through S stages
// over a stage mesh axis, in the form SPMD pipelining takes (GSPMD's, praxis's, axlearn's): the
// loop state holds one slot per stage, split over the stage axis; each trip injects the next
// micro-batch into slot 0, every stage applies its own weights (a batch dot over the
// stage-stacked weights, a tanh, and with a tensor axis a second dot whose contracting dim is
// split over it), the slots rotate to the next stage with a collective-permute in a manual region
// (SPMDFullToShardShape / SPMDShardToFullShape), and the last stage's results are collected into
// an output buffer. A data axis splits the micro-batch rows.
//  - GPipe-style: one forward stream, M + S - 1 trips; the last stage's output is collected
//    before the rotation (the wrap is optional) or from slot 0 after it (the wrap is needed).
//  - 1F1B-style: a forward and a backward stream in one loop (each stage does one forward and one
//    backward step per trip): the forward's last-stage output enters the backward stream at slot
//    S-1, which applies the transposed weights and rotates the other way; the first stage's
//    backward output is collected; M + 2S - 2 trips.
// Both are used standalone (BuildPipelineModule, GenPipelineSpec) and as one step of the program
// generator (EmitPipeline, through a PipelineSink over its builder).
#ifndef SPMDCHECK_FUZZ_PIPELINE_GEN_H_
#define SPMDCHECK_FUZZ_PIPELINE_GEN_H_

#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"
#include "ir/mesh.h"

namespace spmdcheck::fuzz {

enum class PipelineSchedule { kGPipe, kOneFOneB };
absl::string_view PipelineScheduleName(PipelineSchedule schedule);  // gpipe, 1f1b

struct PipelineSpec {
  PipelineSchedule schedule = PipelineSchedule::kGPipe;
  int64_t stages = 2;                   // Size of the stage axis (>= 2).
  int64_t data = 1;                     // Size of the data axis (1: none).
  int64_t tensor = 1;                   // Size of the tensor axis (1: none).
  int64_t micro_batches = 2;            // >= 1.
  int64_t rows_per_device = 1;          // Micro-batch rows = rows_per_device * data.
  int64_t hidden_per_device = 1;        // Features = hidden_per_device * tensor.
  bool collect_after_rotation = false;  // GPipe: read the last stage's output from slot 0.
  bool wrap = true;  // Rotations include the wrap pair even where it is optional.
  // Rotations: a collective-permute in a manual region (true), or a roll of the global state
  // (concatenate of two slices along the stage dim; the partitioner decides how to move data).
  bool manual_rotation = true;
  // Stages apply dots with [S,H,H] weights (true), or multiply by [S,R,H] weights elementwise
  // (no dot: the tensor axis then splits the features of every stage value).
  bool dot_stages = true;
  // The while instruction carries the state's tuple sharding (its body parameter and root always
  // do). XLA 0.10.2 (jaxlib, GSPMD and Shardy alike) fails a RET_CHECK (hlo_sharding.cc
  // `leaf_count == tuple_elements_.size()`) on a sharded while with loop-invariant elements, after
  // its HLO -> StableHLO -> HLO round trip; without it, XLA partitions these loops.
  bool shard_loop = true;
  // Mesh axis order in device ids (major first), a permutation of {0 stage, 1 data, 2 tensor}.
  std::vector<int> axis_order = {0, 1, 2};
};
void showValue(const PipelineSpec& spec, std::ostream& os);

// The mesh of a spec: axes `stage`, `data`, `tensor` (size-1 ones dropped) in axis_order.
absl::StatusOr<Mesh> PipelineMesh(const PipelineSpec& spec);

// Where EmitPipeline puts what it makes.
struct PipelineSink {
  // A new entry parameter of `shape` (the emitter sets its sharding).
  std::function<HloInstruction*(const Shape&)> parameter;
  // Adds an entry instruction; nullptr when the host refuses it.
  std::function<HloInstruction*(std::unique_ptr<HloInstruction>)> add;
  // Takes a new computation (loop condition and body).
  std::function<void(std::unique_ptr<HloComputation>)> add_computation;
  // A name no other instruction or computation has, from a stem.
  std::function<std::string(absl::string_view)> name;
};

// Emits the pipeline of `spec` into a host program on `mesh` (axis indices: stage >= 0, data and
// tensor -1 when absent; their sizes must be the spec's): new parameters for the initial stream,
// the weights and the inputs, the loop, and a get-tuple-element of the collected outputs, which it
// returns. Errors for an inconsistent spec or a refused instruction.
absl::StatusOr<HloInstruction*> EmitPipeline(const PipelineSpec& spec, const Mesh& mesh,
                                             int stage_axis, int data_axis, int tensor_axis,
                                             PipelineSink& sink);

// A whole module (`pipeline_gpipe` / `pipeline_1f1b`) whose root is the collected outputs.
absl::StatusOr<std::unique_ptr<HloModule>> BuildPipelineModule(const PipelineSpec& spec);

// A spec for `mesh` from choices (`below(n)` in [0, n)): the stage axis is one of size >= 2, the
// data and tensor axes others (or none); nullopt when no axis has size >= 2. These are the
// program generator's pipelines: they roll the global state and multiply by stage weights (no
// manual region, no dot), so that the global program runs on one device (the oracle's reference
// run) and a shrink towards a small dot program can drop them; GenPipelineSpec covers the rest.
struct PipelineOnMesh {
  PipelineSpec spec;
  int stage_axis = -1;
  int data_axis = -1;
  int tensor_axis = -1;
};
std::optional<PipelineOnMesh> PipelineSpecForMesh(const Mesh& mesh,
                                                  const std::function<int64_t(int64_t)>& below);

// RapidCheck: specs with stage x data x tensor <= max_devices (stages 2-4, data and tensor 1-2),
// 1-4 micro-batches, both schedules, manual or rolled rotations, dot or elementwise stages;
// shrinking goes towards GPipe, 2 stages, no data or tensor, manual rotations and dots.
rc::Gen<PipelineSpec> GenPipelineSpec(int64_t max_devices = 16);

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_PIPELINE_GEN_H_
