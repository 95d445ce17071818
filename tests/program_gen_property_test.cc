// Properties of the program generator (fuzz/program_gen.h): generated programs verify, print ->
// parse -> print is a fixed point, the oracle runs them on all their devices, the libFuzzer driver
// is deterministic, shrinking gives smaller programs, and every op family and sharding placement
// shows up. SPMDCHECK_PROPERTY_CASES (via RC_PARAMS) raises the property case counts;
// SPMDCHECK_GEN_CASES raises the fixed-seed validity count (default 2000; bench/program_gen_bench
// runs 10^5).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fuzz/program_gen.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/partition_spec.h"
#include "ir/verifier.h"
#include "oracle/engine.h"
#include "oracle/inputs.h"

namespace spmdcheck::fuzz {
namespace {

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

bool HasOpcode(const HloModule& module, HloOpcode opcode) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode() == opcode) return true;
    }
  }
  return false;
}

// Runs the module's global program on all its devices (the same seeded inputs on each; manual
// regions and their collectives need every device).
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
  if (!results.ok()) return results.status();
  if (results->size() != static_cast<size_t>(module.num_partitions()) ||
      !(*results)[0].shape().Compatible(module.entry()->root()->shape())) {
    return absl::InternalError("the result does not have the root's shape");
  }
  return absl::OkStatus();
}

RC_GTEST_PROP(FuzzProgramGenTest, GeneratedProgramsVerify, ()) {
  const GeneratedProgram p = *GenProgram();
  RC_ASSERT(p.module != nullptr);
  const absl::Status status = VerifyModule(*p.module);
  RC_ASSERT(status.ok());
  RC_ASSERT(p.instruction_count >= 1);
  RC_ASSERT(p.instruction_count <= 30);
  RC_ASSERT(p.num_partitions == p.module->num_partitions());
  RC_ASSERT(p.num_partitions <= 8);
}

