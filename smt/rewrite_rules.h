// The rules of the rewrite catalog: each builds its two sides over a mesh (constant sizes when
// enumerated, variables when proved parametrically) and a choice of mesh axes. The built-in ones
// are written in the rule language (smt/rule_language.h) in smt/rules/*.rules.
#ifndef SPMDCHECK_SMT_REWRITE_RULES_H_
#define SPMDCHECK_SMT_REWRITE_RULES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "smt/rewrite_expr.h"
#include "smt/rewrite_semantics.h"

namespace spmdcheck::smt::rw {

// What a rule builder gets: the mesh and the chosen axes (distinct), and a way
// to name local sizes (a constant when enumerated, a variable >= 1 when
// parametric).
class RuleContext {
 public:
  RuleContext(MeshModel mesh, std::vector<int> axes, bool symbolic)
      : mesh_(std::move(mesh)), axes_(std::move(axes)), symbolic_(symbolic) {}
  const MeshModel& mesh() const { return mesh_; }
  int axis(int k) const { return axes_[k]; }
  const std::vector<int>& axes() const { return axes_; }
  bool symbolic() const { return symbolic_; }
  // A local size: `value` when enumerated, the variable `name` (>= 1) when
  // symbolic.
  Expr Size(const std::string& name, int64_t value);
  // Concrete axis sizes (enumerated meshes only; empty when symbolic).
  std::vector<int64_t> ConcreteSizes() const;
  const std::vector<Expr>& assumptions() const { return assumptions_; }

 private:
  MeshModel mesh_;
  std::vector<int> axes_;
  bool symbolic_;
  std::vector<Expr> assumptions_;
};

struct RuleSides {
  Dist lhs;
  Dist rhs;
};

struct RuleDef {
  std::string name;
  std::string summary;   // One line: LHS -> RHS.
  std::string xla_pass;  // The XLA pass or partitioner path that performs it (""
                         // if none).
  bool sound = true;
  int num_axes = 1;         // Distinct mesh axes the rule is stated over.
  bool parametric = false;  // Buildable with symbolic sizes (no loop over a group size).
  // Extra applicability condition on a concrete mesh and axis choice (may be
  // empty).
  std::function<bool(const std::vector<int64_t>& mesh, const std::vector<int>& axes)> applies;
  std::function<RuleSides(RuleContext&)> build;
  std::string source;  // The rule's text (smt/rule_language.h), for users to read.
};

// The built-in catalog, parsed from its rule files (smt/rules/*.rules, embedded). A file that
// does not parse is left out and reported by BuiltinRulesStatus (a test keeps it OK).
const std::vector<RuleDef>& RewriteRules();
absl::Status BuiltinRulesStatus();

}  // namespace spmdcheck::smt::rw

#endif  // SPMDCHECK_SMT_REWRITE_RULES_H_
