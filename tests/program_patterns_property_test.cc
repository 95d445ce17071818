// The program generator's bug-pattern catalogue (fuzz/program_gen.h GenPattern): every pattern
// is generated when it has a positive weight, a program that names a pattern contains it (checked
// here on the module with this file's own, simpler reading of each pattern), weight 0 switches a
// pattern off, pattern-heavy programs verify and the oracle runs them on all their devices, and
// the `name=w` weight syntax.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fuzz/program_gen.h"
#include "ir/verifier.h"
#include "oracle/engine.h"
#include "oracle/inputs.h"

namespace spmdcheck::fuzz {
namespace {

std::vector<const HloInstruction*> All(const HloModule& module) {
  std::vector<const HloInstruction*> out;
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) out.push_back(i.get());
  }
  return out;
}

bool Tiled(const HloInstruction* i) {
  return i->sharding().has_value() && i->sharding()->IsTiled() && i->sharding()->NumTiles() > 1;
}

int64_t Tiles(const HloInstruction* i, int64_t dim) {
  if (!i->sharding().has_value() || !i->sharding()->IsTiled() ||
      dim >= i->sharding()->TiledDataRank()) {
    return 1;
  }
  return i->sharding()->tile_assignment().dim(dim);
}

bool AnyTiledOperand(const HloInstruction* i) {
  for (const HloInstruction* o : i->operands()) {
    if (Tiled(o)) return true;
  }
  return false;
}

// (sharding, shape) of every array leaf of an instruction's sharding.
std::vector<std::pair<HloSharding, Shape>> ShardedLeaves(const HloInstruction* i) {
  std::vector<std::pair<HloSharding, Shape>> out;
  if (!i->sharding().has_value()) return out;
  if (!i->sharding()->IsTuple()) {
    out.push_back({*i->sharding(), i->shape()});
    return out;
  }
  // Generated tuples are flat.
  for (size_t k = 0; k < i->sharding()->tuple_elements().size(); ++k) {
    if (k < i->shape().tuple_shapes().size()) {
      out.push_back({i->sharding()->tuple_elements()[k], i->shape().tuple_shapes()[k]});
    }
  }
  return out;
}

std::optional<int64_t> ScalarInt(const HloInstruction* i) {
  if (i->opcode() == HloOpcode::kBroadcast) i = i->operand(0);
  if (i->opcode() != HloOpcode::kConstant || i->shape().ElementCount() != 1 ||
      !IsIntegralType(i->shape().element_type())) {
    return std::nullopt;
  }
  return i->literal()->GetInt64(0);
}

