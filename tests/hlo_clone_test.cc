// HloModule::Clone: the copy prints as the original does, verifies when it does, points only
// into itself, and changing it leaves the original as it was. Also over every module of the
// shared conformance folders.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck {
namespace {

namespace fs = std::filesystem;
using test_support::ReadFileOrFail;

std::unique_ptr<HloModule> Parse(const std::string& text, bool fragment = false) {
  ParseOptions options;
  options.path = "clone_test.hlo";
  options.fragment = fragment;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text, options);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return nullptr;
  return std::move(parsed->module);
}

// Every operand, root, parent and called computation of `copy` is one of its own objects, and
// none of them is an object of `original`.
void ExpectSelfContained(const HloModule& original, const HloModule& copy) {
  absl::flat_hash_set<const HloComputation*> own_computations, original_computations;
  absl::flat_hash_set<const HloInstruction*> own_instructions, original_instructions;
  for (const auto& c : copy.computations()) {
    own_computations.insert(c.get());
    for (const auto& h : c->instructions()) own_instructions.insert(h.get());
  }
  for (const auto& c : original.computations()) {
    original_computations.insert(c.get());
    for (const auto& h : c->instructions()) original_instructions.insert(h.get());
  }
  ASSERT_EQ(own_computations.size(), original_computations.size());
  ASSERT_EQ(own_instructions.size(), original_instructions.size());
  if (original.entry() != nullptr) {
    EXPECT_TRUE(own_computations.contains(copy.entry()));
    EXPECT_EQ(copy.entry()->name(), original.entry()->name());
  }
  for (const auto& c : copy.computations()) {
    EXPECT_EQ(c->parent(), &copy);
    EXPECT_FALSE(original_computations.contains(c.get()));
    EXPECT_TRUE(own_computations.contains(copy.FindComputation(c->name())));
    if (c->root() != nullptr) {
      EXPECT_TRUE(own_instructions.contains(c->root())) << c->name();
    }
    for (int64_t i = 0; i < c->instruction_count(); ++i) {
      const HloInstruction* h = c->instructions()[i].get();
      EXPECT_EQ(h->parent(), c.get());
      EXPECT_EQ(h->index_in_parent(), i);
      EXPECT_EQ(c->FindInstruction(h->name())->parent(), c.get());
      for (const HloInstruction* operand : h->operands()) {
        if (operand == nullptr) continue;
        EXPECT_TRUE(own_instructions.contains(operand)) << h->name();
        EXPECT_FALSE(original_instructions.contains(operand)) << h->name();
      }
      for (const HloComputation* callee : h->AllCalledComputations()) {
        EXPECT_TRUE(own_computations.contains(callee)) << h->name();
      }
    }
  }
}

constexpr char kControlFlow[] =
    R"(HloModule control_flow, num_partitions=4, entry_computation_layout={(f32[8,4]{1,0}, s32[])->(f32[8,4]{1,0}, s32[])}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

fused {
  x = f32[8,4] parameter(0)
  y = f32[8,4] parameter(1)
  ROOT m = f32[8,4] multiply(x, y)
}

cond {
  p = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  p = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[8,4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  f = f32[8,4] fusion(v, v), kind=kLoop, calls=fused
  ROOT r = (s32[], f32[8,4]) tuple(j, f)
}

on_true {
  t = f32[8,4] parameter(0)
  ROOT neg = f32[8,4] negate(t)
}

on_false {
  e = f32[8,4] parameter(0)
  ROOT ab = f32[8,4] abs(e)
}

helper {
  h = f32[8,4] parameter(0)
  ROOT c = f32[8,4] call(h), to_apply=on_true
}

ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}, metadata={op_name="x"}
  k = s32[] parameter(1), sharding={replicated}
  zero = s32[] constant(0)
  init = (s32[], f32[8,4]) tuple(zero, x), sharding={{replicated}, {devices=[4,1]<=[4]}}
  w = (s32[], f32[8,4]) while(init), condition=cond, body=body
  v = f32[8,4] get-tuple-element(w), index=1, sharding={devices=[2,2]<=[4]}
  big = pred[] compare(k, zero), direction=GT
  c = f32[8,4] conditional(big, v, v), true_computation=on_true, false_computation=on_false
  k2 = s32[] clamp(zero, k, zero)
  b = f32[8,4] conditional(k2, c, c, c), branch_computations={on_true, on_false, helper}
  zf = f32[] constant(0)
  sum = f32[8] reduce(b, zf), dimensions={1}, to_apply=add
  ROOT out = (f32[8,4], s32[]) tuple(b, k)
}
)";