RC_GTEST_PROP(FuzzProgramGenTest, PrintParseIsAFixedPoint, ()) {
  const GeneratedProgram p = *GenProgram();
  RC_ASSERT(p.module != nullptr);
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(p.hlo_text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(VerifyModule(*parsed->module).ok());
  RC_ASSERT(PrintModule(*parsed->module) == p.hlo_text);
}

RC_GTEST_PROP(FuzzProgramGenTest, OracleRunsTheProgramOnAllDevices, ()) {
  const GeneratedProgram p = *GenProgram();
  RC_ASSERT(p.module != nullptr);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const absl::Status status = RunOnAllDevices(*p.module, seed);
  if (!status.ok()) RC_FAIL(std::string(status.message()));
}

RC_GTEST_PROP(FuzzProgramGenTest, NarrowMixVerifies, ()) {
  ProgramGenOptions options;
  options.op_weights = ProgramGenOptions::NarrowOpWeights();
  options.pattern_weights = ProgramGenOptions::NoPatternWeights();
  options.exclude_disabled_patterns = false;  // No pattern steps; the op mix as it was.
  options.max_devices = 16;
  const GeneratedProgram p = *GenProgram(options);
  RC_ASSERT(p.module != nullptr);
  RC_ASSERT(VerifyModule(*p.module).ok());
  RC_ASSERT(!HasOpcode(*p.module, HloOpcode::kWhile));
  RC_ASSERT(!HasOpcode(*p.module, HloOpcode::kGather));
  RC_ASSERT(p.num_partitions <= 16);
}

// Every sharding of a one-mesh program is replicated, maximal or a PartitionSpec over the
// program's mesh (what Shardy's one-mesh import needs); such programs verify and have at least
// min_devices devices.
RC_GTEST_PROP(FuzzProgramGenTest, OneMeshProgramsShardOnlyOverTheirMesh, ()) {
  ProgramGenOptions options;
  options.one_mesh_percent = 100;
  options.min_devices = 2;
  const GeneratedProgram p = *GenProgram(options);
  RC_ASSERT(p.module != nullptr);
  RC_ASSERT(p.one_mesh);
  RC_ASSERT(p.mesh.has_value());
  RC_ASSERT(VerifyModule(*p.module).ok());
  RC_ASSERT(p.num_partitions >= 2);
  for (const auto& c : p.module->computations()) {
    for (const auto& i : c->instructions()) {
      if (!i->sharding().has_value()) continue;
      const HloSharding& sharding = *i->sharding();
      std::vector<HloSharding> leaves =
          sharding.IsTuple() ? sharding.tuple_elements() : std::vector<HloSharding>{sharding};
      for (const HloSharding& s : leaves) {
        if (s.IsReplicated() || s.IsMaximal()) continue;
        const absl::StatusOr<PartitionSpec> spec = ShardingToPartitionSpec(*p.mesh, s);
        RC_ASSERT_FALSE(s.IsManual());
        if (!spec.ok()) {
          RC_FAIL(absl::StrCat(i->name(), "'s sharding ", s.ToString(), " is not over mesh ",
                               p.mesh->ToString(), ": ", spec.status().message()));
        }
      }
    }
  }
}

// The default mix draws shardings no mesh expresses too (random tile dims and device orders):
// GSPMD is fuzzed with those.
TEST(FuzzProgramGenTest, DefaultProgramsAlsoUseShardingsNoMeshExpresses) {
  int64_t off_mesh = 0;
  for (uint64_t seed = 1; seed <= 200 && off_mesh == 0; ++seed) {
    const GeneratedProgram p = GenProgram()(rc::Random(seed), 50).value();
    if (p.module == nullptr || !p.mesh.has_value()) continue;
    EXPECT_FALSE(p.one_mesh);
    for (const auto& c : p.module->computations()) {
      for (const auto& i : c->instructions()) {
        if (!i->sharding().has_value() || !i->sharding()->IsTiled()) continue;
        if (!ShardingToPartitionSpec(*p.mesh, *i->sharding()).ok()) ++off_mesh;
      }
    }
  }
  EXPECT_GT(off_mesh, 0);
}

RC_GTEST_PROP(FuzzProgramGenTest, ProgramFromBytesIsDeterministicAndValid, ()) {
  // Up to ~700 bytes: the header and up to 17 steps.
  const std::vector<uint8_t> data =
      *rc::gen::resize(700, rc::gen::arbitrary<std::vector<uint8_t>>());
  const absl::StatusOr<GeneratedProgram> a = ProgramFromBytes(data);
  const absl::StatusOr<GeneratedProgram> b = ProgramFromBytes(data);
  RC_ASSERT(a.ok());
  RC_ASSERT(b.ok());
  RC_ASSERT(a->hlo_text == b->hlo_text);
  RC_ASSERT(VerifyModule(*a->module).ok());
}

TEST(FuzzProgramGenTest, BytesDriveTheSameGeneratorAsRapidCheck) {
  // A recipe turned into bytes and back builds the same program.
  const rc::Gen<ProgramRecipe> gen = GenProgramRecipe();
  rc::Random random(11);
  for (int i = 0; i < 200; ++i) {
    ProgramRecipe r = gen(random.split(), i % 101).value();
    std::vector<uint8_t> bytes = r.header;
    bytes.resize(kRecipeHeaderBytes, 0);
    for (std::vector<uint8_t> step : r.steps) {
      step.resize(kRecipeStepBytes, 0);
      bytes.insert(bytes.end(), step.begin(), step.end());
    }
    absl::StatusOr<GeneratedProgram> from_recipe = BuildProgram(r);
    absl::StatusOr<GeneratedProgram> from_bytes = ProgramFromBytes(bytes);
    ASSERT_TRUE(from_recipe.ok());
    ASSERT_TRUE(from_bytes.ok());
    EXPECT_EQ(from_recipe->hlo_text, from_bytes->hlo_text);
  }
  // Empty input: a single parameter.
  absl::StatusOr<GeneratedProgram> empty = ProgramFromBytes({});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->instruction_count, 1);
  EXPECT_EQ(empty->num_partitions, 1);
}

