// Parser and printer: real-dump syntax, attributes kept, errors with locations, fragments.
#include "ir/hlo_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/hlo_printer.h"

namespace spmdcheck {
namespace {

using ::testing::HasSubstr;

ParsedModule MustParse(absl::string_view text, bool fragment = false) {
  ParseOptions options;
  options.path = "test.hlo";
  options.fragment = fragment;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text, options);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return ParsedModule{};
  return *std::move(parsed);
}

std::string ParseError(absl::string_view text, bool fragment = false) {
  ParseOptions options;
  options.path = "bad.hlo";
  options.fragment = fragment;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text, options);
  EXPECT_FALSE(parsed.ok());
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(HloParserTest, DumpSyntaxWithPercentNamesCommentsAndMultiLineStatements) {
  ParsedModule parsed = MustParse(
      R"(HloModule m, is_scheduled=true, entry_computation_layout={(f32[8]{0})->f32[8]{0}}, num_partitions=2

%add.1 (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0), sharding={devices=[2]0,1}, metadata={op_name="jit(f)/add" source_file="a.py" source_line=3}
  %t = (f32[8], f32[8], f32[8], f32[8], f32[8], /*index=5*/f32[8]) tuple(%p, %p, %p, %p, %p,
      %p)  // a comment
  %g = f32[8]{0} get-tuple-element((f32[8], f32[8], f32[8], f32[8], f32[8], f32[8]) %t), index=5
  ROOT %r = f32[8]{0} all-reduce(f32[8]{0} %g), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add.1, backend_config={"flag":true}, frontend_attributes={_xla_x="1"}
})");
  ASSERT_NE(parsed.module, nullptr);
  const HloModule& m = *parsed.module;
  EXPECT_EQ(m.name(), "m");
  EXPECT_TRUE(m.is_scheduled());
  EXPECT_EQ(m.num_partitions(), 2);
  ASSERT_EQ(m.computations().size(), 2u);
  const HloComputation* entry = m.entry();
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->name(), "main");
  const HloInstruction* root = entry->root();
  EXPECT_EQ(root->name(), "r");
  EXPECT_EQ(root->opcode(), HloOpcode::kAllReduce);
  EXPECT_EQ(*root->attrs().channel_id, 1);
  EXPECT_TRUE(*root->attrs().use_global_device_ids);
  EXPECT_EQ(root->attrs().replica_groups->groups(), (std::vector<std::vector<int64_t>>{{0, 1}}));
  EXPECT_EQ(root->called_computation("to_apply")->name(), "add.1");
  ASSERT_NE(root->FindRawAttribute("backend_config"), nullptr);
  EXPECT_EQ(root->FindRawAttribute("backend_config")->text, R"({"flag":true})");
  EXPECT_EQ(root->FindRawAttribute("frontend_attributes")->text, R"({_xla_x="1"})");
  const HloInstruction* t = entry->FindInstruction("t");
  EXPECT_EQ(t->operand_count(), 6);
  EXPECT_EQ(t->shape().tuple_size(), 6);
  const HloInstruction* p = entry->FindInstruction("p");
  EXPECT_EQ(p->FindRawAttribute("metadata")->text,
            R"({op_name="jit(f)/add" source_file="a.py" source_line=3})");
  EXPECT_EQ(p->location().line, 10);
  // Printing keeps the unknown attributes verbatim.
  const std::string printed = PrintModule(m);
  EXPECT_THAT(printed, HasSubstr(R"(backend_config={"flag":true})"));
  EXPECT_THAT(printed, HasSubstr(R"(frontend_attributes={_xla_x="1"})"));
  EXPECT_THAT(printed, HasSubstr("entry_computation_layout={(f32[8]{0})->f32[8]{0}}"));
}

TEST(HloParserTest, InstructionsWithoutShapeGetInferredShapes) {
  ParsedModule parsed = MustParse(R"(HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  s = add(a, b)
  c = compare(s, a), direction=LT
  ROOT t = tuple(s, c)
})");
  ASSERT_NE(parsed.module, nullptr);
  const HloComputation* e = parsed.module->entry();
  EXPECT_EQ(e->FindInstruction("s")->shape().ToString(), "f32[2,3]");
  EXPECT_EQ(e->FindInstruction("c")->shape().ToString(), "pred[2,3]");
  EXPECT_EQ(e->root()->shape().ToString(), "(f32[2,3], pred[2,3])");
}

