// XLA's named-mesh shardings (V3), as jaxlib 0.12's dumps print them: parsed into the same
// HloSharding as XLA's own V3 -> V2 conversion gives (vectors recorded from jaxlib 0.12.0.1,
// tests/data/named_sharding/), printed back verbatim, errors with a position instead of a crash;
// XLA's compact get-tuple-element (`%t#1`) and V3 dims widened to the value's rank.
#include "ir/named_sharding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/sharding.h"
#include "ir/verifier.h"
#include "smt/device_algebra.h"
#include "tests/shared_dir.h"

namespace spmdcheck {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

HloSharding MustParse(const std::string& text) {
  absl::StatusOr<HloSharding> s = ParseSharding(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *s : HloSharding();
}

TEST(NamedShardingTest, JaxlibVectorsGiveJaxlibsV2AndPrintBack) {
  const std::string path =
      ::spmdcheck::test_support::SourceDir() + "/tests/data/named_sharding/jaxlib_vectors.json";
  const absl::StatusOr<std::string> text = base::ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json data = nlohmann::json::parse(*text);
  int checked = 0;
  for (const auto& vector : data["vectors"]) {
    const std::string v3 = vector["v3"], v2 = vector["v2"], shape_text = vector["shape"];
    SCOPED_TRACE(v3);
    const HloSharding named = MustParse(v3);
    const HloSharding plain = MustParse(v2);
    // Some leaf keeps its named form (tuples mix V2 and V3 leaves); the V2 text has none.
    bool has_named = named.named() != nullptr;
    for (const HloSharding& leaf : named.tuple_elements()) has_named |= leaf.named() != nullptr;
    EXPECT_TRUE(has_named);
    EXPECT_EQ(plain.named(), nullptr);
    EXPECT_TRUE(named == plain) << "ours: " << named.WithoutNamedForms().ToString()
                                << "\njaxlib: " << v2;
    // XLA's text comes back verbatim; without the named form it is the V2 text.
    EXPECT_EQ(named.ToString(), v3);
    EXPECT_TRUE(MustParse(named.WithoutNamedForms().ToString()) == plain);
    absl::StatusOr<Shape> shape = ParseShape(shape_text);
    ASSERT_TRUE(shape.ok()) << shape.status();
    EXPECT_TRUE(named.Validate(*shape, 0).ok()) << named.Validate(*shape, 0);
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

TEST(NamedShardingTest, Forms) {
  const HloSharding dims = MustParse("{mesh['x'=2,'y'=4], [{'y'}, {}]}");
  EXPECT_EQ(dims.WithoutNamedForms().ToString(),
            "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  EXPECT_TRUE(MustParse("{mesh['x'=2,'y'=4], replicated}").IsReplicated());
  EXPECT_TRUE(MustParse("{mesh[], replicated}").IsReplicated());
  EXPECT_TRUE(MustParse("{mesh['x'=2,'y'=4], manual}").IsManual());
  EXPECT_EQ(MustParse("{mesh['x'=2,'y'=4], unreduced}").kind(), HloSharding::Kind::kUnreduced);
  EXPECT_EQ(MustParse("{single_device[device_id=3]}").MaximalDevice(), 3);
  EXPECT_EQ(MustParse("{maximal_mesh[device_id=3]}").ToString(), "{single_device[device_id=3]}");
  // Open dims and sub-axes keep their text; `?` does not move tiles.
  const HloSharding open = MustParse("{mesh['x'=2,'y'=4], [{'x', ?}, {?}]}");
  EXPECT_TRUE(open.named()->HasOpenDims());
  EXPECT_TRUE(open == MustParse("{mesh['x'=2,'y'=4], [{'x'}, {}]}"));
  EXPECT_EQ(open.ToString(), "{mesh['x'=2,'y'=4], [{'x', ?}, {?}]}");
  // Partially manual: a manual subgroup.
  const HloSharding manual = MustParse("{mesh['x'=2,'y'=4], [{?}, {'y'}], manual={'x'}}");
  EXPECT_TRUE(manual.HasManualSubgroup());
  EXPECT_EQ(manual.WithoutNamedForms().ToString(),
            "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dims={manual}}");
  // The unreduced reduction and metadata are printed back.
  EXPECT_EQ(MustParse("{mesh['x'=2,'y'=2], [{'x'}], unreduced=max{'y'}, metadata={op_name=\"a\"}}")
                .ToString(),
            "{mesh['x'=2,'y'=2], [{'x'}], unreduced=max{'y'}, metadata={op_name=\"a\"}}");
  // Tuples mix the forms.
  const HloSharding tuple = MustParse("{{mesh['x'=2], [{'x'}]}, {replicated}}");
  ASSERT_TRUE(tuple.IsTuple());
  EXPECT_EQ(tuple.ToString(), "{{mesh['x'=2], [{'x'}]}, {replicated}}");
}

TEST(NamedShardingTest, DeviceOrders) {
  // An explicit device order is the row-major content of the mesh array.
  const HloSharding listed =
      MustParse("{mesh['a'=2,'b'=4], device_ids=(0,4,1,5,2,6,3,7), [{'b'}]}");
  EXPECT_TRUE(listed == MustParse("{devices=[4,2]0,2,4,6,1,3,5,7 last_tile_dim_replicate}"));
  // A transposed iota stays symbolic: 65,536 devices without listing them.
  const HloSharding big = MustParse(
      "{mesh['a'=16,'b'=16,'c'=16,'d'=16], device_ids=([256,256]T(1,0)), [{'d', 'a'}, {'c'}]}");
  ASSERT_TRUE(big.IsTiled());
  EXPECT_TRUE(big.tile_assignment().is_iota());
  EXPECT_EQ(big.tile_assignment().num_elements(), 65536);
  EXPECT_EQ(big.ToString(),
            "{mesh['a'=16,'b'=16,'c'=16,'d'=16], device_ids=([256,256]T(1,0)), [{'d', 'a'}, "
            "{'c'}]}");
}

// V3 = V2 = explicit device lists, proved (enumeration and Z3), at 65,536 devices; the wrong
// axis order is refuted with a tile that moved.
TEST(NamedShardingTest, ProvedSameAsItsV2AndItsDeviceListAt65536Devices) {
  const HloSharding named = MustParse(
      "{mesh['a'=16,'b'=16,'c'=16,'d'=16], device_ids=([256,256]T(1,0)), [{'d', 'a'}, {'c'}]}");
  const HloSharding v2 = MustParse(named.WithoutNamedForms().ToString());
  const HloSharding listed = named.Expanded();
  ASSERT_FALSE(listed.tile_assignment().is_iota());
  EXPECT_EQ(smt::ProveSame(named, v2).verdict, Verdict::kHolds);
  EXPECT_EQ(smt::ProveSame(named, listed).verdict, Verdict::kHolds);
  smt::FactOptions z3;
  z3.procedure = smt::Procedure::kZ3;
  EXPECT_NE(smt::ProveSame(named, v2, z3).verdict, Verdict::kFails);
  const HloSharding swapped = MustParse(
      "{mesh['a'=16,'b'=16,'c'=16,'d'=16], device_ids=([256,256]T(1,0)), [{'a', 'd'}, "
      "{'c'}]}");
  const smt::ProofResult refuted = smt::ProveSame(named, swapped);
  EXPECT_EQ(refuted.verdict, Verdict::kFails);
  EXPECT_THAT(refuted.counterexample, HasSubstr("tile"));
}

TEST(NamedShardingTest, BadInputIsAnErrorWithAPosition) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"{mesh['x'=2], [{'z'}]}", "no mesh axis 'z'"},
           {"{mesh['x'=2,'y'=2], [{'x'}, {'x'}]}", "twice"},
           {"{mesh['x'=2], [{?, 'x'}]}", "'?' must be the last"},
           {"{mesh['x'=4], [{'x':(2)4}]}", "does not divide"},
           {"{mesh['x'=2,'y'=2], device_ids=(0,0,1,2), [{'x'}]}", "permutation"},
           {"{mesh['x'=2,'y'=2], device_ids=(0,1,2), [{'x'}]}", "device"},
           {"{mesh['x'=2], [{'x'}], shard_as=1}", "unknown named-sharding item"},
           {"{mesh['x'=2], [{'x'}], unreduced=avg{'x'}}", "sum, max or min"},
           {"{mesh['x'=2], [{'x'}]", "expected"},
           {"{mesh['x'=2,'x'=2], replicated}", "twice"},
       }) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<HloSharding> s = ParseSharding(c.text);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.message));
  }
}

