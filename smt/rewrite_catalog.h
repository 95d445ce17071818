// The rewrite catalog: named rewrite rules over collectives (the ones XLA's
// passes and the SPMD partitioner perform, and tempting wrong variants), each
// proved with Z3 for every mesh shape (ordered factorisations into axes of size
// >= 2, up to 4 axes) and every choice of axes up to a device bound, and —
// where the rule needs no loop over the group size — parametrically: for
// symbolic axis and local sizes, on the mesh [u0, a, u1(, b, u2)] that covers
// every placement of the chosen axes. A distributed value maps (device
// coordinates, local index) to an element; inputs are uninterpreted functions
// of (device, index), so a proof covers every input on every device. Element
// arithmetic is over the integers (reassociation rules say nothing about float
// rounding).
#ifndef SPMDCHECK_SMT_REWRITE_CATALOG_H_
#define SPMDCHECK_SMT_REWRITE_CATALOG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "smt/proof_result.h"
#include "smt/rewrite_expr.h"
#include "smt/rewrite_rules.h"

namespace spmdcheck::smt {

struct CatalogOptions {
  int64_t max_devices = 16;    // Enumerate meshes with at most this many devices.
  std::string rule;            // Only this rule (empty: all).
  int64_t timeout_ms = 10000;  // Per Z3 query.
  bool parametric = true;      // Also try the symbolic-size proof where the rule allows it.
  int64_t parametric_timeout_ms = 5000;
};

// Where a rule's two sides differ.
struct RewriteCounterexample {
  std::vector<int64_t> mesh;  // Axis sizes.
  std::vector<int> axes;      // The chosen axes (a, b, ...).
  int64_t device = 0;         // Row-major over the mesh.
  std::vector<int64_t> coords;
  std::vector<int64_t> index;  // Local index.
  std::string lhs;             // Both sides as linear forms over the inputs X_k(coords;index).
  std::string rhs;
  std::string ToString() const;
};

struct RuleReport {
  std::string name;
  std::string summary;
  std::string xla_pass;
  bool expected_sound = true;
  ProofResult verdict;          // Over the enumerated meshes (refuted at the first
                                // counterexample).
  int64_t meshes_checked = 0;   // (mesh shape, axis choice) instances proved or refuted.
  int64_t mesh_shapes = 0;      // Distinct mesh shapes among them.
  bool parametric = false;      // Also proved for every size (symbolic).
  std::string parametric_note;  // Why not, or what was proved.
  double seconds = 0;
  std::optional<RewriteCounterexample> counterexample;
  // Sound and proved, or unsound and refuted.
  bool AsExpected() const;
};

std::vector<std::string> RewriteRuleNames();

// Checks every rule (or options.rule). Unknown rule names give an empty vector.
std::vector<RuleReport> CheckRewriteCatalog(const CatalogOptions& options);

// Checks `rules` (e.g. a user's rule file, smt/rule_language.h) exactly as the catalog's rules
// are checked (or only options.rule).
std::vector<RuleReport> CheckRules(const std::vector<rw::RuleDef>& rules,
                                   const CatalogOptions& options);

// Both sides of a rule at one concrete point (mesh, axes, device id, local
// index), as linear forms over the inputs: lets a caller re-check a
// counterexample by evaluation.
absl::StatusOr<std::pair<rw::LinearForm, rw::LinearForm>> EvaluateRewriteAt(
    const std::string& rule, const std::vector<int64_t>& mesh, const std::vector<int>& axes,
    int64_t device, const std::vector<int64_t>& index);

// Brute force: evaluates both sides at every device and index of one instance
// (no Z3). Returns the first differing point's counterexample, nullopt when the
// sides agree everywhere.
absl::StatusOr<std::optional<RewriteCounterexample>> BruteForceRewrite(
    const std::string& rule, const std::vector<int64_t>& mesh, const std::vector<int>& axes);

// The instances the catalog enumerates for a device bound: mesh shapes and axis
// choices.
std::vector<std::pair<std::vector<int64_t>, std::vector<int>>> RewriteInstances(
    const std::string& rule, int64_t max_devices);

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_REWRITE_CATALOG_H_
