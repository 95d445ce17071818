// What the campaign hands over for each finding: a folder per failure signature, and the known
// findings it triages new ones against.
//
// DIR/<signature>/
//   module.hlo        the reduced global module, its header saying what, how found, how to
//                     reproduce (`spmdcheck check ...`)
//   partitioned.hlo   the partitioner's per-device module (XLA's after spmd-partitioning)
//   inputs.txt        the global inputs of the failing trial, in XLA's literal text
//   repro.py          standalone: `pip install jax==V` and `python repro.py` (exit 1: differs)
//   finding.json      everything above as data (schema in docs/fuzz.md)
#ifndef SPMDCHECK_FUZZ_FINDINGS_H_
#define SPMDCHECK_FUZZ_FINDINGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "check/version_matrix.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "nlohmann/json.hpp"

namespace spmdcheck::fuzz {

// A finding already known (corpus/xla-findings/known.json): the campaign counts it and does
// not reduce or write it again.
struct KnownFinding {
  std::string name;  // Its folder in corpus/xla-findings/.
  std::vector<std::string> signatures;
  // A signature that names this finding only when the module also holds each listed op: an
  // opcode (`dynamic-update-slice`), `custom-call:TARGET` (`custom-call:xla.sdy.ShardingGroup`)
  // or `trigger:NAME`, a property of one instruction
  // (`trigger:unsigned-slice-start-over-int32-max`: a dynamic-(update-)slice start that is an
  // unsigned constant above INT32_MAX; `trigger:sharded-no-op-after-shard-to-full`: an identity
  // transpose, same-shape reshape or copy, or same-type convert with a sharding of its own,
  // reading an SPMDShardToFullShape). A signature ending in `.*` matches any op
  // (`xla.oracle-disagrees.*`), for a cause whose symptom shows at whatever op consumes the wrong
  // value. For a bug whose symptom shows at an op too common to name it alone (a Shardy miscompile
  // seen at the custom-call that reshards a manual computation's result).
  struct GuardedSignature {
    std::string signature;
    std::vector<std::string> module_has;
  };
  std::vector<GuardedSignature> guarded_signatures;

  // Whether a finding with `signature`, seen on `module` (or null: no guard holds), is this one.
  bool Matches(const std::string& signature, const HloModule* module) const;
  bool MatchesUnguarded(const std::string& signature) const;
  std::vector<std::string> jax_versions;  // Where it was seen.
  std::string status;                     // "open", "fixed upstream in ...", ...
  std::string upstream;                   // "openxla/xla#49118", or "not found upstream".
};

// Reads known.json; NotFound when the file is absent, InvalidArgument when malformed.
absl::StatusOr<std::vector<KnownFinding>> LoadKnownFindings(const std::string& path);
// The known finding with this signature, or null. A guarded signature matches only when `module`
// (the module the finding was seen on) is given and holds every op its guard lists.
const KnownFinding* FindKnown(const std::vector<KnownFinding>& known, const std::string& signature,
                              const HloModule* module = nullptr);

// Whether a finding also shows under another jaxlib (another virtual environment).
using check::VersionCheck;  // check/version_matrix.h

struct FindingRecord {
  std::string signature;
  std::string partitioner;  // The spec.
  bool claim = true;        // A bug claim (confirmed by XLA, a crash, a rejection).
  std::string campaign;     // The campaign command that found it.
  int64_t first_case = 0;
  uint64_t case_seed = 0;
  double seconds_to_find = 0;
  std::string reproduce;   // The `spmdcheck check ...` command.
  std::string message;     // Expected vs actual, or the crash.
  std::string divergence;  // The first diverging instruction (our oracle), when known.
  std::string reduction;   // The reducer's report, or why not reduced.
  // For a miscompile whose root moved to the op that makes the wrong value: that signature.
  std::string root_cause;
  std::string partitioner_version;
  std::vector<VersionCheck> versions;
  std::string versions_note;  // Why `versions` were not tried, when they were not.
  std::string broken_by;      // For a miscompile made after spmd-partitioning: the pass.
  std::string repro_note;     // Why there is no repro.py, when there is none.
  nlohmann::json ToJson() const;
};

struct FindingFiles {
  const HloModule* module = nullptr;  // Required.
  std::string partitioned_text;       // May be empty.
  std::vector<Literal> inputs;        // May be empty.
  std::string repro_script;           // May be empty (then repro_note says why).
  // The program as jax-level StableHLO (an sdy-level case): written as module.mlir, which
  // `spmdcheck check` compiles as jax.jit does. Empty: none.
  std::string jax_source;
};

// Writes DIR/<signature>/ (created). Returns the folder. An error names the file that could not
// be written: a finding that is not on disk must not be silently dropped.
absl::StatusOr<std::string> WriteFindingFolder(const std::string& dir, const FindingRecord& record,
                                               const FindingFiles& files);

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_FINDINGS_H_