TEST(HloParserTest, AttributesOfManyOpcodes) {
  ParsedModule parsed = MustParse(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[8,16] parameter(0)
  s = f32[4,8] slice(p), slice={[0:8:2], [2:10]}
  z = f32[] constant(0)
  pd = f32[8,17] pad(s, z), padding=1_3_1x-1_2
  k = f32[3,3,16,16] parameter(1)
  i = f32[1,8,8,16] parameter(2)
  cv = f32[1,4,4,16] convolution(i, k), window={size=3x3 stride=2x2 pad=1_1x1_1 rhs_dilate=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=1
  ix = s32[4,1] parameter(3)
  g = f32[4,16] gather(p, ix), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,16}, indices_are_sorted=true
  io = s32[8] iota(), iota_dimension=0
  cp = f32[8,16] collective-permute(p), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ag = f32[32,16] all-gather(p), channel_id=3, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  ROOT cc = f32[8,16] custom-call(p), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
})");
  ASSERT_NE(parsed.module, nullptr);
  const HloComputation* e = parsed.module->entry();
  const HloInstruction* s = e->FindInstruction("s");
  ASSERT_TRUE(s->attrs().slice.has_value());
  EXPECT_EQ((*s->attrs().slice)[0], (SliceDim{0, 8, 2}));
  EXPECT_EQ((*s->attrs().slice)[1], (SliceDim{2, 10, 1}));
  const HloInstruction* pd = e->FindInstruction("pd");
  EXPECT_EQ((*pd->attrs().padding)[0], (PadDim{1, 3, 1}));
  EXPECT_EQ((*pd->attrs().padding)[1], (PadDim{-1, 2, 0}));
  const HloInstruction* cv = e->FindInstruction("cv");
  ASSERT_TRUE(cv->attrs().window.has_value());
  EXPECT_EQ((*cv->attrs().window)[1].stride, 2);
  EXPECT_EQ((*cv->attrs().window)[0].pad_low, 1);
  EXPECT_EQ(cv->attrs().dim_labels->input_feature, 3);
  EXPECT_EQ(cv->attrs().dim_labels->kernel_output_feature, 3);
  EXPECT_EQ(DimLabelsToString(*cv->attrs().dim_labels), "b01f_01io->b01f");
  const HloInstruction* g = e->FindInstruction("g");
  EXPECT_EQ(g->attrs().gather_dimension_numbers->offset_dims, std::vector<int64_t>{1});
  EXPECT_EQ(*g->attrs().gather_slice_sizes, (std::vector<int64_t>{1, 16}));
  const HloInstruction* ag = e->FindInstruction("ag");
  EXPECT_TRUE(ag->attrs().replica_groups->is_iota());
  EXPECT_EQ(ag->attrs().replica_groups->group(0), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(*e->FindInstruction("cc")->attrs().custom_call_target, "Sharding");
  EXPECT_EQ(e->FindInstruction("cp")->attrs().source_target_pairs->size(), 4u);
  // The printed text re-parses to the same text (idempotence on this module).
  const std::string once = PrintModule(*parsed.module);
  ParsedModule again = MustParse(once);
  ASSERT_NE(again.module, nullptr);
  EXPECT_EQ(PrintModule(*again.module), once);
  EXPECT_THAT(once, HasSubstr("slice={[0:8:2], [2:10]}"));
  EXPECT_THAT(once, HasSubstr("padding=1_3_1x-1_2"));
  EXPECT_THAT(once, HasSubstr("window={size=3x3 stride=2x2 pad=1_1x1_1}"));
}

TEST(HloParserTest, ConstantsOfEveryKind) {
  ParsedModule parsed = MustParse(R"(HloModule m
ENTRY e {
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  b = pred[2] constant({true, false})
  c = f32[] constant(-inf)
  d = bf16[2] constant({0.5, 3})
  f = f32[4] constant({...})
  g = (s32[], f32[2]) constant((7, {1.5, -2}))
  h = u8[0] constant({})
  ROOT t = (s32[2,3], pred[2], f32[], bf16[2], f32[4], (s32[], f32[2]), u8[0]) tuple(a, b, c, d, f, g, h)
})");
  ASSERT_NE(parsed.module, nullptr);
  const HloComputation* e = parsed.module->entry();
  EXPECT_EQ(e->FindInstruction("a")->literal()->ToString(), "s32[2,3] {{1, 2, 3}, {4, 5, 6}}");
  EXPECT_EQ(e->FindInstruction("a")->literal()->GetInt64(4), 5);
  EXPECT_EQ(e->FindInstruction("b")->literal()->ToString(), "pred[2] {true, false}");
  EXPECT_EQ(e->FindInstruction("c")->literal()->ToString(), "f32[] -inf");
  EXPECT_EQ(e->FindInstruction("d")->literal()->GetDouble(0), 0.5);
  EXPECT_TRUE(e->FindInstruction("f")->literal()->elided());
  EXPECT_EQ(e->FindInstruction("g")->literal()->ValuesToString(), "(7, {1.5, -2})");
  EXPECT_EQ(e->FindInstruction("h")->literal()->ValuesToString(), "{}");
}

