// `spmdcheck explain`: which parallelism a partitioned program uses, mesh axis by mesh axis. The
// device mesh is recovered from the tile assignments and collective groups (explain/
// mesh_recovery.h); each axis gets the roles its evidence supports (data, tensor, FSDP/ZeRO,
// sequence, expert, pipeline), with the instructions that show it, the collectives over it and
// the bytes a device receives over it per step; a detected pipeline (a while loop rotating
// stage-split state between neighbours along an axis, with stage-stacked weights) is checked:
// Z3 proves the rotation and the weight placement for every device, and an exhaustive run of the
// loop's slot-level schedule checks that every micro-batch passes every stage in order. See
// docs/explain.md.
#ifndef SPMDCHECK_EXPLAIN_EXPLAIN_H_
#define SPMDCHECK_EXPLAIN_EXPLAIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "explain/mesh_recovery.h"
#include "explain/program_facts.h"
#include "ir/verdict.h"
#include "smt/proof_result.h"

namespace spmdcheck::explain {

enum class Role { kPipeline, kData, kFsdp, kTensor, kSequence, kExpert };
inline constexpr int kNumRoles = 6;
absl::string_view RoleKey(Role role);   // pipeline, data, fsdp, tensor, sequence, expert
absl::string_view RoleName(Role role);  // "pipeline", "data parallel", "FSDP/ZeRO", ...

// One piece of evidence for a role of an axis. Strength: 1 weak (shape heuristics only),
// 2 medium, 3 strong (a dot's dimension roles, a collective's purpose, a rotation in a loop).
struct Evidence {
  Role role = Role::kData;
  int strength = 1;
  std::string text;
  std::vector<std::string> instructions;
};

struct CollectiveUse {
  std::string instruction;
  std::string opcode;
  std::string over;        // The axis parts, e.g. `model` or `data,model:(2)4`.
  int64_t bytes = 0;       // Most bytes a device receives per execution.
  int64_t executions = 1;  // Per step; -1 when a loop trip count is unknown (counted once).
  std::string loop;        // Enclosing while loop, if any.
};

struct AxisExplanation {
  std::string name;
  int64_t size = 1;
  int64_t stride = 1;
  std::vector<Role> roles;  // Strongest first; empty when nothing uses the axis.
  std::vector<Evidence> evidence;
  std::vector<CollectiveUse> collectives;
  int64_t bytes_per_step = 0;               // Sum over its collectives of bytes x executions.
  bool bytes_exact = true;                  // false: a trip count was unknown (those counted once).
  std::vector<std::string> sharded_values;  // `NAME dim K` (sub-axes marked), first few.
  int64_t sharded_value_count = 0;
};

struct PipelineCheck {
  std::string name;   // rotation, own-weights, micro-batch-order
  std::string claim;  // What was checked.
  smt::ProofResult result;
  double millis = 0;
};

struct PipelineExplanation {
  std::string axis;
  int64_t stages = 0;
  std::string loop;  // Empty for a pipeline seen only in stage-stacked values.
  std::optional<int64_t> trips;
  int64_t micro_batches = 0;  // 0 when unknown.
  std::string schedule;       // What the loop does per trip, e.g. "inject -> stage -> rotate +1".
  std::vector<std::string> evidence;
  std::vector<PipelineCheck> checks;
};

struct Explanation {
  std::string path;
  std::string module_name;
  bool partitioned = true;
  int64_t num_devices = 1;
  std::string mesh;         // `data=2 x model=4`.
  std::string mesh_source;  // How the mesh was found.
  std::vector<AxisExplanation> axes;
  std::vector<PipelineExplanation> pipelines;
  std::vector<std::string> notes;
  int64_t collectives = 0;
  int64_t bytes_per_step = 0;  // Over every collective (each counted once, whatever its axes).
  std::string answer;          // One line.
  // fails when a pipeline check is refuted, unknown when one is unknown, else holds.
  Verdict verdict() const;
};

struct ExplainOptions {
  std::optional<NamedMesh> mesh;  // --mesh; else read from the modules when they state one.
  int64_t timeout_ms = 10000;     // Per Z3 query.
};

// Explains `input` (a partitioned module, or a global one with shardings), with the
// pre-partitioning program `global` when given. Errors: InvalidArgument for a mesh that does not
// match the module's device count, or a module without an entry computation.
absl::StatusOr<Explanation> Explain(const ModuleSource& input, const ModuleSource* global,
                                    const ExplainOptions& options);

// Renderings (explain/report.cc). Text is for people; JSON's schema is documented in
// docs/explain.md and stable; HTML is one self-contained page (no external resources).
std::string FormatText(const Explanation& explanation);
std::string FormatJson(const Explanation& explanation);
std::string FormatHtml(const Explanation& explanation);

}  // namespace spmdcheck::explain

#endif  // SPMDCHECK_EXPLAIN_EXPLAIN_H_
