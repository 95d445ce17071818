#include "smt/rewrite_catalog.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "smt/rewrite_expr.h"
#include "smt/rewrite_rules.h"
#include "smt/rewrite_semantics.h"
#include "smt/z3_guard.h"

namespace spmdcheck::smt {
namespace {

using rw::Const;
using rw::Device;
using rw::Expr;
using rw::Index;
using rw::LinearForm;
using rw::MeshModel;
using rw::RuleContext;
using rw::RuleDef;
using rw::RuleSides;

const RuleDef* FindRule(const std::string& name) {
  for (const RuleDef& r : rw::RewriteRules()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// Ordered factorisations of every n in [2, max] into factors >= 2, at most 4
// axes.
void Factorisations(int64_t remaining_budget, std::vector<int64_t>& prefix,
                    std::vector<std::vector<int64_t>>& out) {
  if (!prefix.empty()) out.push_back(prefix);
  if (prefix.size() >= 4) return;
  for (int64_t f = 2; f <= remaining_budget; ++f) {
    prefix.push_back(f);
    Factorisations(remaining_budget / f, prefix, out);
    prefix.pop_back();
  }
}

std::vector<std::vector<int64_t>> MeshShapes(int64_t max_devices) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> prefix;
  Factorisations(max_devices, prefix, out);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    int64_t pa = 1, pb = 1;
    for (int64_t x : a) pa *= x;
    for (int64_t x : b) pb *= x;
    if (pa != pb) return pa < pb;
    if (a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  return out;
}

void AxisChoices(int rank, int k, std::vector<int>& prefix, std::vector<std::vector<int>>& out) {
  if (static_cast<int>(prefix.size()) == k) {
    out.push_back(prefix);
    return;
  }
  for (int a = 0; a < rank; ++a) {
    if (std::find(prefix.begin(), prefix.end(), a) != prefix.end()) continue;
    prefix.push_back(a);
    AxisChoices(rank, k, prefix, out);
    prefix.pop_back();
  }
}

std::vector<std::pair<std::vector<int64_t>, std::vector<int>>> Instances(const RuleDef& rule,
                                                                         int64_t max_devices) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int>>> result;
  for (const std::vector<int64_t>& mesh : MeshShapes(max_devices)) {
    std::vector<std::vector<int>> choices;
    std::vector<int> prefix;
    AxisChoices(static_cast<int>(mesh.size()), rule.num_axes, prefix, choices);
    for (const std::vector<int>& axes : choices) {
      if (rule.applies && !rule.applies(mesh, axes)) continue;
      result.emplace_back(mesh, axes);
    }
  }
  return result;
}

MeshModel ConstMesh(const std::vector<int64_t>& sizes) {
  MeshModel m;
  for (int64_t s : sizes) m.sizes.push_back(Const(s));
  return m;
}

std::string AxesText(const std::vector<int>& axes) {
  static const char* kNames[] = {"a", "b", "c", "d"};
  std::vector<std::string> parts;
  for (size_t k = 0; k < axes.size(); ++k) {
    parts.push_back(absl::StrCat(k < 4 ? kNames[k] : "?", "=", axes[k]));
  }
  return absl::StrJoin(parts, ",");
}

void CollectVars(const Expr& e, std::set<std::string>& names, std::set<const rw::Node*>& seen) {
  if (!seen.insert(e.get()).second) return;
  if (e->op == rw::Op::kVar) names.insert(e->name);
  for (const Expr& a : e->args) CollectVars(a, names, seen);
}

std::string ShapeText(const std::vector<Expr>& shape, const rw::Env& env) {
  std::vector<std::string> dims;
  for (const Expr& s : shape) {
    absl::StatusOr<int64_t> v = rw::EvalInt(s, env);
    dims.push_back(v.ok() ? absl::StrCat(*v) : "?");
  }
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

struct InstanceResult {
  ProofResult result;
  std::optional<RewriteCounterexample> counterexample;
};

std::string Reason(z3::solver& solver) { return Z3UnknownReason(solver.reason_unknown()); }

// Proves forall device, index: lhs == rhs on one mesh (constant or symbolic
// sizes).
InstanceResult CheckSidesUnguarded(const MeshModel& mesh, const std::vector<int>& axes,
                                   const RuleSides& sides, const std::vector<Expr>& assumptions,
                                   int64_t timeout_ms) {
  InstanceResult out;
  if (!sides.lhs.error.empty() || !sides.rhs.error.empty()) {
    out.result = ProofResult::Unknown(sides.lhs.error.empty() ? sides.rhs.error : sides.lhs.error);
    return out;
  }
  z3::context ctx;
  rw::Z3Lowering lower(ctx);
  auto make_solver = [&]() {
    z3::solver solver(ctx);
    z3::params params(ctx);
    params.set("timeout", Z3TimeoutParam(timeout_ms));
    solver.set(params);
    for (const Expr& a : assumptions) solver.add(lower.Lower(a));
    for (const Expr& s : mesh.sizes) solver.add(lower.Lower(rw::Le(Const(1), s)));
    return solver;
  };
  std::set<std::string> size_names;
  {
    std::set<const rw::Node*> seen;
    for (const Expr& s : mesh.sizes) CollectVars(s, size_names, seen);
    for (const Expr& s : sides.lhs.shape) CollectVars(s, size_names, seen);
    for (const Expr& s : sides.rhs.shape) CollectVars(s, size_names, seen);
    for (const Expr& s : assumptions) CollectVars(s, size_names, seen);
  }
  auto env_of = [&](const z3::model& model) {
    rw::Env env;
    for (const std::string& name : size_names) {
      env[name] = model.eval(lower.VarExpr(name), true).get_numeral_int64();
    }
    return env;
  };
  // 1. Same local shape.
  if (sides.lhs.shape.size() != sides.rhs.shape.size()) {
    out.result = ProofResult::Refuted(absl::StrCat("the sides have ranks ", sides.lhs.shape.size(),
                                                   " and ", sides.rhs.shape.size()));
    return out;
  }
  {
    Expr differs = rw::Bool(false);
    for (size_t k = 0; k < sides.lhs.shape.size(); ++k) {
      differs = rw::Or(differs, rw::Ne(sides.lhs.shape[k], sides.rhs.shape[k]));
    }
    int64_t constant = 0;
    if (!rw::IsConst(differs, &constant) || constant != 0) {
      z3::solver solver = make_solver();
      solver.add(lower.Lower(differs));
      switch (solver.check()) {
        case z3::sat: {
          const rw::Env env = env_of(solver.get_model());
          out.result = ProofResult::Refuted(
              absl::StrCat("local shapes differ: ", ShapeText(sides.lhs.shape, env), " vs ",
                           ShapeText(sides.rhs.shape, env)));
          return out;
        }
        case z3::unknown:
          out.result = ProofResult::Unknown(absl::StrCat("shape check: ", Reason(solver)));
          return out;
        case z3::unsat:
          break;
      }
    }
  }
  // 2. Same element at every device and index. Every quantified variable is bounded; with
  // symbolic sizes an index over a product of sizes is written as row-major digits over the
  // factors (a bijection), so that div/mod by those factors simplify structurally.
  std::vector<Expr> leaves;
  std::function<Expr(const Expr&, const std::string&)> decompose =
      [&](const Expr& size, const std::string& name) -> Expr {
    if (size->op == rw::Op::kMul && !rw::IsConst(size)) {
      const Expr high = decompose(size->args[0], absl::StrCat(name, "h"));
      const Expr low = decompose(size->args[1], absl::StrCat(name, "l"));
      return rw::Add(rw::Mul(high, size->args[1]), low);
    }
    Expr leaf = rw::BoundedVar(name, size);
    leaves.push_back(leaf);
    return leaf;
  };
  Device device;
  Index index;
  for (int k = 0; k < mesh.rank(); ++k)
    device.push_back(decompose(mesh.sizes[k], absl::StrCat("dev", k)));
  for (size_t k = 0; k < sides.lhs.shape.size(); ++k) {
    index.push_back(decompose(sides.lhs.shape[k], absl::StrCat("idx", k)));
  }
  const Expr lhs = sides.lhs.at(device, index);
  const Expr rhs = sides.rhs.at(device, index);
  z3::solver solver = make_solver();
  for (const Expr& leaf : leaves) {
    solver.add(lower.Lower(rw::InRange(leaf, Const(0), leaf->bound)));
  }
  solver.add(lower.Lower(rw::Ne(lhs, rhs)));
  switch (solver.check()) {
    case z3::unsat:
      out.result = ProofResult::Proved();
      return out;
    case z3::unknown:
      out.result = ProofResult::Unknown(Reason(solver));
      return out;
    case z3::sat:
      break;
  }
  const z3::model model = solver.get_model();
  rw::Env env = env_of(model);
  for (const Expr& leaf : leaves) {
    env[leaf->name] = model.eval(lower.VarExpr(leaf->name), true).get_numeral_int64();
  }
  RewriteCounterexample cx;
  cx.axes = axes;
  for (const Expr& s : mesh.sizes) {
    absl::StatusOr<int64_t> v = rw::EvalInt(s, env);
    cx.mesh.push_back(v.ok() ? *v : -1);
  }
  for (const Expr& c : device) {
    absl::StatusOr<int64_t> v = rw::EvalInt(c, env);
    cx.coords.push_back(v.ok() ? *v : -1);
  }
  for (const Expr& i : index) {
    absl::StatusOr<int64_t> v = rw::EvalInt(i, env);
    cx.index.push_back(v.ok() ? *v : -1);
  }
  cx.device = 0;
  for (size_t k = 0; k < cx.coords.size(); ++k) cx.device = cx.device * cx.mesh[k] + cx.coords[k];
  // Re-check the model by concrete evaluation: the two sides must be different
  // linear forms.
  absl::StatusOr<LinearForm> l = rw::EvalElem(lhs, env);
  absl::StatusOr<LinearForm> r = rw::EvalElem(rhs, env);
  if (!l.ok() || !r.ok()) {
    out.result = ProofResult::Unknown(absl::StrCat("the counterexample could not be evaluated: ",
                                                   (l.ok() ? r.status() : l.status()).message()));
    return out;
  }
  if (*l == *r) {
    out.result = ProofResult::Unknown("Z3's counterexample does not re-check by evaluation");
    return out;
  }
  cx.lhs = l->ToString();
  cx.rhs = r->ToString();
  out.result = ProofResult::Refuted(cx.ToString());
  out.counterexample = std::move(cx);
  return out;
}

InstanceResult CheckSides(const MeshModel& mesh, const std::vector<int>& axes,
                          const RuleSides& sides, const std::vector<Expr>& assumptions,
                          int64_t timeout_ms) {
  std::string reason;
  std::optional<InstanceResult> r = GuardZ3Value<InstanceResult>("a rewrite rule", &reason, [&] {
    return CheckSidesUnguarded(mesh, axes, sides, assumptions, timeout_ms);
  });
  if (r.has_value()) return *std::move(r);
  return InstanceResult{ProofResult::Unknown(reason), std::nullopt};
}

RuleSides BuildConcrete(const RuleDef& rule, const std::vector<int64_t>& mesh,
                        const std::vector<int>& axes) {
  RuleContext ctx(ConstMesh(mesh), axes, /*symbolic=*/false);
  return rule.build(ctx);
}

// The parametric proof: mesh [u0, a, u1] or [u0, a, u1, b, u2] with every size
// a variable >= 1.
InstanceResult CheckParametric(const RuleDef& rule, int64_t timeout_ms, std::string* note) {
  std::vector<std::vector<int>> choices;
  int rank = 0;
  if (rule.num_axes == 1) {
    rank = 3;
    choices = {{1}};
  } else if (rule.num_axes == 2) {
    rank = 5;
    choices = {{1, 3}, {3, 1}};
  } else {
    *note = "not attempted (more than two axes)";
    return {ProofResult::Unknown(*note), std::nullopt};
  }
  MeshModel mesh;
  for (int k = 0; k < rank; ++k) mesh.sizes.push_back(rw::Var(absl::StrCat("mesh", k)));
  for (const std::vector<int>& axes : choices) {
    RuleContext ctx(mesh, axes, /*symbolic=*/true);
    RuleSides sides = rule.build(ctx);
    InstanceResult r = CheckSides(mesh, axes, sides, ctx.assumptions(), timeout_ms);
    if (r.result.verdict != Verdict::kHolds) {
      *note = r.result.verdict == Verdict::kUnknown
                  ? absl::StrCat("unknown for symbolic sizes: ", r.result.reason)
                  : absl::StrCat("refuted for symbolic sizes: ", r.result.counterexample);
      return r;
    }
  }
  *note = rank == 3 ? "proved for every size: mesh [u0,a,u1], all sizes >= 1"
                    : "proved for every size: mesh [u0,a,u1,b,u2] and "
                      "[u0,b,u1,a,u2], sizes >= 1";
  return {ProofResult::Proved(), std::nullopt};
}

RuleReport CheckRule(const RuleDef& rule, const CatalogOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  RuleReport report;
  report.name = rule.name;
  report.summary = rule.summary;
  report.xla_pass = rule.xla_pass;
  report.expected_sound = rule.sound;
  std::set<std::vector<int64_t>> shapes;
  std::optional<ProofResult> unknown;
  std::optional<InstanceResult> refuted;
  for (const auto& [mesh, axes] : Instances(rule, options.max_devices)) {
    RuleSides sides = BuildConcrete(rule, mesh, axes);
    InstanceResult r = CheckSides(ConstMesh(mesh), axes, sides, {}, options.timeout_ms);
    if (r.result.verdict == Verdict::kUnknown) {
      if (!unknown.has_value()) {
        unknown = ProofResult::Unknown(absl::StrCat("mesh [", absl::StrJoin(mesh, ","), "] axes ",
                                                    AxesText(axes), ": ", r.result.reason));
      }
      continue;
    }
    ++report.meshes_checked;
    shapes.insert(mesh);
    if (r.result.verdict == Verdict::kFails) {
      refuted = std::move(r);
      break;
    }
  }
  report.mesh_shapes = static_cast<int64_t>(shapes.size());
  if (refuted.has_value()) {
    report.verdict = refuted->result;
    report.counterexample = refuted->counterexample;
  } else if (unknown.has_value()) {
    report.verdict = *unknown;
  } else if (report.meshes_checked == 0) {
    report.verdict = ProofResult::Unknown(
        absl::StrCat("no mesh with at most ", options.max_devices, " devices fits the rule"));
  } else {
    report.verdict = ProofResult::Proved();
  }
  if (!rule.parametric) {
    report.parametric_note = "enumerated only (a loop over the group size or explicit tables)";
  } else if (!rule.sound) {
    report.parametric_note = "not attempted (wrong variant)";
  } else if (!options.parametric) {
    report.parametric_note = "not attempted (--no-parametric)";
  } else if (report.verdict.verdict == Verdict::kHolds) {
    InstanceResult p =
        CheckParametric(rule, options.parametric_timeout_ms, &report.parametric_note);
    report.parametric = p.result.verdict == Verdict::kHolds;
    if (p.result.verdict == Verdict::kFails) {
      report.verdict = p.result;
      report.counterexample = p.counterexample;
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace

std::string RewriteCounterexample::ToString() const {
  return absl::StrCat("mesh [", absl::StrJoin(mesh, ","), "] axes ", AxesText(axes), ", device ",
                      device, " (coords ", absl::StrJoin(coords, ","), "), local index [",
                      absl::StrJoin(index, ","), "]: lhs = ", lhs, ", rhs = ", rhs);
}

bool RuleReport::AsExpected() const {
  return expected_sound ? verdict.verdict == Verdict::kHolds : verdict.verdict == Verdict::kFails;
}

std::vector<std::string> RewriteRuleNames() {
  std::vector<std::string> names;
  for (const RuleDef& r : rw::RewriteRules()) names.push_back(r.name);
  return names;
}

std::vector<RuleReport> CheckRewriteCatalog(const CatalogOptions& options) {
  return CheckRules(rw::RewriteRules(), options);
}

std::vector<RuleReport> CheckRules(const std::vector<rw::RuleDef>& rules,
                                   const CatalogOptions& options) {
  std::vector<RuleReport> reports;
  for (const RuleDef& rule : rules) {
    if (!options.rule.empty() && rule.name != options.rule) continue;
    reports.push_back(CheckRule(rule, options));
  }
  return reports;
}

std::vector<std::pair<std::vector<int64_t>, std::vector<int>>> RewriteInstances(
    const std::string& rule, int64_t max_devices) {
  const RuleDef* def = FindRule(rule);
  if (def == nullptr) return {};
  return Instances(*def, max_devices);
}

namespace {

absl::Status CheckInstanceArgs(const RuleDef* def, const std::string& rule,
                               const std::vector<int64_t>& mesh, const std::vector<int>& axes) {
  if (def == nullptr) return absl::NotFoundError(absl::StrCat("no rule named ", rule));
  if (static_cast<int>(axes.size()) != def->num_axes) {
    return absl::InvalidArgumentError(
        absl::StrCat(rule, " needs ", def->num_axes, " axes, got ", axes.size()));
  }
  for (int a : axes) {
    if (a < 0 || a >= static_cast<int>(mesh.size())) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", a, " out of range"));
    }
  }
  for (int64_t s : mesh) {
    if (s < 1) return absl::InvalidArgumentError("mesh sizes must be positive");
  }
  return absl::OkStatus();
}

std::vector<Expr> CoordsOf(int64_t device, const std::vector<int64_t>& mesh) {
  std::vector<Expr> coords(mesh.size());
  for (size_t k = mesh.size(); k-- > 0;) {
    coords[k] = Const(device % mesh[k]);
    device /= mesh[k];
  }
  return coords;
}

}  // namespace

absl::StatusOr<std::pair<LinearForm, LinearForm>> EvaluateRewriteAt(
    const std::string& rule, const std::vector<int64_t>& mesh, const std::vector<int>& axes,
    int64_t device, const std::vector<int64_t>& index) {
  const RuleDef* def = FindRule(rule);
  absl::Status valid = CheckInstanceArgs(def, rule, mesh, axes);
  if (!valid.ok()) return valid;
  RuleSides sides = BuildConcrete(*def, mesh, axes);
  if (!sides.lhs.error.empty()) return absl::UnimplementedError(sides.lhs.error);
  if (!sides.rhs.error.empty()) return absl::UnimplementedError(sides.rhs.error);
  Index idx;
  for (int64_t i : index) idx.push_back(Const(i));
  const rw::Env env;
  absl::StatusOr<LinearForm> l = rw::EvalElem(sides.lhs.at(CoordsOf(device, mesh), idx), env);
  if (!l.ok()) return l.status();
  absl::StatusOr<LinearForm> r = rw::EvalElem(sides.rhs.at(CoordsOf(device, mesh), idx), env);
  if (!r.ok()) return r.status();
  return std::make_pair(*std::move(l), *std::move(r));
}

absl::StatusOr<std::optional<RewriteCounterexample>> BruteForceRewrite(
    const std::string& rule, const std::vector<int64_t>& mesh, const std::vector<int>& axes) {
  const RuleDef* def = FindRule(rule);
  absl::Status valid = CheckInstanceArgs(def, rule, mesh, axes);
  if (!valid.ok()) return valid;
  RuleSides sides = BuildConcrete(*def, mesh, axes);
  if (!sides.lhs.error.empty()) return absl::UnimplementedError(sides.lhs.error);
  if (!sides.rhs.error.empty()) return absl::UnimplementedError(sides.rhs.error);
  const rw::Env env;
  std::vector<int64_t> shape, rhs_shape;
  for (const Expr& s : sides.lhs.shape) {
    absl::StatusOr<int64_t> v = rw::EvalInt(s, env);
    if (!v.ok()) return v.status();
    shape.push_back(*v);
  }
  for (const Expr& s : sides.rhs.shape) {
    absl::StatusOr<int64_t> v = rw::EvalInt(s, env);
    if (!v.ok()) return v.status();
    rhs_shape.push_back(*v);
  }
  if (shape != rhs_shape) {
    return absl::FailedPreconditionError(absl::StrCat("local shapes differ: [",
                                                      absl::StrJoin(shape, ","), "] vs [",
                                                      absl::StrJoin(rhs_shape, ","), "]"));
  }
  int64_t n = 1, elements = 1;
  for (int64_t s : mesh) n *= s;
  for (int64_t s : shape) elements *= s;
  for (int64_t d = 0; d < n; ++d) {
    const std::vector<Expr> coords = CoordsOf(d, mesh);
    for (int64_t e = 0; e < elements; ++e) {
      std::vector<int64_t> index(shape.size());
      int64_t rest = e;
      for (size_t k = shape.size(); k-- > 0;) {
        index[k] = rest % shape[k];
        rest /= shape[k];
      }
      Index idx;
      for (int64_t i : index) idx.push_back(Const(i));
      absl::StatusOr<LinearForm> l = rw::EvalElem(sides.lhs.at(coords, idx), env);
      if (!l.ok()) return l.status();
      absl::StatusOr<LinearForm> r = rw::EvalElem(sides.rhs.at(coords, idx), env);
      if (!r.ok()) return r.status();
      if (*l != *r) {
        RewriteCounterexample cx;
        cx.mesh = mesh;
        cx.axes = axes;
        cx.device = d;
        for (const Expr& c : coords) cx.coords.push_back(c->value);
        cx.index = index;
        cx.lhs = l->ToString();
        cx.rhs = r->ToString();
        return std::optional<RewriteCounterexample>(std::move(cx));
      }
    }
  }
  return std::optional<RewriteCounterexample>();
}

}  // namespace spmdcheck::smt
