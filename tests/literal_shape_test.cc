// Shapes and literals: shape text round trips (arrays, tuples, layouts, dynamic dims, tokens),
// the literal text format, rounding of narrow floats, integer range checks and wrap-around, and
// a print/parse round-trip property over random literals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ir/hlo_parser.h"
#include "ir/literal.h"
#include "ir/shape.h"

namespace spmdcheck {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Shape MustShape(absl::string_view text) {
  absl::StatusOr<Shape> s = ParseShape(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *s : Shape();
}

Literal MustLiteral(absl::string_view text) {
  absl::StatusOr<Literal> l = ParseLiteral(text);
  EXPECT_TRUE(l.ok()) << text << ": " << l.status();
  return l.ok() ? *l : Literal();
}

// --- Shapes --------------------------------------------------------------------------------

TEST(ShapeText, RoundTrips) {
  for (const char* text : {"f32[8,4]",
                           "f32[8,4]{1,0}",
                           "f32[8,4]{0,1}",
                           "s32[]",
                           "pred[3]",
                           "bf16[2,3,4]{0,1,2}",
                           "u8[0]",
                           "f16[1,0,2]",
                           "c64[2]",
                           "s4[8]",
                           "f8e4m3fn[4]",
                           "(s32[], f32[2])",
                           "(f32[1], (s32[], pred[2]))",
                           "()",
                           "((), ())",
                           "f32[128,256]{1,0:T(8,128)}",
                           "bf16[128,256]{1,0:T(8,128)(2,1)}",
                           "f32[<=8,4]",
                           "f32[?,4]",
                           "f32[<=8,?]{1,0}",
                           "token[]",
                           "(f32[], token[])"}) {
    Shape shape = MustShape(text);
    EXPECT_EQ(shape.ToString(), text);
    EXPECT_EQ(MustShape(shape.ToString()), shape) << text;
  }
}

TEST(ShapeText, Structure) {
  Shape tiled = MustShape("f32[128,256]{1,0:T(8,128)}");
  EXPECT_TRUE(tiled.IsArray());
  EXPECT_THAT(tiled.dimensions(), ElementsAre(128, 256));
  ASSERT_TRUE(tiled.layout().has_value());
  EXPECT_THAT(tiled.layout()->minor_to_major, ElementsAre(1, 0));
  EXPECT_EQ(tiled.layout()->extension, "T(8,128)");
  EXPECT_EQ(tiled.ToString(false), "f32[128,256]");
  // Layouts are ignored by Compatible, not by ==.
  EXPECT_TRUE(tiled.Compatible(MustShape("f32[128,256]")));
  EXPECT_FALSE(tiled == MustShape("f32[128,256]"));

  Shape dynamic = MustShape("f32[<=8,?,3]");
  EXPECT_EQ(dynamic.dimension_kind(0), DimensionKind::kBoundedDynamic);
  EXPECT_EQ(dynamic.dimensions(0), 8);
  EXPECT_EQ(dynamic.dimension_kind(1), DimensionKind::kUnbounded);
  EXPECT_EQ(dynamic.dimension_kind(2), DimensionKind::kStatic);
  EXPECT_FALSE(dynamic.is_static());
  EXPECT_FALSE(dynamic.Compatible(MustShape("f32[8,?,3]")));

  Shape tuple = MustShape("(f32[1], (s32[], pred[2]), token[])");
  EXPECT_TRUE(tuple.IsTuple());
  EXPECT_EQ(tuple.tuple_size(), 3);
  EXPECT_EQ(tuple.LeafCount(), 4);
  EXPECT_TRUE(tuple.tuple_shapes()[2].IsToken());
  EXPECT_TRUE(MustShape("f32[]").IsScalar());
  EXPECT_EQ(MustShape("f32[3,5]").ElementCount(), 15);
  EXPECT_EQ(MustShape("bf16[3,5]").ByteSize(), 30);
}

TEST(ShapeText, LongTuplesCarryIndexComments) {
  Shape shape = MustShape("(s32[], s32[], s32[], s32[], s32[], f32[2], f32[3])");
  EXPECT_EQ(shape.ToString(), "(s32[], s32[], s32[], s32[], s32[], /*index=5*/f32[2], f32[3])");
  EXPECT_EQ(MustShape(shape.ToString()), shape);
}

TEST(ShapeText, Errors) {
  for (const char* bad :
       {"f32[8", "f33[2]", "f32[-1]", "f32[2]{0,1}", "f32[2] junk", "(f32[]", "f32", "[2]",
        "f32[3037000500,3037000500]", "token[3]", "token[] {}", "token[]{0}"}) {
    absl::StatusOr<Shape> s = ParseShape(bad);
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) {
      EXPECT_THAT(std::string(s.status().message()), HasSubstr("<input>:1:")) << bad;
    }
  }
}

// Found by fuzz_literal_parser: `token[3] {20:.}` was accepted as a token whose reparse differed.
TEST(ShapeText, TokensHaveNoDimensionsOrLayout) {
  absl::StatusOr<Shape> dims = ParseShape("token[3]");
  ASSERT_FALSE(dims.ok());
  EXPECT_THAT(std::string(dims.status().message()), HasSubstr("a token shape has no dimensions"));
  EXPECT_FALSE(ParseShape("token[3] {20:.}").ok());
  EXPECT_FALSE(ParseLiteral("token[3] {20:.}", Shape()).ok());
  EXPECT_TRUE(ParseShape("token[]").ok());
}

// --- Literal text --------------------------------------------------------------------------

TEST(LiteralText, Format) {
  Literal l(Shape::Array(PrimitiveType::kS32, {2, 3}));
  for (int64_t i = 0; i < 6; ++i) l.SetInt64(i, i + 1);
  EXPECT_EQ(l.ToString(), "s32[2,3] {{1, 2, 3}, {4, 5, 6}}");
  EXPECT_EQ(l.ValuesToString(), "{{1, 2, 3}, {4, 5, 6}}");
  EXPECT_EQ(MustLiteral(l.ToString()), l);

  Literal scalar(Shape::Scalar(PrimitiveType::kF32));
  scalar.SetDouble(0, -0.5);
  EXPECT_EQ(scalar.ToString(), "f32[] -0.5");
  EXPECT_EQ(MustLiteral("pred[2] {true, false}").ToString(), "pred[2] {true, false}");
  EXPECT_EQ(MustLiteral("f32[4] {-0, inf, -inf, nan}").ToString(), "f32[4] {-0, inf, -inf, nan}");
  EXPECT_EQ(MustLiteral("(s32[], f32[2]) (1, {2, 3})").ToString(), "(s32[], f32[2]) (1, {2, 3})");
  EXPECT_EQ(MustLiteral("s32[1,1,2] {{{7, -8}}}").ToString(), "s32[1,1,2] {{{7, -8}}}");
  EXPECT_EQ(MustLiteral("f32[0] {}").ToString(), "f32[0] {}");
  EXPECT_EQ(MustLiteral("f32[0,2] {}").ToString(), "f32[0,2] {}");
  EXPECT_EQ(MustLiteral("c64[2] {(1, -2), (0.5, 0)}").ToString(), "c64[2] {(1, -2), (0.5, 0)}");
}

TEST(LiteralText, ShapeGivenSeparately) {
  absl::StatusOr<Literal> l = ParseLiteral("{{1, 2}, {3, 4}}", MustShape("s32[2,2]"));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->GetInt64(3), 4);
  EXPECT_FALSE(ParseLiteral("{{1, 2}, {3}}", MustShape("s32[2,2]")).ok());
  EXPECT_FALSE(ParseLiteral("{1, 2, 3}", MustShape("s32[2]")).ok());
  EXPECT_FALSE(ParseLiteral("{1.5}", MustShape("s32[1]")).ok());
}