TEST(HloParserTest, NumDevicesCommentSetsPartitionCount) {
  ParsedModule parsed = MustParse(
      "// num_devices=8 test=X\nHloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
  ASSERT_NE(parsed.module, nullptr);
  EXPECT_EQ(parsed.module->num_partitions(), 8);
}

TEST(HloParserErrorTest, ReportsFileLineColumnAndCaret) {
  const std::string message = ParseError("HloModule m\nENTRY e {\n  p = f32[8 parameter(0)\n}\n");
  EXPECT_THAT(message, HasSubstr("bad.hlo:3:13: error: expected ']' to close the dimensions"));
  EXPECT_THAT(message, HasSubstr("\n  p = f32[8 parameter(0)\n            ^"));
}

TEST(HloParserErrorTest, UnknownOpcodeAndUndefinedOperand) {
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[] frobnicate()\n}\n"),
              HasSubstr("bad.hlo:3:18: error: unknown opcode 'frobnicate'"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT a = f32[] add(x, x)\n}\n"),
              HasSubstr("bad.hlo:3:22: error: use of undefined instruction 'x'"));
}

TEST(HloParserErrorTest, CutOffInputIsReportedNotCrashed) {
  EXPECT_THAT(
      ParseError("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] add(a,"),
      HasSubstr("cut off"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n"),
              HasSubstr("bad.hlo:2:1: error: computation 'e' is cut off: no closing '}'"));
}

TEST(HloParserErrorTest, CycleIsAnError) {
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  a = add(b, b)\n  ROOT b = add(a, a)\n}\n"),
              HasSubstr("has a cycle"));
}

TEST(HloParserErrorTest, HugeShapesAndDeepNesting) {
  // 2^40 * 2^40 elements overflows int64: an error, not an allocation.
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[1099511627776,1099511627776] "
                         "parameter(0)\n}\n"),
              HasSubstr("bad.hlo:3:12: error: shape f32[1099511627776,1099511627776] has more "
                        "than 2^63 elements"));
  // A constant of more than 2^31 elements would have to be materialised: an error.
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT c = f32[65536,65536] constant({1})\n}\n"),
              HasSubstr("needs 4294967296 values but only"));
  std::string deep = "HloModule m\nENTRY e {\n  ROOT p = ";
  for (int i = 0; i < 100; ++i) deep += "(";
  deep += "f32[]";
  for (int i = 0; i < 100; ++i) deep += ")";
  deep += " parameter(0)\n}\n";
  EXPECT_THAT(ParseError(deep), HasSubstr("nested deeper than 64 levels"));
}

TEST(HloParserErrorTest, MalformedShardings) {
  EXPECT_THAT(
      ParseError(
          "HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0), sharding={devices=[1]0}\n}\n"),
      HasSubstr("non-maximal shardings must have more than one device assigned"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0), "
                         "sharding={devices=[2,2]<=[4,1]}\n}\n"),
              HasSubstr("expected 'T('"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0), "
                         "sharding={devices=[4]<=[2,2]T(0,0)}\n}\n"),
              HasSubstr("is not a permutation"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0), "
                         "sharding={devices=[2]0,1, replicated}\n}\n"),
              HasSubstr("bad.hlo:3:59: error: expected a device id"));
}