// This test's own reading of each pattern: the module holds an instruction of the pattern's kind
// with the property that makes it the pattern (looser than the generator's detector where the
// exact dim roles would repeat it).
bool Contains(const HloModule& module, GenPattern p) {
  for (const HloInstruction* i : All(module)) {
    const HloOpcode op = i->opcode();
    const auto& a = i->attrs();
    switch (p) {
      case GenPattern::kDsOutOfRangeStart:
      case GenPattern::kDusOutOfRangeStart: {
        const bool ds = p == GenPattern::kDsOutOfRangeStart;
        if (op != (ds ? HloOpcode::kDynamicSlice : HloOpcode::kDynamicUpdateSlice)) break;
        const int64_t first = ds ? 1 : 2;
        const HloInstruction* base = i->operand(0);
        for (int64_t d = 0; d + first < i->operand_count(); ++d) {
          std::optional<int64_t> v = ScalarInt(i->operand(first + d));
          if (!v) continue;
          const int64_t size = ds ? i->shape().dimensions(d) : i->operand(1)->shape().dimensions(d);
          const bool u32 = i->operand(first + d)->shape().element_type() == PrimitiveType::kU32;
          const int64_t start = u32 ? static_cast<int64_t>(static_cast<uint32_t>(*v)) : *v;
          const bool sharded = Tiles(base, d) > 1 || (!ds && Tiles(i, d) > 1);
          if (sharded && (start < 0 || start > base->shape().dimensions(d) - size)) return true;
        }
        break;
      }
      case GenPattern::kIndexS64:
      case GenPattern::kIndexU32: {
        const PrimitiveType want =
            p == GenPattern::kIndexS64 ? PrimitiveType::kS64 : PrimitiveType::kU32;
        if (op == HloOpcode::kGather || op == HloOpcode::kScatter) {
          if (i->operand(1)->shape().element_type() == want) return true;
        }
        if (op == HloOpcode::kDynamicSlice || op == HloOpcode::kDynamicUpdateSlice) {
          if (i->operands().back()->shape().element_type() == want) return true;
        }
        break;
      }
      case GenPattern::kUnevenDim:
      case GenPattern::kUnevenDimOverMoreDevices:
        for (const auto& [sh, shape] : ShardedLeaves(i)) {
          if (!sh.IsTiled() || !shape.IsArray()) continue;
          for (int64_t d = 0; d < std::min<int64_t>(shape.rank(), sh.TiledDataRank()); ++d) {
            const int64_t t = sh.tile_assignment().dim(d), n = shape.dimensions(d);
            if (t <= 1) continue;
            if (p == GenPattern::kUnevenDim ? (n >= t && n % t != 0) : n < t) return true;
          }
        }
        break;
      case GenPattern::kPartialReplication:
        if (i->sharding().has_value() &&
            i->sharding()->ToString().find("last_tile_dim_replicate") != std::string::npos) {
          return true;
        }
        break;
      case GenPattern::kTransposedIotaDevices:
        if (Tiled(i)) {
          const std::vector<int64_t> dev = i->sharding()->tile_assignment().Devices();
          if (!std::is_sorted(dev.begin(), dev.end())) return true;
        }
        if (i->sharding().has_value() && i->sharding()->IsTuple()) {
          for (const HloSharding& e : i->sharding()->tuple_elements()) {
            if (!e.IsTiled()) continue;
            const std::vector<int64_t> dev = e.tile_assignment().Devices();
            if (!std::is_sorted(dev.begin(), dev.end())) return true;
          }
        }
        break;
      case GenPattern::kMultiAxisDim:
        // Two mesh axes on one dim: a tiled dim with at least 4 tiles (2 x 2 at least).
        for (const auto& [sh, shape] : ShardedLeaves(i)) {
          if (!sh.IsTiled()) continue;
          for (int64_t d = 0; d < sh.TiledDataRank(); ++d) {
            if (sh.tile_assignment().dim(d) >= 4) return true;
          }
        }
        break;
      case GenPattern::kReshapeMergeSharded:
      case GenPattern::kReshapeSplitSharded:
        // A sharded reshape that changes the non-1 dims (merging or splitting some).
        if (op == HloOpcode::kReshape && (Tiled(i) || AnyTiledOperand(i))) {
          std::vector<int64_t> in, out;
          for (int64_t d : i->operand(0)->shape().dimensions()) {
            if (d > 1) in.push_back(d);
          }
          for (int64_t d : i->shape().dimensions()) {
            if (d > 1) out.push_back(d);
          }
          if (in != out) return true;
        }
        break;
      case GenPattern::kDotShardedContracting:
      case GenPattern::kDotShardedBatch:
        if (op == HloOpcode::kDot && AnyTiledOperand(i)) {
          const DotDimensionNumbers& dn = *a.dot_dimension_numbers;
          const auto& lhs = p == GenPattern::kDotShardedBatch ? dn.lhs_batch : dn.lhs_contracting;
          const auto& rhs = p == GenPattern::kDotShardedBatch ? dn.rhs_batch : dn.rhs_contracting;
          for (int64_t d : lhs) {
            if (Tiles(i->operand(0), d) > 1) return true;
          }
          for (int64_t d : rhs) {
            if (Tiles(i->operand(1), d) > 1) return true;
          }
        }
        break;
      case GenPattern::kConvFeatureGroups:
        if (op == HloOpcode::kConvolution && a.feature_group_count.value_or(1) > 1) return true;
        break;
      case GenPattern::kConvBatchGroups:
        if (op == HloOpcode::kConvolution && a.batch_group_count.value_or(1) > 1) return true;
        break;
      case GenPattern::kConvShardedBatch:
        if (op == HloOpcode::kConvolution && Tiles(i->operand(0), a.dim_labels->input_batch) > 1) {
          return true;
        }
        break;
      case GenPattern::kConvShardedFeature:
        if (op == HloOpcode::kConvolution &&
            (Tiles(i->operand(0), a.dim_labels->input_feature) > 1 || Tiled(i->operand(1)))) {
          return true;
        }
        break;
      case GenPattern::kConvShardedSpatial:
        if (op == HloOpcode::kConvolution) {
          for (int64_t d : a.dim_labels->input_spatial) {
            if (Tiles(i->operand(0), d) > 1) return true;
          }
        }
        break;
      case GenPattern::kGatherShardedIndexedDim:
      case GenPattern::kGatherShardedOffsetDim:
        if (op == HloOpcode::kGather) {
          const auto& map = a.gather_dimension_numbers->start_index_map;
          for (int64_t d = 0; d < i->operand(0)->shape().rank(); ++d) {
            const bool indexed = std::find(map.begin(), map.end(), d) != map.end();
            if (Tiles(i->operand(0), d) > 1 &&
                indexed == (p == GenPattern::kGatherShardedIndexedDim)) {
              return true;
            }
          }
        }
        break;
      case GenPattern::kGatherShardedIndices:
        if (op == HloOpcode::kGather && Tiled(i->operand(1))) return true;
        break;
      case GenPattern::kScatterShardedIndexedDim:
        if (op == HloOpcode::kScatter) {
          for (int64_t d : a.scatter_dimension_numbers->scatter_dims_to_operand_dims) {
            if (Tiles(i->operand(0), d) > 1) return true;
          }
        }
        break;
      case GenPattern::kScatterShardedUpdates:
        if (op == HloOpcode::kScatter && Tiled(i->operand(2))) return true;
        break;
      case GenPattern::kScatterNoncommutative:
        if (op == HloOpcode::kScatter &&
            i->called().front().computations.front()->root()->opcode() == HloOpcode::kParameter) {
          return true;
        }
        break;
      case GenPattern::kSortShardedDim:
        if (op == HloOpcode::kSort && Tiles(i->operand(0), a.dimensions->front()) > 1) return true;
        break;
      case GenPattern::kTopKShardedDim:
        if (op == HloOpcode::kCustomCall && a.custom_call_target == "TopK" &&
            Tiles(i->operand(0), i->operand(0)->shape().rank() - 1) > 1) {
          return true;
        }
        break;
      case GenPattern::kReduceWindow:
        if (op == HloOpcode::kReduceWindow && Tiled(i->operand(0))) return true;
        break;
      case GenPattern::kPadNegative:
      case GenPattern::kPadInteriorTinyShards:
        if (op == HloOpcode::kPad) {
          for (int64_t d = 0; d < static_cast<int64_t>(a.padding->size()); ++d) {
            const PadDim& pd = (*a.padding)[d];
            const int64_t t = std::max(Tiles(i, d), Tiles(i->operand(0), d));
            if (t <= 1) continue;
            if (p == GenPattern::kPadNegative
                    ? (pd.low < 0 || pd.high < 0)
                    : (pd.interior > 0 && i->operand(0)->shape().dimensions(d) <= 2 * t)) {
              return true;
            }
          }
        }
        break;
      case GenPattern::kConcatTinyShards:
        if (op == HloOpcode::kConcatenate && (Tiled(i) || AnyTiledOperand(i))) {
          const int64_t d = a.dimensions->front();
          for (const HloInstruction* o : i->operands()) {
            const int64_t t = std::max(Tiles(o, d), Tiles(i, d));
            if (t > 1 && o->shape().dimensions(d) <= 2 * t) return true;
          }
        }
        break;
      case GenPattern::kWhilePartitionIdSelectReduce:
        if (op == HloOpcode::kWhile) {
          std::set<HloOpcode> ops;
          for (const CalledComputations& c : i->called()) {
            for (const HloComputation* comp : c.computations) {
              for (const auto& b : comp->instructions()) ops.insert(b->opcode());
            }
          }
          if (ops.contains(HloOpcode::kPartitionId) && ops.contains(HloOpcode::kSelect) &&
              (ops.contains(HloOpcode::kAllReduce) || ops.contains(HloOpcode::kReduce))) {
            return true;
          }
        }
        break;
      case GenPattern::kManualRegion:
        if (op == HloOpcode::kCustomCall && a.custom_call_target == "SPMDFullToShardShape" &&
            i->sharding().has_value() && i->sharding()->IsManual()) {
          return true;
        }
        break;
      case GenPattern::kNarrowFloat:
        if (i->shape().IsArray() && (i->shape().element_type() == PrimitiveType::kBF16 ||
                                     i->shape().element_type() == PrimitiveType::kF16 ||
                                     i->shape().element_type() == PrimitiveType::kF8E4M3FN ||
                                     i->shape().element_type() == PrimitiveType::kF8E5M2)) {
          return true;
        }
        break;
      case GenPattern::kIntegerOverflow:
        if ((op == HloOpcode::kAdd || op == HloOpcode::kMultiply || op == HloOpcode::kSubtract) &&
            (i->shape().element_type() == PrimitiveType::kS32 ||
             i->shape().element_type() == PrimitiveType::kU32)) {
          for (const HloInstruction* o : i->operands()) {
            std::optional<int64_t> v = ScalarInt(o);
            if (v && (*v >= (int64_t{1} << 30) || *v <= -(int64_t{1} << 30))) return true;
          }
        }
        break;
    }
  }
  return false;
}