TEST(HloClone, ControlFlowModulePrintsIdenticallyVerifiesAndPointsIntoItself) {
  std::unique_ptr<HloModule> original = Parse(kControlFlow);
  ASSERT_NE(original, nullptr);
  ASSERT_TRUE(VerifyModule(*original).ok()) << VerifyModule(*original).message();
  std::unique_ptr<HloModule> copy = original->Clone();
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(PrintModule(*copy), PrintModule(*original));
  EXPECT_TRUE(VerifyModule(*copy).ok()) << VerifyModule(*copy).message();
  ExpectSelfContained(*original, *copy);
  EXPECT_EQ(copy->num_partitions(), 4);
  EXPECT_EQ(copy->raw_header_attributes().size(), original->raw_header_attributes().size());
  // The clone of a clone is the same module again.
  EXPECT_EQ(PrintModule(*copy->Clone()), PrintModule(*original));
}

TEST(HloClone, ChangingTheCloneLeavesTheOriginalAsItWas) {
  std::unique_ptr<HloModule> original = Parse(kControlFlow);
  ASSERT_NE(original, nullptr);
  const std::string before = PrintModule(*original);
  std::unique_ptr<HloModule> copy = original->Clone();

  HloComputation* entry = copy->entry();
  HloInstruction* x = entry->FindInstruction("x");
  HloInstruction* v = entry->FindInstruction("v");
  HloInstruction* c = entry->FindInstruction("c");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(v, nullptr);
  ASSERT_NE(c, nullptr);
  x->set_name("renamed_x");
  x->mutable_shape().set_dimensions(0, 16);
  x->set_sharding(HloSharding::Replicate());
  v->clear_sharding();
  c->ReplaceOperand(1, x);
  HloInstruction* sum = entry->FindInstruction("sum");
  ASSERT_NE(sum, nullptr);
  sum->mutable_attrs().dimensions = std::vector<int64_t>{0};
  // A called computation of the copy.
  HloComputation* on_false = copy->FindComputation("on_false");
  ASSERT_NE(on_false, nullptr);
  on_false->root()->set_name("changed_root");
  on_false->set_name("on_false_renamed");
  HloComputation* body = copy->FindComputation("body");
  ASSERT_NE(body, nullptr);
  Literal seven(Shape::Scalar(PrimitiveType::kS32));
  seven.SetInt64(0, 7);
  body->FindInstruction("one")->set_literal(std::move(seven));
  copy->set_num_partitions(8);
  copy->mutable_raw_header_attributes().clear();
  copy->set_name("other");

  EXPECT_EQ(PrintModule(*original), before);
  EXPECT_NE(PrintModule(*copy), before);
  EXPECT_EQ(original->entry()->FindInstruction("x")->shape().dimensions(0), 8);
  EXPECT_NE(original->FindComputation("on_false"), nullptr);
  EXPECT_EQ(original->FindComputation("on_false_renamed"), nullptr);
  EXPECT_EQ(original->num_partitions(), 4);
  // The changes show in the copy: the renamed computation is what the conditional calls.
  EXPECT_THAT(PrintModule(*copy), ::testing::HasSubstr("false_computation=on_false_renamed"));
  EXPECT_THAT(PrintModule(*copy), ::testing::HasSubstr("conditional(big, renamed_x, v)"));
  EXPECT_THAT(PrintModule(*copy), ::testing::HasSubstr("s32[] constant(7)"));

  // And the other way round: changing the original after cloning leaves the copy alone.
  std::unique_ptr<HloModule> second = original->Clone();
  const std::string second_before = PrintModule(*second);
  original->entry()->FindInstruction("k")->set_sharding(HloSharding::Replicate());
  original->entry()->FindInstruction("init")->mutable_shape().mutable_tuple_shapes()[0] =
      Shape::Array(PrimitiveType::kS64, {});
  original->entry()->root()->set_name("new_root");
  EXPECT_EQ(PrintModule(*second), second_before);
}

TEST(HloClone, FragmentsWithOpaqueComputationsClone) {
  std::unique_ptr<HloModule> original = Parse(
      "  s = f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=sum.1\n"
      "  t = f32[4] add(s, q)\n",
      /*fragment=*/true);
  ASSERT_NE(original, nullptr);
  std::unique_ptr<HloModule> copy = original->Clone();
  EXPECT_EQ(PrintModule(*copy), PrintModule(*original));
  ExpectSelfContained(*original, *copy);
  const HloComputation* opaque = copy->FindComputation("sum.1");
  ASSERT_NE(opaque, nullptr);
  EXPECT_TRUE(opaque->is_opaque());
}

