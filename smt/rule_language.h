// The text format of rewrite rules (`spmdcheck prove rule FILE`, and the built-in catalog in
// smt/rules/*.rules): a rule is two HLO fragments, `lhs` and `rhs`, over named mesh axes and
// symbolic local sizes. Documented in docs/prove_rewrites.md. Example:
//
//   rule ag-ag-fuse
//   summary "all-gather(axis b) of all-gather(axis a) == all-gather(axes {b,a})"
//   xla-pass "partitioner ReplicatePartial vs one combined all-gather"
//   expect sound
//   axes a, b
//   sizes c=2, k=2
//   lhs {
//     x = f32[c,k] parameter(0)
//     g = f32[a*c,k] all-gather(x), dimensions={0}, replica_groups=axes(a)
//     ROOT r = f32[b*a*c,k] all-gather(g), dimensions={0}, replica_groups=axes(b)
//   }
//   rhs {
//     x = f32[c,k] parameter(0)
//     ROOT r = f32[b*a*c,k] all-gather(x), dimensions={0}, replica_groups=axes(b,a)
//   }
//
// Each named axis stands for a distinct axis of a device mesh, so a rule is checked on every mesh
// (up to a device bound) and every choice of its axes, and, where no op needs a loop over a group
// size or a concrete table, for every size at once (smt/rewrite_catalog.h). In shapes and
// expressions an axis name means that axis's size; sizes take their listed value on enumerated
// meshes and stay symbolic (>= 1) in the parametric proof.
#ifndef SPMDCHECK_SMT_RULE_LANGUAGE_H_
#define SPMDCHECK_SMT_RULE_LANGUAGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smt/rewrite_rules.h"

namespace spmdcheck::smt::rw {

// The rules of one file. Errors (InvalidArgument) name `path:line:col`.
absl::StatusOr<std::vector<RuleDef>> ParseRules(absl::string_view text, absl::string_view path);

}  // namespace spmdcheck::smt::rw

#endif  // SPMDCHECK_SMT_RULE_LANGUAGE_H_
