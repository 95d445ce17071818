// Typed attribute values of HLO instructions (slice, padding, window, dimension numbers, ...),
// each with the text form XLA prints.
#ifndef SPMDCHECK_IR_HLO_ATTRIBUTES_H_
#define SPMDCHECK_IR_HLO_ATTRIBUTES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/replica_groups.h"

namespace spmdcheck {

struct SliceDim {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDim&) const = default;
};
std::string SliceToString(const std::vector<SliceDim>& slice);  // `{[0:8], [0:4:2]}`

struct PadDim {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PadDim&) const = default;
};
std::string PaddingToString(const std::vector<PadDim>& padding);  // `0_0x1_2_1`

struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t pad_low = 0;
  int64_t pad_high = 0;
  int64_t lhs_dilation = 1;
  int64_t rhs_dilation = 1;
  bool reversal = false;
  bool operator==(const WindowDim&) const = default;
};
// `{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`; fields equal
// to their defaults for every dim are left out, as XLA does.
std::string WindowToString(const std::vector<WindowDim>& window);

enum class ComparisonDirection : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
absl::string_view ComparisonDirectionName(ComparisonDirection direction);
std::optional<ComparisonDirection> ComparisonDirectionFromName(absl::string_view name);

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch;
  std::vector<int64_t> rhs_batch;
  std::vector<int64_t> lhs_contracting;
  std::vector<int64_t> rhs_contracting;
  bool operator==(const DotDimensionNumbers&) const = default;
};

// `b01f_01io->b01f`: roles of each dim of the input, kernel and output of a convolution.
struct ConvolutionDimensionNumbers {
  int64_t input_batch = 0;
  int64_t input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0;
  int64_t kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0;
  int64_t output_feature = 0;
  std::vector<int64_t> output_spatial;
  bool operator==(const ConvolutionDimensionNumbers&) const = default;
};
std::string DimLabelsToString(const ConvolutionDimensionNumbers& dnums);

struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  bool operator==(const GatherDimensionNumbers&) const = default;
};

struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};

// Every structured attribute an instruction may carry. Absent optionals were not written.
struct HloAttributes {
  std::optional<std::vector<int64_t>> dimensions;
  std::optional<std::vector<SliceDim>> slice;
  std::optional<std::vector<int64_t>> dynamic_slice_sizes;
  std::optional<std::vector<PadDim>> padding;
  std::optional<int64_t> iota_dimension;
  std::optional<int64_t> tuple_index;
  std::optional<ComparisonDirection> direction;
  std::optional<std::string> comparison_type;  // TOTALORDER, FLOAT, SIGNED, UNSIGNED
  std::optional<DotDimensionNumbers> dot_dimension_numbers;
  std::optional<std::vector<WindowDim>> window;
  std::optional<ConvolutionDimensionNumbers> dim_labels;
  std::optional<int64_t> feature_group_count;
  std::optional<int64_t> batch_group_count;
  std::optional<GatherDimensionNumbers> gather_dimension_numbers;
  std::optional<std::vector<int64_t>> gather_slice_sizes;
  std::optional<ScatterDimensionNumbers> scatter_dimension_numbers;
  std::optional<bool> indices_are_sorted;
  std::optional<bool> unique_indices;
  std::optional<bool> is_stable;
  std::optional<int64_t> channel_id;
  std::optional<ReplicaGroups> replica_groups;
  std::optional<bool> use_global_device_ids;
  std::optional<bool> constrain_layout;
  std::optional<SourceTargetPairs> source_target_pairs;
  std::optional<std::string> custom_call_target;
  std::optional<std::string> fusion_kind;   // kLoop, kInput, kOutput, kCustom
  std::optional<std::string> distribution;  // rng_uniform, rng_normal
};

// Custom-call targets that only annotate a value with a sharding (the identity on values):
// GSPMD's `Sharding` and Shardy's round-trip `xla.sdy.FuncResultSharding` (what XLA's
// before_optimizations dump of a Shardy compile carries on results).
inline bool IsShardingAnnotationTarget(absl::string_view target) {
  return target == "Sharding" || target == "xla.sdy.FuncResultSharding";
}

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_HLO_ATTRIBUTES_H_
