// `explain` for an MPMD (pipeline) program in IFRT IR (explain/ifrt_program.h): which meshes the
// pipeline's stages run on, in which order each mesh runs its fragments (the schedule, with
// microbatches), what moves between meshes, what each mesh axis splits inside the fragments, and
// checks of the program's wiring: every call's operands live on its devices, transfers keep
// their arrays, each fragment is compiled for the layout its arrays have.
#ifndef SPMDCHECK_EXPLAIN_MPMD_EXPLANATION_H_
#define SPMDCHECK_EXPLAIN_MPMD_EXPLANATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "explain/ifrt_program.h"
#include "ir/verdict.h"

namespace spmdcheck::explain {

// What a fragment's name says (Shardy's MPMD names fragments `p<k>_<stage>[_fwd|_bwd]
// [_calls<a>to<b>].<program>`).
struct MpmdFragmentName {
  std::string stage;       // `s0`, `s2...` (merged stages keep MPMD's `...`).
  std::string direction;   // "forward", "backward" or "" (the name does not say).
  int64_t first_call = 0;  // Microbatch of the first call (`_calls<a>to<b>`).
};
MpmdFragmentName ParseMpmdFragmentName(absl::string_view name, absl::string_view program);

struct MpmdFragmentUse {
  std::string name;
  MpmdFragmentName parts;
  std::string mesh;
  int64_t calls = 0;
  int64_t instructions = 0;
};

// One call in a mesh's order: `s0 F1` (stage s0, forward, microbatch 1).
struct MpmdScheduledCall {
  std::string fragment;
  std::string label;
  int64_t microbatch = 0;
  int64_t start = 0;  // In unit-time steps (each call takes one step, transfers none).
};

struct MpmdAxisUse {
  std::string axis;
  int64_t size = 1;
  std::vector<std::string> splits;  // `p0_s0 arg0 dim 1`.
};

struct MpmdMeshUse {
  std::string name;
  std::vector<int64_t> devices;
  std::vector<MpmdAxisUse> axes;
  std::vector<MpmdScheduledCall> schedule;  // In program order.
};

struct MpmdTransfer {
  IfrtLocation location;
  std::string kind;  // "copy" or "reshard".
  std::string value;
  std::string from_mesh;
  std::string to_mesh;
  std::string from_layout;  // IfrtArrayType::ToString.
  std::string to_layout;
  int64_t bytes = 0;  // Received in all: the destination's shard bytes times its devices.
};

struct MpmdCheck {
  std::string name;
  Verdict verdict = Verdict::kUnknown;
  std::string detail;  // What was checked, or the counterexample.
};

struct MpmdExplanation {
  std::string path;
  std::string module_name;
  int64_t num_devices = 0;
  std::vector<MpmdMeshUse> meshes;
  std::vector<MpmdFragmentUse> fragments;
  std::vector<MpmdTransfer> transfers;
  int64_t transfer_bytes = 0;
  int64_t stages = 0;  // Distinct stages among the fragments (merged stages count once).
  int64_t microbatches = 1;
  std::string schedule;  // "forward only", "all forward, then all backward (GPipe-like)", ...
  int64_t steps = 0;     // Makespan with unit-time calls.
  double idle_fraction = 0;
  std::vector<MpmdCheck> checks;
  std::vector<std::string> notes;
  std::string answer;
  // fails when a check fails, unknown when one is unknown (an op this reader does not model),
  // else holds.
  Verdict verdict() const;
};

// Errors: InvalidArgument for a program with no call.
absl::StatusOr<MpmdExplanation> ExplainMpmd(const IfrtProgram& program);

std::string FormatMpmdText(const MpmdExplanation& explanation);
// Schema: docs/explain.md ("MPMD programs"), tests/data/explain-mpmd-schema.json.
std::string FormatMpmdJson(const MpmdExplanation& explanation);

}  // namespace spmdcheck::explain

#endif  // SPMDCHECK_EXPLAIN_MPMD_EXPLANATION_H_