// Known bug (reported to the lead; literal.cc is not ours to fix): an array whose zero-sized dim
// follows a non-zero one prints one brace group instead of one per index — f32[2,0] prints
// `{{}}` where XLA prints (and our parser requires) `{{}, {}}` — so the text does not parse
// back. Run with --gtest_also_run_disabled_tests to see it fail.
TEST(LiteralText, ZeroSizedInnerDimRoundTrips) {
  Literal l = MustLiteral("f32[2,0] {{}, {}}");
  EXPECT_EQ(l.ToString(), "f32[2,0] {{}, {}}");
  EXPECT_TRUE(ParseLiteral(l.ToString()).ok());
  EXPECT_EQ(MustLiteral("s32[1,2,0] {{{}, {}}}").ToString(), "s32[1,2,0] {{{}, {}}}");
}

// Known bug (reported; hlo_parser.cc is not ours to fix): in the standalone `SHAPE VALUES` form
// a rank-1 literal whose first value starts with a digit is ambiguous — `f32[1] {0}` reads
// `{0}` as a layout and then finds no values — so ParseLiteral(l.ToString()) fails for e.g.
// s32[2] {1, 2}. (Inside HLO the values sit in `constant(...)`, which has no such ambiguity.)
TEST(LiteralText, RankOneLiteralRoundTripsThroughToString) {
  absl::StatusOr<Literal> l = ParseLiteral("s32[2] {1, 2}");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->GetInt64(1), 2);
  EXPECT_TRUE(ParseLiteral("f32[1] {0}").ok());
}

