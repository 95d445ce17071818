// The reducer (fuzz/reducer.h): reductions driven by structural and oracle
// predicates end at small modules that still satisfy the predicate, verify, and
// are the same on every run.
#include "fuzz/reducer.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <chrono>
#include <string>

#include "absl/strings/match.h"
#include "fuzz/program_gen.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/sharding.h"
#include "ir/verifier.h"
#include "oracle/engine.h"

namespace spmdcheck::fuzz {
namespace {

std::unique_ptr<HloModule> Parse(absl::string_view text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

// A dot whose lhs or rhs is tiled (sharding on the operand itself) along a
// contracting dim.
bool HasDotTiledOnContractingDim(const HloModule& m) {
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode() != HloOpcode::kDot || !i->attrs().dot_dimension_numbers) continue;
      const DotDimensionNumbers& dn = *i->attrs().dot_dimension_numbers;
      for (int side = 0; side < 2; ++side) {
        const std::optional<HloSharding>& s = i->operand(side)->sharding();
        if (!s || !s->IsTiled()) continue;
        for (int64_t d : side == 0 ? dn.lhs_contracting : dn.rhs_contracting) {
          if (d < s->TiledDataRank() && s->tile_assignment().dim(d) > 1) return true;
        }
      }
    }
  }
  return false;
}

InterestingnessFn DotPredicate() {
  return [](const HloModule& m) -> absl::StatusOr<bool> { return HasDotTiledOnContractingDim(m); };
}

// The oracle refuses the module naming `op`.
InterestingnessFn OracleUnsupported(std::string op) {
  return [op](const HloModule& m) -> absl::StatusOr<bool> {
    oracle::Engine engine(m, oracle::EngineOptions());
    const absl::Status s = engine.CheckRunnable();
    return absl::IsUnimplemented(s) && absl::StrContains(s.message(), op);
  };
}

constexpr absl::string_view kFftModule = R"(HloModule fft_case, num_partitions=8

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY e {
  p0 = f32[8,4] parameter(0), sharding={devices=[2,2,2]<=[8] last_tile_dim_replicate}
  p1 = f32[8,4] parameter(1)
  a = f32[8,4] add(p0, p1), sharding={devices=[4,2]<=[2,4]T(1,0)}
  n = f32[8,4] negate(a)
  t = f32[4,8] transpose(n), dimensions={1,0}, sharding={devices=[1,8]<=[8]}
  c = c64[4,8] convert(t)
  f = c64[4,8] fft(c), fft_type=FFT, fft_length={8}
  r = f32[4,8] real(f)
  m = f32[4,8] multiply(r, t)
  zero = f32[] constant(0)
  s = f32[4] reduce(m, zero), dimensions={1}, to_apply=add
  three = f32[] constant(3)
  b = f32[8,4] broadcast(three), dimensions={}
  d = f32[8,4] subtract(a, b)
  ROOT out = (f32[4], f32[8,4], f32[8,4]) tuple(s, a, d), sharding={{replicated}, {devices=[8,1]<=[8]}, {replicated}}
}
)";

