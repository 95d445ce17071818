// An MPMD (pipeline) program as IFRT IR: what Shardy's MPMD partitioner gives after
// `lower_to_ifrt` (jaxlib's `_sdy_mpmd`). `@main` calls one compiled fragment per stage on the
// devices of a mesh (`ifrt.Call`) and moves arrays between meshes (`ifrt.CopyArrays`,
// `ifrt.Reshard`); each fragment is a nested module whose `@main` is a StableHLO program with
// Shardy shardings over its mesh. This is the part of IFRT IR that `explain` reads: the parser
// takes the printed text (one op per line, as MLIR prints it) and keeps where everything was
// written, for messages in FILE:LINE:COL form.
#ifndef SPMDCHECK_EXPLAIN_IFRT_PROGRAM_H_
#define SPMDCHECK_EXPLAIN_IFRT_PROGRAM_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/sdy_sharding.h"
#include "ir/shape.h"

namespace spmdcheck::explain {

// Where something is written: 1-based line and column.
struct IfrtLocation {
  int line = 0;
  int column = 0;
};

// `#ifrt.sharding_param<2x1 to [0] on 2>`: the array is split dims[i] ways along dim i over a
// mesh of `mesh_shape` (the devices of the array, in order), `permutation` naming which mesh dims
// split the array. Invariant: product(dims) divides product(mesh_shape) = the device count.
struct IfrtShardingParam {
  std::vector<int64_t> dims;
  std::vector<int64_t> permutation;
  std::vector<int64_t> mesh_shape;

  int64_t Tiles() const;        // Product of dims: how many distinct parts there are.
  int64_t MeshDevices() const;  // Product of mesh_shape.
  std::string ToString() const;
  bool operator==(const IfrtShardingParam&) const = default;
};

// `!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>`: a global array, how it is split, the devices
// that hold it. Invariant (checked by the parser): the sharding's mesh has as many devices as
// `devices` lists, and its tile counts divide the dims.
struct IfrtArrayType {
  Shape shape;
  IfrtShardingParam sharding;
  std::vector<int64_t> devices;

  int64_t ShardBytes() const;  // What one device holds.
  std::string ToString() const;
};

enum class IfrtOpKind { kCall, kCopyArrays, kReshard };

// One op of `@main`. Value names are as written (`%outputs_0#2` for a result of a multi-result
// op, `%arg3` for a parameter); `control_result` is the op's control output.
struct IfrtOp {
  IfrtOpKind kind = IfrtOpKind::kCall;
  IfrtLocation location;
  std::vector<std::string> results;
  std::string control_result;
  std::vector<std::string> operands;
  std::vector<std::string> after;  // Control inputs (`after %control_output_3`).
  std::vector<IfrtArrayType> operand_types;
  std::vector<IfrtArrayType> result_types;
  // Calls only.
  std::string callee;            // The nested module called (`p0_s0.mpmd_7`).
  std::vector<int64_t> devices;  // `on devices [...]`.
  std::string mesh_name;         // `ifrt.mesh_name`.
};

// One argument or result of a fragment's `@main`, with its Shardy sharding when it has one.
struct IfrtFragmentValue {
  Shape shape;
  std::optional<SdySharding> sharding;
};

// A nested module (a compiled fragment): its mesh and the shardings of its `@main`.
struct IfrtFragment {
  std::string name;
  IfrtLocation location;
  std::string sdy_mesh_name;  // Empty when the fragment states no mesh (a one-device mesh).
  SdyMesh sdy_mesh;
  std::vector<IfrtFragmentValue> args;
  std::vector<IfrtFragmentValue> results;
  int64_t instructions = 0;  // Ops in its `@main`, the return left out.
};

struct IfrtProgram {
  std::string path;  // For messages.
  std::string name;  // `module @mpmd_7`.
  std::vector<std::string> param_names;
  std::vector<IfrtArrayType> param_types;
  std::vector<IfrtOp> ops;  // In program order.
  std::vector<std::string> returned;
  IfrtLocation return_location;
  std::map<std::string, IfrtFragment> fragments;  // By name.
  // The program's own `sdy.mesh`es (outside the fragments), in order.
  std::vector<std::pair<std::string, SdyMesh>> sdy_meshes;
  std::vector<std::string> other_ops;  // Ops of @main this reader does not model, with location.
};

// True when `text` is an IFRT program (its @main has `ifrt.function` or takes `!ifrt.array`s).
bool LooksLikeIfrtProgram(absl::string_view text);

// Parses `text` (read from `path`). Errors are InvalidArgument `PATH:LINE:COL: what`. Ops of
// @main other than calls, copies, reshards and the return are kept in `other_ops` (whoever reads
// the program decides what an op it cannot model means).
absl::StatusOr<IfrtProgram> ParseIfrtProgram(absl::string_view text, absl::string_view path);

// MLIR's element type names (`f32`, `bf16`, `i32`, `ui8`, `i1`) as ours.
std::optional<PrimitiveType> MlirElementType(absl::string_view name);

// `tensor<8x8xf32>` (or `tensor<f32>`).
absl::StatusOr<Shape> ParseMlirTensorType(absl::string_view text);

}  // namespace spmdcheck::explain

#endif  // SPMDCHECK_EXPLAIN_IFRT_PROGRAM_H_