constexpr char kModule[] = R"(HloModule m, num_partitions=8

%body (p: (s32[], f32[4,4])) -> (s32[], f32[4,4]) {
  %p = (s32[], f32[4,4]) parameter(0), sharding={{mesh[], replicated}, {mesh['x'=2,'y'=4], [{'x'}, {}]}}
  %one = s32[] constant(1)
  %next = s32[] add(%p#0, %one)
  ROOT %t = (s32[], f32[4,4]) tuple(%next, %p#1)
}

ENTRY %main (a: f32[4,4]) -> f32[4,4] {
  %a = f32[4,4]{1,0} parameter(0), sharding={mesh['x'=2,'y'=4], [{'x'}, {'y'}]}
  %m = f32[2,4]{1,0} custom-call(%a), custom_call_target="SPMDFullToShardShape", sharding={mesh['x'=2,'y'=4], [], manual={'x'}}
  %zero = s32[] constant(0)
  %init = (s32[], f32[4,4]) tuple(%zero, %a)
  %loop = (s32[], f32[4,4]) call(%init), to_apply=%body
  ROOT %r = f32[4,4]{1,0} add(%loop#1, %a), sharding={mesh['x'=2,'y'=4], [{'x'}, {}]}
}
)";

TEST(NamedShardingTest, ModulesWithCompactTupleElementsAndEmptyDims) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(kModule, {.path = "m.hlo"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  HloModule& module = *parsed->module;
  EXPECT_TRUE(VerifyModule(module).ok()) << VerifyModule(module);
  // `%loop#1` is a get-tuple-element of %loop with index 1.
  const HloInstruction* root = module.entry()->root();
  ASSERT_EQ(root->operand(0)->opcode(), HloOpcode::kGetTupleElement);
  EXPECT_EQ(root->operand(0)->operand(0)->name(), "loop");
  EXPECT_EQ(root->operand(0)->attrs().tuple_index, std::optional<int64_t>(1));
  // `[]` with manual axes on a rank-2 value: the sharding has data rank 2.
  const HloInstruction* manual = module.entry()->FindInstruction("m");
  ASSERT_TRUE(manual->sharding().has_value());
  EXPECT_EQ(manual->sharding()->TiledDataRank(), 2);
  EXPECT_TRUE(manual->sharding()->HasManualSubgroup());
  // Printed back and parsed again: the same module text.
  const std::string printed = PrintModule(module);
  absl::StatusOr<ParsedModule> again = ParseHloModule(printed, {.path = "printed"});
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << printed;
  EXPECT_EQ(PrintModule(*again->module), printed);
  EXPECT_THAT(printed, HasSubstr("sharding={mesh['x'=2,'y'=4], [{'x'}, {'y'}]}"));
  // For XLAs before V3: no named form left.
  PrintOptions v2;
  v2.named_shardings = false;
  const std::string plain = PrintModule(module, v2);
  EXPECT_THAT(plain, Not(HasSubstr("mesh[")));
  EXPECT_THAT(plain, HasSubstr("sharding={devices=[2,4]<=[8]}"));
}

}  // namespace
}  // namespace spmdcheck
