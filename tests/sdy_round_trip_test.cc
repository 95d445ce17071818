// Shardy's round-trip form (a Shardy module printed as HLO by jaxlib) rewritten as GSPMD's: the
// sharded custom-calls equal those jax's own GSPMD lowering writes for the same program
// (tests/data/mlir/*.hlo, printed by jaxlib 0.10.2 from jax's lowerings with and without Shardy;
// make_fixtures.py there regenerates them).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/sdy_sharding_round_trip.h"
#include "ir/verifier.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck {
namespace {

std::string ReadData(const std::string& name) {
  return ::spmdcheck::test_support::ReadFileOrFail(::spmdcheck::test_support::SourceDir() +
                                                   "/tests/data/mlir/" + name);
}

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return std::move(parsed->module);
}

// Lowers the round-trip form and parses the printed result again (program order).
std::unique_ptr<HloModule> Lowered(const std::string& text, int64_t* rewrites = nullptr) {
  std::unique_ptr<HloModule> module = Parse(text);
  EXPECT_TRUE(HasShardyRoundTrip(*module));
  absl::StatusOr<int64_t> count = LowerShardyRoundTrip(*module);
  EXPECT_TRUE(count.ok()) << count.status();
  if (rewrites != nullptr) *rewrites = *count;
  const std::string printed = PrintModule(*module);
  for (const char* gone :
       {"xla.sdy.meshes", "xla.sdy.sharding", "xla.sdy.manual_axes", "xla.sdy.GlobalToLocalShape",
        "xla.sdy.LocalToGlobalShape", "xla.sdy.FuncResultSharding"}) {
    EXPECT_EQ(printed.find(gone), std::string::npos) << gone << " in\n" << printed;
  }
  std::unique_ptr<HloModule> again = Parse(printed);
  EXPECT_FALSE(HasShardyRoundTrip(*again));
  for (const VerifierDiagnostic& d : VerifyModuleDiagnostics(*again)) {
    EXPECT_TRUE(d.is_warning) << FormatDiagnostic(*again, d);
  }
  return again;
}

// (target, canonical sharding) of every custom-call that carries a sharding, sorted.
std::vector<std::pair<std::string, std::string>> ShardedCustomCalls(const HloModule& module) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() != HloOpcode::kCustomCall || !instruction->sharding()) continue;
      out.push_back({instruction->attrs().custom_call_target.value_or(""),
                     instruction->sharding()->Canonical().ToString(false)});
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SdyRoundTripTest, ShardMapMatchesJaxGspmdLowering) {
  int64_t rewrites = 0;
  std::unique_ptr<HloModule> ours = Lowered(ReadData("shard_map.sdy.hlo"), &rewrites);
  std::unique_ptr<HloModule> jax = Parse(ReadData("shard_map.gspmd.hlo"));
  EXPECT_GT(rewrites, 0);
  EXPECT_EQ(ShardedCustomCalls(*ours), ShardedCustomCalls(*jax));
  // The facts themselves (jax's GSPMD lowering of the same shard_map over "model"):
  const auto calls = ShardedCustomCalls(*ours);
  EXPECT_NE(std::find(calls.begin(), calls.end(),
                      std::pair<std::string, std::string>(
                          "SPMDFullToShardShape",
                          "{devices=[1,1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}")),
            calls.end());
  EXPECT_NE(std::find(calls.begin(), calls.end(),
                      std::pair<std::string, std::string>(
                          "Sharding", "{devices=[2,1,4]<=[8] last_tile_dims={manual}}")),
            calls.end());
}

TEST(SdyRoundTripTest, ModulesWithoutManualComputationsKeepTheirShardings) {
  std::unique_ptr<HloModule> ours = Lowered(ReadData("matmul.sdy.hlo"));
  std::unique_ptr<HloModule> jax = Parse(ReadData("matmul.gspmd.hlo"));
  EXPECT_EQ(ShardedCustomCalls(*ours), ShardedCustomCalls(*jax));
  const HloComputation* entry = ours->entry();
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->parameters()[0]->sharding()->ToString(false), "{devices=[2,4]<=[8]}");
}

// A result sharding (jax.jit(f, out_shardings=P('data', 'model'))): jaxlib writes an
// xla.sdy.FuncResultSharding custom-call, which becomes a Sharding custom-call.
TEST(SdyRoundTripTest, FuncResultShardingBecomesASharding) {
  const std::string text =
      R"(HloModule jit_f, entry_computation_layout={(f32[8,16]{1,0}, f32[16,8]{1,0})->f32[8,8]{1,0}}, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["data"=2, "model"=4]>}}

ENTRY main.1 {
  Arg_0.1 = f32[8,16]{1,0} parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"data\"}, {}]>"}
  Arg_1.1 = f32[16,8]{1,0} parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{}, {\"model\"}]>"}
  dot.1 = f32[8,8]{1,0} dot(Arg_0.1, Arg_1.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  custom-call.2 = f32[8,8]{1,0} custom-call(dot.1), custom_call_target="Sharding", sharding={devices=[2,4]<=[8]}, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"data\"}, {\"model\"}]>]>"}
  custom-call.3 = f32[8,8]{1,0} custom-call(custom-call.2), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"data\"}, {\"model\"}]>]>"}
  tuple.1 = (f32[8,8]{1,0}) tuple(custom-call.3)
  ROOT get-tuple-element.1 = f32[8,8]{1,0} get-tuple-element(tuple.1), index=0, sharding={devices=[2,4]<=[8]}
}
)";
  std::unique_ptr<HloModule> ours = Lowered(text);
  const HloInstruction* result = ours->entry()->FindInstruction("custom-call.3");
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->attrs().custom_call_target.value_or(""), "Sharding");
  EXPECT_EQ(result->sharding()->ToString(false), "{devices=[2,4]<=[8]}");
  EXPECT_EQ(result->FindRawAttribute("custom_call_has_side_effect"), nullptr);
}

TEST(SdyRoundTripTest, UndeclaredMeshIsAnError) {
  const std::string text =
      R"(HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2]>}}

ENTRY main {
  p = f32[4]{0} parameter(0)
  ROOT r = f32[4]{0} custom-call(p), custom_call_target="xla.sdy.FuncResultSharding", frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@other, [{\"x\"}]>]>"}
}
)";
  std::unique_ptr<HloModule> module = Parse(text);
  absl::StatusOr<int64_t> lowered = LowerShardyRoundTrip(*module);
  ASSERT_FALSE(lowered.ok());
  EXPECT_NE(lowered.status().message().find("mesh @other is not declared"), std::string::npos)
      << lowered.status();
}

}  // namespace
}  // namespace spmdcheck