TEST(ReducerTest, OracleUnsupportedOpReducesToTheOp) {
  auto module = Parse(kFftModule);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(VerifyModule(*module).ok());
  absl::StatusOr<ReduceResult> r = ReduceModule(*module, OracleUnsupported("fft"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(VerifyModule(*r->module).ok());
  EXPECT_TRUE(*OracleUnsupported("fft")(*r->module));
  EXPECT_LE(r->report.entry_instructions_after, 2) << r->hlo_text;
  EXPECT_EQ(r->report.instructions_after, r->report.entry_instructions_after) << r->hlo_text;
  EXPECT_EQ(r->report.devices_before, 8);
  EXPECT_EQ(r->report.devices_after, 1) << r->hlo_text;
  EXPECT_EQ(r->report.instructions_before, 18);
  EXPECT_GT(r->report.predicate_calls, 1);
  EXPECT_LE(r->report.predicate_calls, 400);
  // Deterministic.
  absl::StatusOr<ReduceResult> again = ReduceModule(*module, OracleUnsupported("fft"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->hlo_text, r->hlo_text);
  EXPECT_EQ(again->report.predicate_calls, r->report.predicate_calls);
  // The text is what the module prints, and parses back.
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(r->hlo_text);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(PrintModule(*parsed->module), r->hlo_text);
}

TEST(ReducerTest, GeneratedDotTiledOnContractingDimReducesToTheDot) {
  const rc::Gen<GeneratedProgram> gen = GenProgram();
  int reduced = 0;
  for (uint64_t seed = 1; seed < 3000 && reduced < 3; ++seed) {
    const GeneratedProgram p = gen(rc::Random(seed), 100).value();
    if (p.module == nullptr || p.instruction_count < 10 ||
        !HasDotTiledOnContractingDim(*p.module)) {
      continue;
    }
    ++reduced;
    absl::StatusOr<ReduceResult> r = ReduceModule(*p.module, DotPredicate());
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(VerifyModule(*r->module).ok());
    EXPECT_TRUE(HasDotTiledOnContractingDim(*r->module));
    // Two parameters (at least one tiled on a contracting dim) and the dot.
    EXPECT_LE(r->report.entry_instructions_after, 3) << "seed " << seed << "\n" << r->hlo_text;
    EXPECT_LT(r->report.instructions_after, r->report.instructions_before);
    EXPECT_LE(r->report.devices_after, 2) << r->hlo_text;
    absl::StatusOr<ReduceResult> again = ReduceModule(*p.module, DotPredicate());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->hlo_text, r->hlo_text);
  }
  EXPECT_EQ(reduced, 3);
}

TEST(ReducerTest, ShrinksDimensionsConsistentlyAndSimplifiesShardings) {
  auto module = Parse(R"(HloModule dims, num_partitions=4
ENTRY e {
  p0 = f32[16,8] parameter(0), sharding={devices=[2,2]<=[4]}
  p1 = f32[16,8] parameter(1), sharding={devices=[2,2]<=[2,2]T(1,0)}
  a = f32[16,8] add(p0, p1)
  b = f32[16,8,3] broadcast(a), dimensions={0,1}
  s = f32[8,8,3] slice(b), slice={[4:12], [0:8], [0:3]}
  ROOT r = f32[8,8,3] negate(s), sharding={devices=[1,2,1,2]<=[4] last_tile_dim_replicate}
})");
  ASSERT_NE(module, nullptr);
  // Interesting: the negate is still there and its operand has a dim of at
  // least 2.
  auto negate_of_wide = [](const HloModule& m) -> absl::StatusOr<bool> {
    for (const auto& i : m.entry()->instructions()) {
      if (i->opcode() == HloOpcode::kNegate && i->shape().rank() >= 1 &&
          i->shape().dimensions(0) >= 2) {
        return true;
      }
    }
    return false;
  };
  absl::StatusOr<ReduceResult> r = ReduceModule(*module, negate_of_wide);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(VerifyModule(*r->module).ok());
  EXPECT_EQ(r->report.entry_instructions_after, 2) << r->hlo_text;
  EXPECT_EQ(r->report.devices_after, 1) << r->hlo_text;
  const HloInstruction* root = r->module->entry()->root();
  EXPECT_EQ(root->opcode(), HloOpcode::kNegate);
  EXPECT_EQ(root->shape().dimensions(0), 2) << r->hlo_text;
  EXPECT_EQ(root->shape().ElementCount(), 2) << r->hlo_text;
  EXPECT_FALSE(root->sharding().has_value()) << r->hlo_text;
}

TEST(ReducerTest, KeepsTheMeshWhenTheBugNeedsIt) {
  auto module = Parse(R"(HloModule mesh, num_partitions=8
ENTRY e {
  p0 = f32[8,8] parameter(0), sharding={devices=[4,2]<=[2,4]T(1,0)}
  ROOT n = f32[8,8] negate(p0), sharding={devices=[2,2,2]<=[8] last_tile_dim_replicate}
})");
  ASSERT_NE(module, nullptr);
  // Interesting: a parameter tiled 2-way or more along dim 0.
  auto tiled_param = [](const HloModule& m) -> absl::StatusOr<bool> {
    for (const HloInstruction* p : m.entry()->parameters()) {
      if (p != nullptr && p->sharding() && p->sharding()->IsTiled() &&
          p->sharding()->tile_assignment().dim(0) >= 2) {
        return true;
      }
    }
    return false;
  };
  absl::StatusOr<ReduceResult> r = ReduceModule(*module, tiled_param);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->module->num_partitions(), 2) << r->hlo_text;
  EXPECT_EQ(r->module->entry()->root()->sharding()->ToString(), "{devices=[2,1]<=[2]}")
      << r->hlo_text;
}

// Reducing generated programs to "still contains opcode X" always ends at a module that verifies,
// still contains X, is no larger, and is the same on a second run.
TEST(ReducerTest, GeneratedProgramsReduceToSmallModulesThatKeepTheOpcode) {
  const rc::Gen<GeneratedProgram> gen = GenProgram();
  int reductions = 0;
  int64_t before = 0, after = 0;
  for (uint64_t seed = 100; seed < 160; ++seed) {
    const GeneratedProgram p = gen(rc::Random(seed), 100).value();
    ASSERT_NE(p.module, nullptr);
    for (HloOpcode op : {HloOpcode::kGather, HloOpcode::kScatter, HloOpcode::kWhile,
                         HloOpcode::kPad, HloOpcode::kDynamicUpdateSlice, HloOpcode::kReduce}) {
      auto has = [op](const HloModule& m) -> absl::StatusOr<bool> {
        for (const auto& c : m.computations()) {
          for (const auto& i : c->instructions()) {
            if (i->opcode() == op) return true;
          }
        }
        return false;
      };
      if (!*has(*p.module)) continue;
      absl::StatusOr<ReduceResult> r = ReduceModule(*p.module, has);
      ASSERT_TRUE(r.ok()) << r.status().message();
      ASSERT_TRUE(VerifyModule(*r->module).ok()) << r->hlo_text;
      EXPECT_TRUE(*has(*r->module));
      EXPECT_LE(r->report.instructions_after, r->report.instructions_before);
      // At most the op, its operands and (for while) the loop's computations.
      EXPECT_LE(r->report.entry_instructions_after, 6) << HloOpcodeString(op) << "\n"
                                                       << r->hlo_text;
      ++reductions;
      before += r->report.instructions_before;
      after += r->report.instructions_after;
      if (reductions % 7 == 0) {
        absl::StatusOr<ReduceResult> again = ReduceModule(*p.module, has);
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(again->hlo_text, r->hlo_text);
      }
    }
  }
  EXPECT_GE(reductions, 40);
  EXPECT_LT(after * 4, before);  // On average to less than a quarter.
}

TEST(ReducerTest, RefusesUninterestingAndInvalidInputAndPassesPredicateErrors) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
})");
  ASSERT_NE(module, nullptr);
  absl::StatusOr<ReduceResult> r =
      ReduceModule(*module, [](const HloModule&) -> absl::StatusOr<bool> { return false; });
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  absl::StatusOr<ReduceResult> e = ReduceModule(
      *module,
      [](const HloModule&) -> absl::StatusOr<bool> { return absl::InternalError("boom"); });
  EXPECT_TRUE(absl::IsInternal(e.status()));
  // A broken module: the negate's shape is wrong.
  module->entry()->root()->set_shape(Shape::Array(PrimitiveType::kF32, {5}));
  absl::StatusOr<ReduceResult> bad =
      ReduceModule(*module, [](const HloModule&) -> absl::StatusOr<bool> { return true; });
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
}