TEST(HloClone, ClonerAssemblesAModuleFromPartsOfAnother) {
  std::unique_ptr<HloModule> original = Parse(kControlFlow);
  ASSERT_NE(original, nullptr);
  // A module with `on_true` and `helper` (which calls it) and a new entry negating x through
  // a call of `helper`.
  HloModule assembled("assembled");
  HloCloner cloner;
  std::vector<HloComputation*> copies = cloner.CloneComputations(
      {original->FindComputation("helper"), original->FindComputation("on_true")}, assembled);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0]->root()->called_computation("to_apply"), copies[1]);
  auto entry = std::make_unique<HloComputation>("main");
  const HloInstruction* x = original->entry()->FindInstruction("x");
  HloInstruction* p = entry->AddInstruction(
      std::make_unique<HloInstruction>(HloOpcode::kParameter, "x", x->shared_shape()));
  p->set_parameter_number(0);
  cloner.MapInstruction(x, p);
  HloInstruction call(HloOpcode::kCall, "c", x->shape());
  call.AppendOperand(const_cast<HloInstruction*>(x));
  call.mutable_called().push_back({"to_apply", {original->FindComputation("helper")}, false});
  HloInstruction* root = entry->AddInstruction(cloner.CloneInstruction(call));
  entry->set_root(root);
  assembled.set_entry(assembled.AddComputation(std::move(entry)));
  EXPECT_EQ(root->operand(0), p);
  EXPECT_EQ(root->called_computation("to_apply"), copies[0]);
  EXPECT_TRUE(VerifyModule(assembled).ok()) << VerifyModule(assembled).message();
  EXPECT_THAT(PrintModule(assembled),
              ::testing::HasSubstr("ROOT c = f32[8,4] call(x), to_apply=helper"));
}

TEST(HloClone, ACopiedInstructionIsInNoComputation) {
  // More than 16 instructions, so the computation keeps a name index.
  std::string text = "HloModule big\nENTRY main {\n  p0 = f32[4] parameter(0)\n";
  for (int i = 1; i <= 20; ++i) {
    text += "  p" + std::to_string(i) + " = f32[4] negate(p" + std::to_string(i - 1) + ")\n";
  }
  text += "  ROOT r = f32[4] copy(p20)\n}\n";
  std::unique_ptr<HloModule> module = Parse(text);
  ASSERT_NE(module, nullptr);
  HloInstruction* p7 = module->entry()->FindInstruction("p7");
  ASSERT_NE(p7, nullptr);
  {
    HloInstruction copy(*p7);
    EXPECT_EQ(copy.parent(), nullptr);
    EXPECT_EQ(copy.index_in_parent(), -1);
    copy.set_name("renamed");
    EXPECT_EQ(copy.name(), "renamed");
  }
  EXPECT_EQ(module->entry()->FindInstruction("renamed"), nullptr);
  EXPECT_EQ(module->entry()->FindInstruction("p7"), p7);
  EXPECT_EQ(p7->name(), "p7");
  // Assigning keeps the target's place.
  HloInstruction* p8 = module->entry()->FindInstruction("p8");
  const int64_t index = p8->index_in_parent();
  HloInstruction other(HloOpcode::kAbs, "p8", p8->shape());
  other.AppendOperand(p7);
  *p8 = other;
  EXPECT_EQ(p8->parent(), module->entry());
  EXPECT_EQ(p8->index_in_parent(), index);
  EXPECT_EQ(p8->opcode(), HloOpcode::kAbs);
}

TEST(HloClone, EveryConformanceModuleClonesFaithfully) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("conformance");
  std::vector<fs::path> files;
  for (const auto& dir : fs::directory_iterator(test_support::SharedPath("conformance"))) {
    if (!dir.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(dir.path())) {
      if (entry.path().extension() == ".hlo") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no modules under " << test_support::SharedPath("conformance");
  int cloned = 0, verified = 0;
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    ParseOptions options;
    options.path = path.string();
    absl::StatusOr<ParsedModule> parsed = ParseHloModule(ReadFileOrFail(path), options);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    const HloModule& original = *parsed->module;
    const std::string printed = PrintModule(original);
    std::unique_ptr<HloModule> copy = original.Clone();
    ASSERT_EQ(PrintModule(*copy), printed);
    ExpectSelfContained(original, *copy);
    const bool original_verifies = VerifyModule(original).ok();
    EXPECT_EQ(VerifyModule(*copy).ok(), original_verifies);
    verified += original_verifies ? 1 : 0;
    // Independence: renaming and reshaping in the copy does not show in the original.
    for (const auto& c : copy->computations()) {
      for (const auto& h : c->instructions()) {
        h->set_name(h->name() + ".copy");
        if (h->shape().IsArray() && h->shape().rank() > 0) h->mutable_shape().set_dimensions(0, 3);
        h->clear_sharding();
      }
    }
    ASSERT_EQ(PrintModule(original), printed);
    ++cloned;
  }
  std::cout << cloned << " conformance modules cloned, " << verified << " of them verify\n";
}

}  // namespace
}  // namespace spmdcheck