// Greedy shrinking through RapidCheck's own shrink tree: the smallest program that still holds
// a dot is tiny (two parameters and the dot, maybe a broadcast constant).
TEST(FuzzProgramGenTest, ShrinkingGivesSmallerPrograms) {
  const rc::Gen<GeneratedProgram> gen = GenProgram();
  rc::Random random(5);
  int shrunk_cases = 0;
  for (int attempt = 0; attempt < 400 && shrunk_cases < 5; ++attempt) {
    rc::Shrinkable<GeneratedProgram> s = gen(random.split(), 100);
    const GeneratedProgram start = s.value();
    if (start.module == nullptr || start.instruction_count < 12 ||
        !HasOpcode(*start.module, HloOpcode::kDot)) {
      continue;
    }
    ++shrunk_cases;
    bool progress = true;
    int rounds = 0;
    while (progress && rounds++ < 2000) {
      progress = false;
      rc::Seq<rc::Shrinkable<GeneratedProgram>> shrinks = s.shrinks();
      while (rc::Maybe<rc::Shrinkable<GeneratedProgram>> next = shrinks.next()) {
        const GeneratedProgram v = next->value();
        if (v.module != nullptr && HasOpcode(*v.module, HloOpcode::kDot)) {
          s = *next;
          progress = true;
          break;
        }
      }
    }
    const GeneratedProgram end = s.value();
    ASSERT_NE(end.module, nullptr);
    EXPECT_TRUE(VerifyModule(*end.module).ok());
    EXPECT_TRUE(HasOpcode(*end.module, HloOpcode::kDot));
    EXPECT_LT(end.instruction_count, start.instruction_count);
    EXPECT_LE(end.instruction_count, 5) << end;
    EXPECT_LE(end.num_partitions, start.num_partitions);
  }
  EXPECT_EQ(shrunk_cases, 5);
}