// A wrong value made by `bad` and only carried by the ops above it: the root moves down to it.
TEST(ReducerTest, DescendRootEndsAtTheOpThatMakesTheInterestingValue) {
  auto module = Parse(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  bad = f32[4] add(p, q)
  n = f32[4] negate(bad)
  c = f32[8] concatenate(q, n), dimensions={0}
  ROOT r = f32[8] abs(c)
})");
  ASSERT_NE(module, nullptr);
  auto has_bad = [](const HloModule& m) -> absl::StatusOr<bool> {
    return m.entry()->FindInstruction("bad") != nullptr;
  };
  const auto later = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  absl::StatusOr<DescendResult> d = DescendRoot(*module, has_bad, later);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->steps, 3);
  EXPECT_EQ(d->module->entry()->root()->name(), "bad");
  EXPECT_EQ(d->module->entry()->instruction_count(), 3);  // p, q and bad: the rest is dead.
  // Not interesting anywhere below the root: nothing moves. A past deadline: nothing is tried.
  absl::StatusOr<DescendResult> none = DescendRoot(
      *module, [](const HloModule&) -> absl::StatusOr<bool> { return false; }, later);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->steps, 0);
  EXPECT_EQ(none->module->entry()->root()->name(), "r");
  absl::StatusOr<DescendResult> late =
      DescendRoot(*module, has_bad, std::chrono::steady_clock::now());
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->candidates_tried, 0);
  // The predicate's error stops the walk.
  absl::StatusOr<DescendResult> error = DescendRoot(
      *module, [](const HloModule&) -> absl::StatusOr<bool> { return absl::InternalError("boom"); },
      later);
  EXPECT_TRUE(absl::IsInternal(error.status()));
}