TEST(HloParserTest, StandaloneShardingParse) {
  absl::StatusOr<HloSharding> s = ParseSharding("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->ReplicateOnLastTileDim());
  EXPECT_EQ(s->tile_assignment().Devices(), (std::vector<int64_t>{0, 2, 1, 3}));
  // last_tile_dims={replicated} normalises to last_tile_dim_replicate.
  absl::StatusOr<HloSharding> t = ParseSharding("{devices=[2,2]<=[4] last_tile_dims={replicated}}");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ToString(), "{devices=[2,2]<=[4] last_tile_dim_replicate}");
  // A one-device iota is {maximal device=0} (Dec-2023 text semantics).
  absl::StatusOr<HloSharding> one = ParseSharding("{devices=[1,1]<=[1]}");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->ToString(), "{maximal device=0}");
  absl::StatusOr<HloSharding> tuple =
      ParseSharding("{{replicated}, {maximal device=1}, {devices=[2]1,0 shard_as 3}}");
  ASSERT_TRUE(tuple.ok());
  EXPECT_EQ(tuple->ToString(), "{{replicated}, {maximal device=1}, {devices=[2]1,0 shard_as 3}}");
}

TEST(HloParserFragmentTest, UndefinedOperandsBecomeParametersAndCallsStayOpaque) {
  ParsedModule parsed = MustParse(
      "  sel = f32[4,8]{1,0} select(mask, x, zeros)\n"
      "  t = f32[8,4]{1,0} transpose(sel), dimensions={1,0}\n"
      "  r = f32[8] reduce(t, init), dimensions={1}, to_apply=region_7.1\n"
      "  g = f32[2,3] get-tuple-element(tup), index=2\n",
      /*fragment=*/true);
  ASSERT_NE(parsed.module, nullptr);
  const HloComputation* c = parsed.module->entry();
  EXPECT_EQ(c->FindInstruction("mask")->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(c->FindInstruction("mask")->shape().ToString(false), "pred[4,8]");
  EXPECT_EQ(c->FindInstruction("x")->shape().ToString(false), "f32[4,8]");
  EXPECT_EQ(c->FindInstruction("tup")->shape().ToString(false), "(token[], token[], f32[2,3])");
  EXPECT_TRUE(parsed.module->FindComputation("region_7.1")->is_opaque());
  bool warned_opaque = false;
  for (const std::string& w : parsed.warnings) {
    warned_opaque |= w.find("'region_7.1' is not in the paste") != std::string::npos;
  }
  EXPECT_TRUE(warned_opaque);
}

TEST(HloParserFragmentTest, CutOffStatementIsReportedWithLines) {
  ParsedModule parsed = MustParse(
      "  a = f32[4] negate(p)\n"
      "  b = f32[4] add(a, a), metadata={op_name=\"x\" source_file=\n"
      "  c = f32[4] multiply(a, a)\n",
      /*fragment=*/true);
  ASSERT_NE(parsed.module, nullptr);
  EXPECT_NE(parsed.module->entry()->FindInstruction("c"), nullptr);
  EXPECT_EQ(parsed.module->entry()->FindInstruction("b"), nullptr);
  bool warned = false;
  for (const std::string& w : parsed.warnings) {
    warned |= w.find("test.hlo:2:3: warning: statement on lines 2-2 is cut off") == 0;
  }
  EXPECT_TRUE(warned) << (parsed.warnings.empty() ? "" : parsed.warnings[0]);
}

TEST(HloParserFragmentTest, MalformedStatementWarningIsOneLineWithItsError) {
  ParsedModule parsed = MustParse(
      "  a = f32[4] negate(p)\n"
      "  b = f32[4] frobnicate(a)\n"
      "  c = f32[4] multiply(a, a)\n",
      /*fragment=*/true);
  ASSERT_NE(parsed.module, nullptr);
  EXPECT_EQ(parsed.module->entry()->FindInstruction("b"), nullptr);
  const std::string prefix =
      "test.hlo:2:3: warning: statement on lines 2-2 is cut off or malformed and was skipped "
      "(test.hlo:2:";
  const std::string* warning = nullptr;
  for (const std::string& w : parsed.warnings) {
    if (w.rfind(prefix, 0) == 0) warning = &w;
  }
  ASSERT_NE(warning, nullptr) << ::testing::PrintToString(parsed.warnings);
  // The statement's error without its source excerpt: one line, naming the opcode.
  EXPECT_EQ(warning->find('\n'), std::string::npos) << *warning;
  EXPECT_NE(warning->find(": error: "), std::string::npos) << *warning;
  EXPECT_NE(warning->find("frobnicate"), std::string::npos) << *warning;
  EXPECT_EQ(warning->back(), ')') << *warning;
}

}  // namespace
}  // namespace spmdcheck