// Every op family, negative padding, out-of-range start indices, while loops with sharded state
// and shardings on parameters and roots all occur.
TEST(FuzzProgramGenTest, CoversTheOpMixAndShardingPlacements) {
  const rc::Gen<GeneratedProgram> gen = GenProgram();
  rc::Random random(3);
  std::set<HloOpcode> seen;
  bool negative_pad = false, interior_pad = false, sharded_param = false, sharded_root = false,
       sharded_while = false, pipeline = false, tuple_root = false, out_of_range_start = false,
       multi_axis = false;
  for (int i = 0; i < 3000; ++i) {
    const GeneratedProgram p = gen(random.split(), i % 101).value();
    ASSERT_NE(p.module, nullptr);
    for (const auto& c : p.module->computations()) {
      for (const auto& instr : c->instructions()) {
        seen.insert(instr->opcode());
        if (instr->opcode() == HloOpcode::kPad) {
          for (const PadDim& d : *instr->attrs().padding) {
            negative_pad |= d.low < 0 || d.high < 0;
            interior_pad |= d.interior > 0;
          }
        }
        if (instr->opcode() == HloOpcode::kParameter && c.get() == p.module->entry()) {
          sharded_param |= instr->sharding().has_value() && !instr->sharding()->IsReplicated();
        }
        if (instr->opcode() == HloOpcode::kWhile && absl::StartsWith(instr->name(), "pipeline")) {
          // The stage dim of the state is sharded and rotated by the body.
          const HloComputation* body = instr->called_computation("body");
          bool rotates = false;
          for (const auto& b : body->instructions()) {
            rotates |= b->opcode() == HloOpcode::kConcatenate;
          }
          pipeline |= rotates && instr->sharding().has_value() &&
                      instr->sharding()->tuple_elements()[1].IsTiled();
        }
        if (instr->opcode() == HloOpcode::kWhile) {
          sharded_while |= instr->sharding().has_value() && !instr->sharding()->IsFullyReplicated();
        }
        if (instr->opcode() == HloOpcode::kDynamicSlice) {
          for (int64_t k = 1; k < instr->operand_count(); ++k) {
            const HloInstruction* start = instr->operand(k);
            if (start->opcode() != HloOpcode::kConstant) continue;
            const int64_t v = start->literal()->GetInt64(0);
            const int64_t max_start =
                instr->operand(0)->shape().dimensions(k - 1) - instr->shape().dimensions(k - 1);
            out_of_range_start |= v < 0 || v > max_start;
          }
        }
      }
    }
    const HloInstruction* root = p.module->entry()->root();
    sharded_root |= root->sharding().has_value();
    tuple_root |= root->opcode() == HloOpcode::kTuple;
    multi_axis |= p.num_partitions >= 4;
  }
  for (HloOpcode op : {HloOpcode::kNegate,       HloOpcode::kAbs,
                       HloOpcode::kAdd,          HloOpcode::kMultiply,
                       HloOpcode::kSubtract,     HloOpcode::kMaximum,
                       HloOpcode::kConvert,      HloOpcode::kCompare,
                       HloOpcode::kSelect,       HloOpcode::kBroadcast,
                       HloOpcode::kReshape,      HloOpcode::kTranspose,
                       HloOpcode::kSlice,        HloOpcode::kPad,
                       HloOpcode::kConcatenate,  HloOpcode::kReverse,
                       HloOpcode::kReduce,       HloOpcode::kDot,
                       HloOpcode::kGather,       HloOpcode::kScatter,
                       HloOpcode::kDynamicSlice, HloOpcode::kDynamicUpdateSlice,
                       HloOpcode::kIota,         HloOpcode::kConstant,
                       HloOpcode::kParameter,    HloOpcode::kWhile,
                       HloOpcode::kTuple,        HloOpcode::kGetTupleElement}) {
    EXPECT_TRUE(seen.contains(op)) << HloOpcodeString(op);
  }
  EXPECT_TRUE(negative_pad);
  EXPECT_TRUE(interior_pad);
  EXPECT_TRUE(sharded_param);
  EXPECT_TRUE(sharded_root);
  EXPECT_TRUE(sharded_while);
  EXPECT_TRUE(pipeline);
  EXPECT_TRUE(tuple_root);
  EXPECT_TRUE(out_of_range_start);
  EXPECT_TRUE(multi_axis);
}

// Validity over fixed-seed draws from both drivers: must be 100%.
TEST(FuzzProgramGenTest, ValidityRateIsOneHundredPercent) {
  const int64_t cases = EnvInt("SPMDCHECK_GEN_CASES", 2000);
  const rc::Gen<ProgramRecipe> gen = GenProgramRecipe();
  rc::Random random(20261129);
  std::mt19937_64 rng(20261129);
  int64_t invalid = 0;
  std::string first;
  for (int64_t i = 0; i < cases; ++i) {
    absl::StatusOr<GeneratedProgram> p;
    if (i % 2 == 0) {
      p = BuildProgram(gen(random.split(), static_cast<int>(i % 101)).value());
    } else {
      std::vector<uint8_t> data(rng() % 700);
      for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
      p = ProgramFromBytes(data);
    }
    absl::Status status = p.ok() ? VerifyModule(*p->module) : p.status();
    if (status.ok()) {
      absl::StatusOr<ParsedModule> parsed = ParseHloModule(p->hlo_text);
      if (!parsed.ok()) {
        status = parsed.status();
      } else if (PrintModule(*parsed->module) != p->hlo_text) {
        status = absl::InternalError("print/parse/print is not a fixed point");
      }
    }
    if (!status.ok() && invalid++ == 0) {
      first = std::string(status.message()) + "\n" + (p.ok() ? p->hlo_text : "");
    }
  }
  EXPECT_EQ(invalid, 0) << first;
}

}  // namespace
}  // namespace spmdcheck::fuzz