// The root moves to an operand only under the sharding the old root gave it: `bad` miscompiles
// only when it is split on dim 1 as its consumer is (a concatenate along the unsplit dim 0), the
// way a partitioner's bug depends on the sharding its consumer propagated to it.
TEST(ReducerTest, DescendRootGivesTheNewRootItsConsumersSharding) {
  auto module = Parse(R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[4,4] parameter(0)
  q = f32[4,4] parameter(1)
  bad = f32[4,4] add(p, q)
  ROOT c = f32[8,4] concatenate(q, bad), dimensions={0}, sharding={devices=[1,2]<=[2]}
})");
  ASSERT_NE(module, nullptr);
  const HloSharding split = *ParseSharding("{devices=[1,2]<=[2]}");
  // Interesting while `bad` is there, and as the root only with `split`.
  auto bad_split = [split](const HloModule& m) -> absl::StatusOr<bool> {
    const HloInstruction* root = m.entry()->root();
    if (root->name() != "bad") return m.entry()->FindInstruction("bad") != nullptr;
    return root->sharding().has_value() && *root->sharding() == split;
  };
  const auto later = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  absl::StatusOr<DescendResult> d = DescendRoot(*module, bad_split, later);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->steps, 1);
  EXPECT_EQ(d->module->entry()->root()->name(), "bad");
  EXPECT_EQ(d->module->entry()->root()->sharding(), std::optional<HloSharding>(split));
  ASSERT_EQ(d->step_notes.size(), 1);
  EXPECT_EQ(d->step_notes[0], "c -> bad (consumer's sharding {devices=[1,2]<=[2]})");

  // The sharding propagation gave `bad` is tried first: when it keeps the finding, it stays.
  const HloSharding rows = *ParseSharding("{devices=[2,1]<=[2]}");
  DescendOptions options;
  options.propagated.emplace("bad", rows);
  auto bad_any = [](const HloModule& m) -> absl::StatusOr<bool> {
    return m.entry()->FindInstruction("bad") != nullptr;
  };
  absl::StatusOr<DescendResult> p = DescendRoot(*module, bad_any, later, options);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->module->entry()->root()->sharding(), std::optional<HloSharding>(rows));
  EXPECT_EQ(p->candidates_tried, 1);
  // ... and when it does not, the consumer's is.
  absl::StatusOr<DescendResult> c = DescendRoot(*module, bad_split, later, options);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->module->entry()->root()->sharding(), std::optional<HloSharding>(split));
  EXPECT_EQ(c->candidates_tried, 2);
  // A finding that needs the root unannotated still descends (the last candidate).
  auto bad_bare = [](const HloModule& m) -> absl::StatusOr<bool> {
    const HloInstruction* root = m.entry()->root();
    if (root->name() != "bad") return m.entry()->FindInstruction("bad") != nullptr;
    return !root->sharding().has_value();
  };
  absl::StatusOr<DescendResult> bare = DescendRoot(*module, bad_bare, later, options);
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->module->entry()->root()->name(), "bad");
  EXPECT_EQ(bare->candidates_tried, 3);
}

// The rules ConsumerDerivedSharding knows, and that it knows no others.
TEST(ReducerTest, ConsumerDerivedShardingRules) {
  auto module = Parse(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[4,4] parameter(0)
  q = f32[4,8] parameter(1)
  s = f32[] parameter(2)
  n = f32[4,4] negate(p)
  cv = s32[4,4] convert(p)
  c = f32[4,12] concatenate(p, q), dimensions={1}
  pd = f32[6,4] pad(p, s), padding=1_1x0_0
  d = f32[4,8] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[4,4], f32[4,8]) tuple(n, d)
})");
  ASSERT_NE(module, nullptr);
  const HloComputation& e = *module->entry();
  const HloSharding s2x2 = *ParseSharding("{devices=[2,2]<=[4]}");
  auto derived = [&](const char* name, int64_t k, const HloSharding& s) {
    std::optional<HloSharding> d = ConsumerDerivedSharding(*e.FindInstruction(name), k, s);
    return d.has_value() ? d->ToString(false) : std::string("none");
  };
  EXPECT_EQ(derived("n", 0, s2x2), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(derived("cv", 0, s2x2), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(derived("pd", 0, s2x2), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(derived("pd", 1, s2x2), "none");  // The padding value is a scalar.
  // The concatenated dim 1 is split: its devices join the replication group.
  EXPECT_EQ(derived("c", 1, s2x2), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_EQ(derived("c", 0, *ParseSharding("{devices=[4,1]<=[4]}")), "{devices=[4,1]<=[4]}");
  EXPECT_EQ(derived("d", 0, s2x2), "none");  // No rule for a dot.
  const HloSharding tuple = HloSharding::Tuple({s2x2, HloSharding::Replicate()});
  EXPECT_EQ(derived("t", 0, tuple), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(derived("t", 1, tuple), "{replicated}");
}

TEST(ReducerTest, RespectsThePredicateCallLimit) {
  auto module = Parse(kFftModule);
  ASSERT_NE(module, nullptr);
  ReduceOptions options;
  options.max_predicate_calls = 3;
  absl::StatusOr<ReduceResult> r = ReduceModule(*module, OracleUnsupported("fft"), options);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->report.stopped_by_limit);
  EXPECT_LE(r->report.predicate_calls, 5);
  EXPECT_TRUE(*OracleUnsupported("fft")(*r->module));
}

}  // namespace
}  // namespace spmdcheck::fuzz
