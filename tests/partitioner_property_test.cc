// Properties of the reference partitioner (ctest label `property`): for random shapes (rank <= 4,
// uneven and size-1 dims), meshes (1-4 axes, <= 64 devices, non-powers of two, size-1 axes) and
// random pairs of shardings of every plannable form, the reshard plan is correct under the oracle
// and no worse than the naive plan; random elementwise/dot/reduce/reshape/transpose programs with
// random shardings partition into programs the oracle finds equal. RC_PARAMS="max_success=N"
// raises the case counts.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check/check_pipeline.h"
#include "fuzz/gen.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "oracle/equivalence.h"
#include "partitioner/reshard.h"

namespace spmdcheck::partitioner {
namespace {

constexpr int64_t kMaxDevices = 64;

bool Plannable(const HloSharding& s) {
  if (s.IsManual() || s.IsTuple() || s.kind() == HloSharding::Kind::kUnknown) return false;
  for (SubgroupType t : s.subgroup_types()) {
    if (t != SubgroupType::kReplicated) return false;
  }
  return true;
}

rc::Gen<Mesh> SmallMesh() {
  return rc::gen::suchThat(fuzz::GenMesh(),
                           [](const Mesh& m) { return m.num_devices() <= kMaxDevices; });
}

rc::Gen<HloSharding> PlannableSharding(const Shape& shape, const Mesh& mesh) {
  return rc::gen::suchThat(fuzz::GenShardingFor(shape, mesh), Plannable);
}

RC_GTEST_PROP(ReshardProperty, PlanIsCorrectAndNoWorseThanNaive, ()) {
  const Mesh mesh = *SmallMesh();
  Shape shape = *fuzz::GenShape(4);
  shape.set_element_type(PrimitiveType::kS32);
  RC_PRE(shape.ElementCount() > 0);
  const HloSharding from = *PlannableSharding(shape, mesh);
  const HloSharding to = *PlannableSharding(shape, mesh);
  const int64_t n = mesh.num_devices();
  absl::StatusOr<ReshardPlan> plan = PlanReshard(shape, from, to, n);
  RC_ASSERT(plan.ok());
  absl::StatusOr<ReshardPlan> naive = NaiveReshardPlan(shape, from, to, n);
  RC_ASSERT(naive.ok());
  RC_ASSERT(plan->cost.Score() <= naive->cost.Score());
  absl::StatusOr<std::unique_ptr<HloModule>> partitioned =
      BuildReshardModule(shape, from, *plan, n);
  RC_ASSERT(partitioned.ok());
  RC_ASSERT(VerifyModule(**partitioned).ok());
  const std::string text =
      absl::StrCat("HloModule g, num_partitions=", n, "\nENTRY main {\n  p = ", shape.ToString(),
                   " parameter(0), sharding=", from.ToString(), "\n  ROOT c = ", shape.ToString(),
                   " copy(p), sharding=", to.ToString(), "\n}\n");
  absl::StatusOr<ParsedModule> global = ParseHloModule(text);
  RC_ASSERT(global.ok());
  oracle::EquivOptions options;
  options.trials = 1;
  absl::StatusOr<oracle::EquivReport> report =
      oracle::CheckEquivalence(*global->module, **partitioned, options);
  RC_ASSERT(report.ok());
  if (report->verdict != Verdict::kHolds) {
    RC_FAIL(absl::StrCat("plan ", plan->Describe(), "\n", oracle::FormatEquivReport(*report),
                         PrintModule(**partitioned)));
  }
}

// The planner prunes candidates whose first steps already cost more than the best plan so far;
// that must never change the plan it picks.
RC_GTEST_PROP(ReshardProperty, PrunedSearchPicksTheExhaustiveSearchsPlan, ()) {
  const Mesh mesh = *SmallMesh();
  Shape shape = *fuzz::GenShape(4);
  shape.set_element_type(
      *rc::gen::element(PrimitiveType::kS32, PrimitiveType::kBF16, PrimitiveType::kF64));
  RC_PRE(shape.ElementCount() > 0);
  const HloSharding from = *PlannableSharding(shape, mesh);
  const HloSharding to = *PlannableSharding(shape, mesh);
  const int64_t n = mesh.num_devices();
  absl::StatusOr<ReshardPlan> pruned = PlanReshard(shape, from, to, n);
  absl::StatusOr<ReshardPlan> exhaustive = ExhaustiveReshardPlan(shape, from, to, n);
  RC_ASSERT(pruned.ok() == exhaustive.ok());
  if (!pruned.ok()) return;
  RC_TAG(pruned->steps.size());
  RC_ASSERT(pruned->Describe() == exhaustive->Describe());
  RC_ASSERT(pruned->cost.ToString() == exhaustive->cost.ToString());
  RC_ASSERT(pruned->steps.size() == exhaustive->steps.size());
  for (size_t i = 0; i < pruned->steps.size(); ++i) {
    RC_ASSERT(pruned->steps[i].result == exhaustive->steps[i].result);
  }
}

// A program over x: s32[a,b] and y: s32[b,c]: elementwise, dot, transpose, reduce, broadcast,
// reshape, with a random sharding (or none) on every instruction.
RC_GTEST_PROP(PartitionProperty, RandomProgramsCheck, ()) {
  const Mesh mesh = *SmallMesh();
  const int64_t a = *rc::gen::inRange<int64_t>(1, 9);
  const int64_t b = *rc::gen::inRange<int64_t>(1, 9);
  const int64_t c = *rc::gen::inRange<int64_t>(1, 9);
  struct Inst {
    std::string name;
    std::string shape;
    std::string rhs;
    Shape parsed;
  };
  auto S = [](const std::string& t) { return *ParseShape(t); };
  const std::string ab = absl::StrCat("s32[", a, ",", b, "]");
  const std::string bc = absl::StrCat("s32[", b, ",", c, "]");
  const std::string ac = absl::StrCat("s32[", a, ",", c, "]");
  const std::string ca = absl::StrCat("s32[", c, ",", a, "]");
  const std::string cc = absl::StrCat("s32[", c, "]");
  const std::string flat = absl::StrCat("s32[", c * a, "]");
  std::vector<Inst> program = {
      {"x", ab, "parameter(0)", S(ab)},
      {"y", bc, "parameter(1)", S(bc)},
      {"n", ab, "negate(x)", S(ab)},
      {"m", ab, "multiply(n, x)", S(ab)},
      {"d", ac, "dot(m, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}", S(ac)},
      {"t", ca, "transpose(d), dimensions={1,0}", S(ca)},
      {"zero", "s32[]", "constant(0)", S("s32[]")},
      {"r", cc, "reduce(t, zero), dimensions={1}, to_apply=add", S(cc)},
      {"bc", ca, "broadcast(r), dimensions={0}", S(ca)},
      {"s", ca, "subtract(t, bc)", S(ca)},
      {"f", flat, "reshape(s)", S(flat)},
  };
  std::string text = absl::StrCat("HloModule p, num_partitions=", mesh.num_devices(),
                                  "\nadd {\n  p0 = s32[] parameter(0)\n  p1 = s32[] parameter(1)\n"
                                  "  ROOT s = s32[] add(p0, p1)\n}\nENTRY main {\n");
  for (size_t i = 0; i < program.size(); ++i) {
    const Inst& inst = program[i];
    std::string sharding;
    if (inst.parsed.rank() > 0 && *rc::gen::inRange(0, 4) != 0) {
      sharding = absl::StrCat(", sharding=", (*PlannableSharding(inst.parsed, mesh)).ToString());
    }
    absl::StrAppend(&text, i + 1 == program.size() ? "  ROOT " : "  ", inst.name, " = ", inst.shape,
                    " ", inst.rhs, sharding, "\n");
  }
  absl::StrAppend(&text, "}\n");
  absl::StatusOr<ParsedModule> module = ParseHloModule(text);
  RC_ASSERT(module.ok());
  check::CheckOptions options;
  options.trials = 1;
  absl::StatusOr<check::CheckOutcome> outcome = check::CheckPartitioning(*module->module, options);
  RC_ASSERT(outcome.ok());
  if (outcome->status != check::CheckStatus::kHolds) {
    RC_FAIL(absl::StrCat(text, "\n", outcome->message, "\n",
                         outcome->partitioned ? PrintModule(*outcome->partitioned) : ""));
  }
}

}  // namespace
}  // namespace spmdcheck::partitioner