// --- Narrow floats: round to nearest, ties to even -----------------------------------------

uint64_t Bf16Bits(double value) {
  Literal l(Shape::Scalar(PrimitiveType::kBF16));
  l.SetDouble(0, value);
  return l.GetBits(0);
}

uint64_t F16Bits(double value) {
  Literal l(Shape::Scalar(PrimitiveType::kF16));
  l.SetDouble(0, value);
  return l.GetBits(0);
}

TEST(NarrowFloats, Bf16RoundsToNearestEven) {
  // bf16 keeps 7 mantissa bits: near 1 the spacing is 2^-7. 1.0 = 0x3F80.
  EXPECT_EQ(Bf16Bits(1.0), 0x3F80u);
  EXPECT_EQ(Bf16Bits(1.0 + std::ldexp(1, -7)), 0x3F81u);      // exact
  EXPECT_EQ(Bf16Bits(1.0 + std::ldexp(1, -8)), 0x3F80u);      // tie -> even (down)
  EXPECT_EQ(Bf16Bits(1.0 + 3 * std::ldexp(1, -8)), 0x3F82u);  // tie -> even (up): 1+2^-6
  EXPECT_EQ(Bf16Bits(1.0 + std::ldexp(1, -8) + std::ldexp(1, -12)), 0x3F81u);  // above tie
  EXPECT_EQ(Bf16Bits(-(1.0 + 3 * std::ldexp(1, -8))), 0xBF82u);
  EXPECT_EQ(Bf16Bits(0.0), 0x0000u);
  EXPECT_EQ(Bf16Bits(-0.0), 0x8000u);
  EXPECT_EQ(Bf16Bits(INFINITY), 0x7F80u);
  // bf16 max is (2 - 2^-7) * 2^127 = 0x7F7F; FLT_MAX lies beyond the halfway point -> inf.
  EXPECT_EQ(Bf16Bits(std::ldexp(2.0 - std::ldexp(1, -7), 127)), 0x7F7Fu);
  EXPECT_EQ(Bf16Bits(std::numeric_limits<float>::max()), 0x7F80u);
  Literal l(Shape::Scalar(PrimitiveType::kBF16));
  l.SetDouble(0, 1.0 + 3 * std::ldexp(1, -8));
  EXPECT_EQ(l.GetDouble(0), 1.015625);
  // Printed with the fewest digits that read back to the same bf16: 1.016.
  EXPECT_EQ(l.ToString(), "bf16[] 1.016");
  EXPECT_EQ(MustLiteral("bf16[] 1.01171875").GetBits(0), 0x3F82u);
}

