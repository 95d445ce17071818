// Program generator: random well-typed global sharded HLO programs (DAGs of 1-30 entry
// instructions) over what the oracle runs, with random shardings on any subset of instructions.
//
// One generator, two drivers. The generator is BuildProgram(): a deterministic builder that
// interprets a ProgramRecipe (a header and one fixed-size block of choice bytes per step) and
// emits a valid module whatever the bytes are: every choice is read modulo the number of valid
// options, so byte value 0 is always the simplest choice. The drivers are
//   - GenProgram(): a RapidCheck Gen of recipes mapped through BuildProgram; shrinking the recipe
//     (fewer steps, bytes towards 0, fewer/smaller mesh axes) shrinks the program;
//   - ProgramFromBytes(): libFuzzer bytes decoded as a recipe (structure-aware fuzzing: a
//     mutation of one step's bytes changes one step of the program).
#ifndef SPMDCHECK_FUZZ_PROGRAM_GEN_H_
#define SPMDCHECK_FUZZ_PROGRAM_GEN_H_

#include <rapidcheck.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/hlo_module.h"
#include "ir/mesh.h"

namespace spmdcheck::fuzz {

// What one generation step may emit. The entry instructions a step adds are in parentheses.
enum class GenOp : uint8_t {
  kUnary,               // negate / abs (1)
  kBinary,              // add / multiply / subtract / maximum (1-2)
  kConvert,             // convert to another element type (1)
  kCompareSelect,       // compare + select (2-3)
  kBroadcast,           // (1)
  kReshape,             // merge / split / insert / remove dims, flatten, refactor (1)
  kTranspose,           // (1)
  kSlice,               // (1)
  kPad,                 // negative, positive and interior padding (2)
  kConcatenate,         // 2-3 operands (1-3)
  kReverse,             // (1)
  kReduce,              // add / max with identity init (2)
  kDot,                 // batch and contracting dims (1-2)
  kGather,              // s32 / s64 / u32 indices: parameters or out-of-range constants (2)
  kScatter,             // add / max combiner (3)
  kDynamicSlice,        // out-of-range s32 / s64 / u32 start indices (1 + rank)
  kDynamicUpdateSlice,  // out-of-range start indices (2 + rank)
  kIota,                // (1)
  kConstant,            // (1)
  kParameter,           // (1)
  kWhile,               // counter-bounded loop over a sharded state (4)
  kPipeline,            // while loop over a stage-sharded state rotated each trip (5)
  kPipelineSchedule,    // GPipe- or 1F1B-style pipeline loop (fuzz/pipeline_gen.h) (9-11)
  kConvolution,         // 1-2 spatial dims, feature / batch groups, strides, padding, dilation (1)
  kSort,                // one key or key + s32 values, stable, total order (1-2)
  kTopK,                // custom-call TopK along the last dim (2)
  kReduceWindow,        // add / max windows with strides and padding (2)
};
inline constexpr int kNumGenOps = 27;
absl::string_view GenOpName(GenOp op);

// The bug patterns of ../shared/spec/bug-patterns.md the generator emits on purpose. A step
// picks an op (by op_weights) or a pattern (by pattern_weights) and emits that pattern; after
// generation DetectPatterns() names every pattern the module actually contains (whether a
// pattern step or an ordinary one produced it). A pattern of weight 0 is never emitted: a step
// that would produce it is undone (a sharding that would is dropped).
enum class GenPattern : uint8_t {
  kDsOutOfRangeStart,             // dynamic-slice, constant start < 0 or > dim - size, dim sharded
  kDusOutOfRangeStart,            // dynamic-update-slice, the same
  kIndexS64,                      // s64 start indices / gather / scatter indices
  kIndexU32,                      // u32 ones
  kUnevenDim,                     // a dim not divisible by its tile count
  kUnevenDimOverMoreDevices,      // a dim of fewer elements than tiles (size-1 dims included)
  kPartialReplication,            // last_tile_dim_replicate
  kTransposedIotaDevices,         // a tile assignment whose device order is not the plain iota
  kMultiAxisDim,                  // one dim sharded over two mesh axes
  kReshapeMergeSharded,           // reshape merging a sharded dim with a neighbour
  kReshapeSplitSharded,           // reshape splitting a sharded dim
  kDotShardedContracting,         // dot operand sharded on a contracting dim
  kDotShardedBatch,               // dot operand sharded on a batch dim
  kConvFeatureGroups,             // convolution feature_group_count > 1
  kConvBatchGroups,               // convolution batch_group_count > 1
  kConvShardedBatch,              // convolution input sharded on its batch dim
  kConvShardedFeature,            // input feature / kernel feature dims sharded
  kConvShardedSpatial,            // input sharded on a spatial dim
  kGatherShardedIndexedDim,       // gather operand sharded on a dim the indices select
  kGatherShardedOffsetDim,        // gather operand sharded on a passed-through (window) dim
  kGatherShardedIndices,          // gather indices sharded on their batch dim
  kScatterShardedIndexedDim,      // scatter operand sharded on a dim the indices select
  kScatterShardedUpdates,         // scatter updates sharded
  kScatterNoncommutative,         // scatter combiner that overwrites (order of duplicates matters)
  kSortShardedDim,                // sort operand sharded on the sort dim
  kTopKShardedDim,                // TopK operand sharded on its last dim
  kReduceWindow,                  // reduce-window with a window > 1 on a sharded dim
  kPadNegative,                   // negative low / high padding on a sharded dim
  kPadInteriorTinyShards,         // interior padding on a dim with <= 2 elements per shard
  kConcatTinyShards,              // concatenate along a dim with <= 2 elements per shard
  kWhilePartitionIdSelectReduce,  // loop in a manual region: select on partition-id, all-reduce
  kManualRegion,                  // SPMDFullToShardShape ... SPMDShardToFullShape
  kNarrowFloat,                   // bf16 / f16 / f8e4m3fn / f8e5m2 values
  kIntegerOverflow,               // s32 / u32 add / multiply with a constant >= 2^30
};
inline constexpr int kNumGenPatterns = 34;
absl::string_view GenPatternName(GenPattern pattern);
std::optional<GenPattern> GenPatternFromName(absl::string_view name);

struct ProgramGenOptions {
  // Entry-computation instructions, root included (1..max). Called computations are extra.
  int64_t max_instructions = 30;
  // Mesh of 1-3 axes with at most this many devices (= num_partitions).
  int64_t max_devices = 8;
  // At least this many devices (within max_devices): a one-device program exercises no
  // partitioning, so campaigns against XLA's partitioners ask for 2.
  int64_t min_devices = 1;
  int64_t max_rank = 4;
  int64_t max_dim = 8;
  int64_t max_elements = 1024;  // Per array.
  int sharding_percent = 50;    // Chance that an instruction gets a sharding.
  bool allow_manual = false;    // Keep {manual} and manual-subgroup shardings.
  bool allow_maximal = true;    // Keep {maximal device=d} shardings.
  // Chance (from the recipe's header) that a program is a one-mesh program: every sharding
  // comes from its mesh (axes assigned to dims, unused axes replicating; maximal), none from
  // random tile dims or device orders, and no manual regions. Shardy's model is one mesh per
  // module, so only such programs import into Shardy faithfully; GSPMD takes both kinds.
  int one_mesh_percent = 0;
  // Relative weight of each GenOp (0 disables it).
  std::array<int, kNumGenOps> op_weights = DefaultOpWeights();