// Runs the global program on all its devices (the same inputs on each), as the checker does.
absl::Status RunOnAllDevices(const HloModule& module, uint64_t seed) {
  oracle::EngineOptions options;
  options.num_partitions = module.num_partitions();
  options.seed = seed;
  oracle::Engine engine(module, options);
  absl::Status runnable = engine.CheckRunnable();
  if (!runnable.ok()) return runnable;
  const std::vector<oracle::ParameterProfile> profiles = oracle::ProfileParameters(module);
  std::mt19937_64 rng(seed);
  std::vector<Literal> inputs;
  for (const HloInstruction* p : module.entry()->parameters()) {
    inputs.push_back(oracle::RandomLiteral(p->shape(), profiles[p->parameter_number()],
                                           oracle::InputStyle::kSmallIntegers, rng));
  }
  std::vector<std::vector<Literal>> args(module.num_partitions(), inputs);
  absl::StatusOr<std::vector<Literal>> results = engine.Run(std::move(args));
  return results.status();
}

ProgramGenOptions OnlyPattern(GenPattern p, int weight) {
  ProgramGenOptions options;
  options.pattern_weights = ProgramGenOptions::NoPatternWeights();
  options.pattern_weights[static_cast<int>(p)] = weight;
  return options;
}

rc::Gen<GenPattern> GenPatternValue() {
  return rc::gen::map(rc::gen::inRange(0, kNumGenPatterns),
                      [](int i) { return static_cast<GenPattern>(i); });
}