TEST(NarrowFloats, F16RoundsToNearestEvenAndOverflows) {
  // f16: 10 mantissa bits, bias 15; 1.0 = 0x3C00; max 65504 = 0x7BFF; inf = 0x7C00.
  EXPECT_EQ(F16Bits(1.0), 0x3C00u);
  EXPECT_EQ(F16Bits(1.0 + std::ldexp(1, -11)), 0x3C00u);      // tie -> even (down)
  EXPECT_EQ(F16Bits(1.0 + 3 * std::ldexp(1, -11)), 0x3C02u);  // tie -> even (up)
  EXPECT_EQ(F16Bits(65504.0), 0x7BFFu);
  EXPECT_EQ(F16Bits(65519.0), 0x7BFFu);  // below the halfway point 65520
  EXPECT_EQ(F16Bits(65520.0), 0x7C00u);  // tie between 65504 (odd) and 65536 -> inf
  EXPECT_EQ(F16Bits(1e6), 0x7C00u);
  EXPECT_EQ(F16Bits(-65520.0), 0xFC00u);
  // Subnormals: quantum 2^-24.
  EXPECT_EQ(F16Bits(std::ldexp(1, -24)), 0x0001u);
  EXPECT_EQ(F16Bits(std::ldexp(1, -25)), 0x0000u);      // tie -> even (zero)
  EXPECT_EQ(F16Bits(3 * std::ldexp(1, -26)), 0x0001u);  // 0.75 quantum -> 1
  EXPECT_EQ(F16Bits(3 * std::ldexp(1, -25)), 0x0002u);  // 1.5 quanta, tie -> 2
  EXPECT_EQ(F16Bits(std::ldexp(1, -14)), 0x0400u);      // smallest normal
  Literal l(Shape::Scalar(PrimitiveType::kF16));
  l.SetBits(0, 0x7BFF);
  EXPECT_EQ(l.GetDouble(0), 65504.0);
  l.SetBits(0, 0x0001);
  EXPECT_EQ(l.GetDouble(0), std::ldexp(1, -24));
  EXPECT_EQ(MustLiteral("f16[] 65520").ToString(), "f16[] inf");
  EXPECT_EQ(MustLiteral("f16[] 65519").GetBits(0), 0x7BFFu);
  const Literal max = MustLiteral("f16[] 65504");
  EXPECT_EQ(max.GetBits(0), 0x7BFFu);
  EXPECT_EQ(MustLiteral(max.ToString()), max);
}

// --- Integers ------------------------------------------------------------------------------