  static std::array<int, kNumGenOps> DefaultOpWeights();
  // Only elementwise / broadcast / reshape / transpose / reduce / dot / slice (+ parameters,
  // constants).
  static std::array<int, kNumGenOps> NarrowOpWeights();

  // Relative weight of each GenPattern against the op weights (0: never emitted, see GenPattern).
  std::array<int, kNumGenPatterns> pattern_weights = DefaultPatternWeights();
  static std::array<int, kNumGenPatterns> DefaultPatternWeights();
  static std::array<int, kNumGenPatterns> NoPatternWeights();  // All 0: no pattern emitted.
  // Weight 0 keeps a pattern out of the program (steps that would emit it are undone). When
  // false, weight 0 only means no step emits it on purpose (ordinary steps still may).
  bool exclude_disabled_patterns = true;
};

// Sets pattern weights from `name=w,name=w` (`all=w` sets every pattern first). Unknown names
// and negative or non-numeric weights are errors.
absl::Status SetPatternWeights(absl::string_view spec, ProgramGenOptions* options);

// The patterns `module` contains (its ops, element types, attributes and explicit shardings;
// an operand counts as sharded only when it carries a sharding), in catalogue order.
// `multi-axis-dim` needs the mesh the shardings were made on (without it, it is not detected).
std::vector<GenPattern> DetectPatterns(const HloModule& module, const Mesh* mesh = nullptr);
// The patterns one instruction contributes (the same rules).
std::vector<GenPattern> DetectPatterns(const HloInstruction& instruction,
                                       const Mesh* mesh = nullptr);

// The choices one program is built from. Bytes missing at the end of a block read as 0.
inline constexpr size_t kRecipeHeaderBytes = 12;
inline constexpr size_t kRecipeStepBytes = 40;
struct ProgramRecipe {
  std::vector<uint8_t> header;              // Mesh, element type, first parameter, root form.
  std::vector<std::vector<uint8_t>> steps;  // One block per step.
};
void showValue(const ProgramRecipe& recipe, std::ostream& os);

struct GeneratedProgram {
  std::string hlo_text;  // PrintModule(*module).
  int64_t num_partitions = 1;
  int64_t instruction_count = 0;  // Entry computation.
  std::shared_ptr<const HloModule> module;
  // The generator's patterns this program contains (GenPatternName of DetectPatterns(*module,
  // &*mesh)); the campaign counts hits per pattern.
  std::vector<std::string> patterns;
  std::optional<Mesh> mesh;  // The mesh the shardings were drawn on.
  bool one_mesh = false;     // Every sharding from `mesh` (ProgramGenOptions::one_mesh_percent).
};
std::ostream& operator<<(std::ostream& os, const GeneratedProgram& program);
void showValue(const GeneratedProgram& program, std::ostream& os);

// The generator. Fails only on an internal error (a bug in this generator).
absl::StatusOr<GeneratedProgram> BuildProgram(const ProgramRecipe& recipe,
                                              const ProgramGenOptions& options = {});

// RapidCheck driver: recipes with 1..max_instructions steps (scaled by the size).
rc::Gen<ProgramRecipe> GenProgramRecipe(const ProgramGenOptions& options = {});
// Programs; an internal generator error gives a program with a null module and the error in
// hlo_text (never silently something else).
rc::Gen<GeneratedProgram> GenProgram(const ProgramGenOptions& options = {});

// libFuzzer driver: the first kRecipeHeaderBytes bytes are the header, each following
// kRecipeStepBytes bytes one step (at most max_instructions steps). Deterministic.
ProgramRecipe RecipeFromBytes(absl::Span<const uint8_t> data, const ProgramGenOptions& options);
absl::StatusOr<GeneratedProgram> ProgramFromBytes(absl::Span<const uint8_t> data,
                                                  const ProgramGenOptions& options = {});

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_PROGRAM_GEN_H_