// With the default weights, every pattern of the catalogue occurs within a few hundred programs,
// and the programs that name a pattern contain it.
TEST(ProgramGenPatterns, EveryPatternIsGeneratedAndPresent) {
  const rc::Gen<GeneratedProgram> gen = GenProgram();
  rc::Random random(18);
  std::vector<int> hits(kNumGenPatterns, 0);
  for (int i = 0; i < 800; ++i) {
    const GeneratedProgram p = gen(random.split(), 100).value();
    ASSERT_NE(p.module, nullptr) << p.hlo_text;
    for (const std::string& name : p.patterns) {
      std::optional<GenPattern> pattern = GenPatternFromName(name);
      ASSERT_TRUE(pattern.has_value()) << name;
      ++hits[static_cast<int>(*pattern)];
      EXPECT_TRUE(Contains(*p.module, *pattern)) << name << "\n" << p.hlo_text;
    }
  }
  for (int i = 0; i < kNumGenPatterns; ++i) {
    EXPECT_GT(hits[i], 0) << GenPatternName(static_cast<GenPattern>(i));
  }
}

// A program generated with one pattern weighted up names it in most cases, and contains what it
// names; it verifies and the oracle runs it on every device.
RC_GTEST_PROP(ProgramGenPatterns, AWeightedPatternIsEmittedVerifiesAndRuns, ()) {
  const GenPattern pattern = *GenPatternValue();
  const ProgramGenOptions options = OnlyPattern(pattern, 400);
  const GeneratedProgram p = *GenProgram(options);
  RC_ASSERT(p.module != nullptr);
  const absl::Status verified = VerifyModule(*p.module);
  if (!verified.ok()) RC_FAIL(std::string(verified.message()) + "\n" + p.hlo_text);
  for (const std::string& name : p.patterns) {
    RC_ASSERT(Contains(*p.module, *GenPatternFromName(name)));
  }
  RC_TAG(std::find(p.patterns.begin(), p.patterns.end(), GenPatternName(pattern)) !=
                 p.patterns.end()
             ? "has pattern"
             : "without it");
  const absl::Status ran = RunOnAllDevices(*p.module, *rc::gen::arbitrary<uint64_t>());
  if (!ran.ok()) RC_FAIL(std::string(ran.message()) + "\n" + p.hlo_text);
}

// Weight 0 switches a pattern off: no program contains it, though the others are weighted up
// and the ordinary ops still run.
TEST(ProgramGenPatterns, WeightZeroDisablesAPattern) {
  for (int k = 0; k < kNumGenPatterns; ++k) {
    const GenPattern off = static_cast<GenPattern>(k);
    ProgramGenOptions options;
    options.pattern_weights.fill(10);
    options.pattern_weights[k] = 0;
    const rc::Gen<GeneratedProgram> gen = GenProgram(options);
    rc::Random random(100 + k);
    for (int i = 0; i < 60; ++i) {
      const GeneratedProgram p = gen(random.split(), 100).value();
      ASSERT_NE(p.module, nullptr);
      ASSERT_TRUE(VerifyModule(*p.module).ok()) << p.hlo_text;
      const std::vector<GenPattern> found = DetectPatterns(*p.module, &*p.mesh);
      ASSERT_EQ(std::count(found.begin(), found.end(), off), 0) << GenPatternName(off) << "\n"
                                                                << p.hlo_text;
      // This file's reading too, where it is as strict as the detector.
      if (off != GenPattern::kMultiAxisDim && off != GenPattern::kConcatTinyShards &&
          off != GenPattern::kReshapeMergeSharded && off != GenPattern::kReshapeSplitSharded &&
          off != GenPattern::kConvShardedFeature && off != GenPattern::kGatherShardedIndices &&
          off != GenPattern::kReduceWindow) {
        ASSERT_FALSE(Contains(*p.module, off)) << GenPatternName(off) << "\n" << p.hlo_text;
      }
    }
  }
}

