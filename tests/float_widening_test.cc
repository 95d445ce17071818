// Programs evaluated in a wider float type (oracle/float_widening.h): which types change, that
// constants keep their values, and that a bitcast-convert refuses the widening.
#include "oracle/float_widening.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"

namespace spmdcheck::oracle {
namespace {

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? std::move(parsed->module) : nullptr;
}

constexpr char kMixed[] = R"(HloModule m
ENTRY main {
  p = f32[2] parameter(0)
  c = f32[2] constant({0.1, -3})
  h = bf16[2] constant({1.5, 2})
  i = s32[2] constant({1, 2})
  s = f32[2] add(p, c)
  ROOT t = (f32[2], bf16[2], s32[2]) tuple(s, h, i)
}
)";

TEST(FloatWideningTest, F32ToF64WidensF32AloneAndKeepsConstantValues) {
  std::unique_ptr<HloModule> module = Parse(kMixed);
  ASSERT_NE(module, nullptr);
  EXPECT_TRUE(HasWidenableFloats(*module, FloatWidening::kF32ToF64));
  std::unique_ptr<HloModule> wide = WidenFloats(*module, FloatWidening::kF32ToF64);
  ASSERT_NE(wide, nullptr);
  const std::string text = PrintModule(*wide);
  EXPECT_NE(text.find("p = f64[2] parameter(0)"), std::string::npos) << text;
  // The f32 nearest 0.1, exactly: the same numbers, in the wider type.
  EXPECT_NE(text.find("c = f64[2] constant({0.10000000149011612, -3})"), std::string::npos) << text;
  EXPECT_NE(text.find("h = bf16[2] constant({1.5, 2})"), std::string::npos) << text;
  EXPECT_NE(text.find("(f64[2], bf16[2], s32[2]) tuple(s, h, i)"), std::string::npos) << text;
  EXPECT_FALSE(HasWidenableFloats(*wide, FloatWidening::kF32ToF64));
}

TEST(FloatWideningTest, NarrowToF32WidensNarrowFloatsAlone) {
  std::unique_ptr<HloModule> module = Parse(kMixed);
  ASSERT_NE(module, nullptr);
  std::unique_ptr<HloModule> wide = WidenFloats(*module, FloatWidening::kNarrowToF32);
  ASSERT_NE(wide, nullptr);
  const std::string text = PrintModule(*wide);
  EXPECT_NE(text.find("h = f32[2] constant({1.5, 2})"), std::string::npos) << text;
  EXPECT_NE(text.find("p = f32[2] parameter(0)"), std::string::npos) << text;
  EXPECT_FALSE(HasWidenableFloats(*wide, FloatWidening::kNarrowToF32));
}

TEST(FloatWideningTest, AllFloatsAreF32OnlyWhenNoOtherFloatTypeIsThere) {
  std::unique_ptr<HloModule> mixed = Parse(kMixed);
  ASSERT_NE(mixed, nullptr);
  EXPECT_FALSE(AllFloatsAreF32(*mixed));
  std::unique_ptr<HloModule> f32 = Parse(R"(HloModule m
ENTRY main {
  p = f32[2] parameter(0)
  i = s32[2] convert(p)
  ROOT t = (f32[2], s32[2]) tuple(p, i)
}
)");
  ASSERT_NE(f32, nullptr);
  EXPECT_TRUE(AllFloatsAreF32(*f32));
  std::unique_ptr<HloModule> integers = Parse(R"(HloModule m
ENTRY main {
  ROOT p = s32[2] parameter(0)
}
)");
  ASSERT_NE(integers, nullptr);
  EXPECT_FALSE(AllFloatsAreF32(*integers));
}

TEST(FloatWideningTest, ABitcastConvertRefusesTheWidening) {
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m
ENTRY main {
  p = f32[2] parameter(0)
  ROOT b = s32[2] bitcast-convert(p)
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(WidenFloats(*module, FloatWidening::kF32ToF64), nullptr);
}

}  // namespace
}  // namespace spmdcheck::oracle