TEST(Integers, ParseChecksTheRange) {
  for (const char* bad : {"s8[] 200", "s8[] 128", "s8[] -129", "u8[] 256", "u8[] -1", "pred[] 2",
                          "s32[] 2147483648", "u32[] 4294967296", "s64[] 9223372036854775808"}) {
    absl::StatusOr<Literal> l = ParseLiteral(bad);
    EXPECT_FALSE(l.ok()) << bad;
    if (!l.ok()) {
      EXPECT_THAT(std::string(l.status().message()), HasSubstr("out of range")) << bad;
    }
  }
  EXPECT_EQ(MustLiteral("s8[] 127").GetInt64(0), 127);
  EXPECT_EQ(MustLiteral("s8[] -128").GetInt64(0), -128);
  EXPECT_EQ(MustLiteral("u8[] 255").GetUint64(0), 255u);
  EXPECT_EQ(MustLiteral("s64[] -9223372036854775808").GetInt64(0),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(MustLiteral("u64[] 18446744073709551615").GetUint64(0),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(MustLiteral("s32[2] {true, false}").GetInt64(0), 1);
}

TEST(Integers, SettersWrapAround) {
  Literal u8(Shape::Scalar(PrimitiveType::kU8));
  u8.SetInt64(0, 300);
  EXPECT_EQ(u8.GetUint64(0), 44u);  // 300 - 256
  u8.SetInt64(0, -1);
  EXPECT_EQ(u8.GetUint64(0), 255u);
  Literal s8(Shape::Scalar(PrimitiveType::kS8));
  s8.SetInt64(0, 200);
  EXPECT_EQ(s8.GetInt64(0), -56);  // 200 - 256
  s8.SetUint64(0, 255);
  EXPECT_EQ(s8.GetInt64(0), -1);
  Literal s32(Shape::Scalar(PrimitiveType::kS32));
  s32.SetInt64(0, int64_t{1} << 31);
  EXPECT_EQ(s32.GetInt64(0), -(int64_t{1} << 31));
  Literal u16(Shape::Scalar(PrimitiveType::kU16));
  u16.SetInt64(0, -1);
  EXPECT_EQ(u16.GetUint64(0), 65535u);
  EXPECT_EQ(WrapToType(PrimitiveType::kU8, 300), 44u);
  EXPECT_EQ(WrapToType(PrimitiveType::kS4, 0x1F), 0xFu);
  EXPECT_EQ(WrapToType(PrimitiveType::kPred, 6), 1u);
}

// --- Property: ParseLiteral(literal.ToString()) == literal -----------------------------------

template <typename T>
T Uniform(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

Literal GenLiteral() {
  const PrimitiveType type =
      *rc::gen::element(PrimitiveType::kS32, PrimitiveType::kU8, PrimitiveType::kPred,
                        PrimitiveType::kF32, PrimitiveType::kBF16);
  const int64_t rank = Uniform<int64_t>(0, 5);
  std::vector<int64_t> dims;
  bool all_zero_so_far = true;
  for (int64_t k = 0; k < rank; ++k) {
    // Zero-sized dims only where every earlier dim is zero too (see the disabled test above).
    const int64_t d = Uniform<int64_t>(all_zero_so_far ? 0 : 1, 4);
    all_zero_so_far = all_zero_so_far && d == 0;
    dims.push_back(d);
  }
  Literal l(Shape::Array(type, dims));
  for (int64_t i = 0; i < l.element_count(); ++i) {
    switch (type) {
      case PrimitiveType::kS32:
        l.SetInt64(i, *rc::gen::arbitrary<int32_t>());
        break;
      case PrimitiveType::kU8:
        l.SetUint64(i, *rc::gen::arbitrary<uint8_t>());
        break;
      case PrimitiveType::kPred:
        l.SetUint64(i, *rc::gen::arbitrary<bool>() ? 1 : 0);
        break;
      case PrimitiveType::kF32: {
        // Any bit pattern but NaN (NaN payloads do not survive the text form).
        const uint32_t bits = *rc::gen::suchThat(rc::gen::arbitrary<uint32_t>(), [](uint32_t b) {
          return !std::isnan(std::bit_cast<float>(b));
        });
        l.SetBits(i, bits);
        break;
      }
      default: {
        const uint16_t bits = *rc::gen::suchThat(rc::gen::arbitrary<uint16_t>(), [](uint16_t b) {
          return !std::isnan(std::bit_cast<float>(static_cast<uint32_t>(b) << 16));
        });
        l.SetBits(i, bits);
        break;
      }
    }
  }
  return l;
}

RC_GTEST_PROP(LiteralProperties, PrintParseRoundTrip, ()) {
  const Literal l = GenLiteral();
  // Values with the shape given separately.
  absl::StatusOr<Literal> values = ParseLiteral(l.ValuesToString(), l.shape());
  RC_ASSERT(values.ok());
  RC_ASSERT(*values == l);  // Same shape and the same bits in every element.
  // The whole `SHAPE VALUES` text (rank 1 skipped: see the disabled test above).
  RC_PRE(l.shape().rank() != 1);
  const std::string text = l.ToString();
  absl::StatusOr<Literal> parsed = ParseLiteral(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == l);
  RC_ASSERT(parsed->ToString() == text);
}

RC_GTEST_PROP(LiteralProperties, ShapeRoundTrip, ()) {
  const Literal l = GenLiteral();
  Shape shape = l.shape();
  if (shape.rank() > 0 && *rc::gen::arbitrary<bool>()) {
    // A random minor-to-major layout.
    std::vector<int64_t> m2m(shape.rank());
    for (int64_t i = 0; i < shape.rank(); ++i) m2m[i] = shape.rank() - 1 - i;
    for (int64_t i = shape.rank() - 1; i > 0; --i)
      std::swap(m2m[i], m2m[Uniform<int64_t>(0, i + 1)]);
    shape.set_layout(Layout{m2m, ""});
  }
  absl::StatusOr<Shape> parsed = ParseShape(shape.ToString());
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == shape);
  RC_ASSERT(parsed->ToString() == shape.ToString());
}

}  // namespace
}  // namespace spmdcheck