// A manual region's constants live in a computation of their own (the loop form's called
// computation, as jax lowers a shard_map body to its own function), never in the entry: XLA's
// StableHLO import merges equal constants of one function whatever their shardings, and a
// manual loop counter's 0 shared with a replicated 0 made GSPMD abort on a valid program (fuzz
// seed 20261204 case 73, xla.crash.hlo_sharding).
TEST(ProgramGenPatterns, NoManualConstantInTheEntry) {
  // The loop form of a manual region is the while-partition-id-select-reduce pattern.
  ProgramGenOptions options = OnlyPattern(GenPattern::kWhilePartitionIdSelectReduce, 400);
  options.pattern_weights[static_cast<int>(GenPattern::kManualRegion)] = 1;
  const rc::Gen<GeneratedProgram> gen = GenProgram(options);
  rc::Random random(26);
  int calls = 0;
  for (int i = 0; i < 200; ++i) {
    const GeneratedProgram p = gen(random.split(), 100).value();
    ASSERT_NE(p.module, nullptr);
    ASSERT_TRUE(VerifyModule(*p.module).ok()) << p.hlo_text;
    for (const auto& instr : p.module->entry()->instructions()) {
      if (instr->opcode() == HloOpcode::kCall) ++calls;
      if (instr->opcode() != HloOpcode::kConstant || !instr->sharding().has_value()) continue;
      EXPECT_FALSE(instr->sharding()->IsManual()) << instr->name() << "\n" << p.hlo_text;
    }
  }
  EXPECT_GT(calls, 0);  // The loop form was generated.
}

TEST(ProgramGenPatterns, AllPatternsOffLeavesTheOpMix) {
  ProgramGenOptions options;
  options.pattern_weights = ProgramGenOptions::NoPatternWeights();
  options.op_weights = ProgramGenOptions::NarrowOpWeights();
  const rc::Gen<GeneratedProgram> gen = GenProgram(options);
  rc::Random random(7);
  for (int i = 0; i < 200; ++i) {
    const GeneratedProgram p = gen(random.split(), 100).value();
    ASSERT_NE(p.module, nullptr);
    EXPECT_TRUE(p.patterns.empty()) << p.patterns.front() << "\n" << p.hlo_text;
  }
}

TEST(ProgramGenPatterns, WeightSyntax) {
  ProgramGenOptions options;
  ASSERT_TRUE(SetPatternWeights("all=0,dus-out-of-range-start=5, narrow-float=2", &options).ok());
  EXPECT_EQ(options.pattern_weights[static_cast<int>(GenPattern::kDusOutOfRangeStart)], 5);
  EXPECT_EQ(options.pattern_weights[static_cast<int>(GenPattern::kNarrowFloat)], 2);
  EXPECT_EQ(options.pattern_weights[static_cast<int>(GenPattern::kManualRegion)], 0);
  EXPECT_TRUE(SetPatternWeights("", &options).ok());
  const absl::Status unknown = SetPatternWeights("no-such-pattern=1", &options);
  EXPECT_FALSE(unknown.ok());
  EXPECT_NE(unknown.message().find("dus-out-of-range-start"), absl::string_view::npos);
  EXPECT_FALSE(SetPatternWeights("manual-region=-1", &options).ok());
  EXPECT_FALSE(SetPatternWeights("manual-region", &options).ok());
  EXPECT_FALSE(SetPatternWeights("manual-region=x", &options).ok());
  for (int i = 0; i < kNumGenPatterns; ++i) {
    const GenPattern p = static_cast<GenPattern>(i);
    EXPECT_EQ(GenPatternFromName(GenPatternName(p)), p);
    EXPECT_GT(ProgramGenOptions::DefaultPatternWeights()[i], 0) << GenPatternName(p);
  }
}

}  // namespace
}  // namespace spmdcheck::fuzz
