// Helpers shared by the gather/scatter and sort/TopK oracle tests: a tiny scalar evaluator that
// stands in for the engine's CallFn (written independently of the op families), and parsing
// shortcuts.
#ifndef SPMDCHECK_TESTS_ORACLE_INDEXING_SORT_TEST_UTIL_H_
#define SPMDCHECK_TESTS_ORACLE_INDEXING_SORT_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/literal.h"
#include "ir/shape.h"

namespace spmdcheck::oracle::testing_util {

// ---- A tiny scalar evaluator standing in for the engine's CallFn ------------------------------

inline bool TotalOrderLess(double a, double b) {
  // -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN, by classification.
  auto cls = [](double v) { return std::isnan(v) ? (std::signbit(v) ? 0 : 2) : 1; };
  if (cls(a) != cls(b)) return cls(a) < cls(b);
  if (cls(a) != 1) return false;
  if (a != b) return a < b;
  return std::signbit(a) && !std::signbit(b);
}

inline absl::StatusOr<Literal> EvalScalar(const HloComputation& computation,
                                          absl::Span<const Literal* const> args) {
  absl::flat_hash_map<const HloInstruction*, Literal> values;
  for (const HloInstruction* instr : computation.PostOrder()) {
    auto in = [&](int i) -> const Literal& { return values.at(instr->operand(i)); };
    Literal out(instr->shape());
    const PrimitiveType type =
        instr->shape().IsArray() ? instr->shape().element_type() : PrimitiveType::kTuple;
    const bool is_float = IsFloatingType(type);
    switch (instr->opcode()) {
      case HloOpcode::kParameter:
        out = *args.at(instr->parameter_number());
        break;
      case HloOpcode::kConstant:
        out = *instr->literal();
        break;
      case HloOpcode::kTuple: {
        std::vector<Literal> elements;
        for (int i = 0; i < instr->operand_count(); ++i) elements.push_back(in(i));
        out = Literal::Tuple(std::move(elements));
        break;
      }
      case HloOpcode::kAdd:
      case HloOpcode::kSubtract:
      case HloOpcode::kMultiply:
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum:
        if (is_float) {
          const double a = in(0).GetDouble(0);
          const double b = in(1).GetDouble(0);
          double r = 0;
          switch (instr->opcode()) {
            case HloOpcode::kAdd:
              r = a + b;
              break;
            case HloOpcode::kSubtract:
              r = a - b;
              break;
            case HloOpcode::kMultiply:
              r = a * b;
              break;
            case HloOpcode::kMaximum:
              r = (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
              break;
            default:
              r = (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
              break;
          }
          out.SetDouble(0, r);
        } else {
          const int64_t a = in(0).GetInt64(0);
          const int64_t b = in(1).GetInt64(0);
          const uint64_t ua = static_cast<uint64_t>(a);
          const uint64_t ub = static_cast<uint64_t>(b);
          uint64_t r = 0;
          switch (instr->opcode()) {
            case HloOpcode::kAdd:
              r = ua + ub;
              break;
            case HloOpcode::kSubtract:
              r = ua - ub;
              break;
            case HloOpcode::kMultiply:
              r = ua * ub;
              break;
            case HloOpcode::kMaximum:
              r = static_cast<uint64_t>(std::max(a, b));
              break;
            default:
              r = static_cast<uint64_t>(std::min(a, b));
              break;
          }
          out.SetInt64(0, static_cast<int64_t>(r));
        }
        break;
      case HloOpcode::kNegate:
        if (is_float) {
          out.SetDouble(0, -in(0).GetDouble(0));
        } else {
          out.SetInt64(0, static_cast<int64_t>(0 - static_cast<uint64_t>(in(0).GetInt64(0))));
        }
        break;
      case HloOpcode::kAnd:
        out.SetInt64(0, in(0).GetInt64(0) & in(1).GetInt64(0));
        break;
      case HloOpcode::kOr:
        out.SetInt64(0, in(0).GetInt64(0) | in(1).GetInt64(0));
        break;
      case HloOpcode::kSelect:
        out = in(0).GetInt64(0) != 0 ? in(1) : in(2);
        break;
      case HloOpcode::kCompare: {
        const Literal& a = in(0);
        const Literal& b = in(1);
        const PrimitiveType t = a.shape().element_type();
        const bool total = instr->attrs().comparison_type.value_or("") == "TOTALORDER";
        int c;  // -1, 0, 1, or 2 for unordered.
        if (IsFloatingType(t)) {
          const double x = a.GetDouble(0);
          const double y = b.GetDouble(0);
          if (total) {
            c = TotalOrderLess(x, y) ? -1 : (TotalOrderLess(y, x) ? 1 : 0);
          } else {
            c = (std::isnan(x) || std::isnan(y)) ? 2 : (x < y ? -1 : (x > y ? 1 : 0));
          }
        } else if (IsUnsignedIntegralType(t) || t == PrimitiveType::kPred) {
          const uint64_t x = a.GetUint64(0);
          const uint64_t y = b.GetUint64(0);
          c = x < y ? -1 : (x > y ? 1 : 0);
        } else {
          const int64_t x = a.GetInt64(0);
          const int64_t y = b.GetInt64(0);
          c = x < y ? -1 : (x > y ? 1 : 0);
        }
        bool r = false;
        switch (*instr->attrs().direction) {
          case ComparisonDirection::kEq:
            r = c == 0;
            break;
          case ComparisonDirection::kNe:
            r = c != 0;
            break;
          case ComparisonDirection::kLt:
            r = c == -1;
            break;
          case ComparisonDirection::kLe:
            r = c == -1 || c == 0;
            break;
          case ComparisonDirection::kGt:
            r = c == 1;
            break;
          case ComparisonDirection::kGe:
            r = c == 1 || c == 0;
            break;
        }
        out.SetBits(0, r ? 1 : 0);
        break;
      }
      default:
        return absl::UnimplementedError(
            absl::StrCat("test evaluator: ", HloOpcodeString(instr->opcode())));
    }
    values[instr] = std::move(out);
  }
  return values.at(computation.root());
}

// ---- Fixture helpers --------------------------------------------------------------------------

struct Program {
  std::unique_ptr<HloModule> module;
  HloInstruction* instr = nullptr;
};

inline Program Parse(const std::string& text, const std::string& name) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  Program p;
  if (!parsed.ok()) return p;
  p.module = std::move(parsed->module);
  p.instr = p.module->entry()->FindInstruction(name);
  EXPECT_NE(p.instr, nullptr) << name;
  return p;
}

inline Literal Lit(const std::string& shape, const std::string& values) {
  absl::StatusOr<Shape> s = ParseShape(shape);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Literal> l = ParseLiteral(values, *s);
  EXPECT_TRUE(l.ok()) << shape << " " << values << ": " << l.status();
  return l.ok() ? *std::move(l) : Literal();
}

}  // namespace spmdcheck::oracle::testing_util

#endif  // SPMDCHECK_TESTS_ORACLE_INDEXING_SORT_TEST_UTIL_H_
