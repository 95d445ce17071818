// Properties of explain for MPMD programs: every wiring mistake put into a program Shardy's MPMD
// partitioner made is refuted (never holds), any cut of the text is an error or an explanation
// (never a crash), and tensor types read back what was written.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "explain/ifrt_program.h"
#include "explain/mpmd_explanation.h"
#include "ir/primitive_type.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::explain {
namespace {

const std::vector<std::string>& Fixtures() {
  static const auto* texts = [] {
    auto* out = new std::vector<std::string>;
    for (const char* name :
         {"gpipe_fwd_bwd.ifrt.mlir", "forward_3_microbatches.ifrt.mlir", "mesh2x2.ifrt.mlir"}) {
      out->push_back(test_support::ReadFileOrFail(
          test_support::SourcePath(absl::StrCat("corpus/explain/mpmd/", name))));
    }
    return out;
  }();
  return *texts;
}

std::vector<std::string> Lines(const std::string& text) { return absl::StrSplit(text, '\n'); }

Verdict VerdictOf(const std::string& text) {
  absl::StatusOr<IfrtProgram> program = ParseIfrtProgram(text, "p.mlir");
  RC_ASSERT(program.ok());
  absl::StatusOr<MpmdExplanation> e = ExplainMpmd(*program);
  RC_ASSERT(e.ok());
  return e->verdict();
}

// Indices of the lines of @main holding `needle`.
std::vector<size_t> LinesWith(const std::vector<std::string>& lines, const std::string& needle) {
  std::vector<size_t> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) out.push_back(i);
  }
  return out;
}

RC_GTEST_PROP(ExplainMpmdProperty, UnmutatedFixturesHold, ()) {
  const std::string& text = *rc::gen::elementOf(Fixtures());
  RC_ASSERT(VerdictOf(text) == Verdict::kHolds);
}

// A call moved to other devices (its operands stay where they are).
RC_GTEST_PROP(ExplainMpmdProperty, CallOnOtherDevicesIsRefuted, ()) {
  std::vector<std::string> lines = Lines(*rc::gen::elementOf(Fixtures()));
  const size_t i = *rc::gen::elementOf(LinesWith(lines, "= ifrt.Call @"));
  const int shift = *rc::gen::inRange(1, 64);
  std::string& line = lines[i];
  const size_t on = line.find(" on devices [");
  const size_t close = line.find(']', on);
  std::vector<std::string> ids;
  for (absl::string_view id : absl::StrSplit(line.substr(on + 13, close - on - 13), ", ")) {
    ids.push_back(absl::StrCat(std::stoi(std::string(id)) + 100 + shift));
  }
  line.replace(on + 13, close - on - 13, absl::StrJoin(ids, ", "));
  RC_ASSERT(VerdictOf(absl::StrJoin(lines, "\n")) == Verdict::kFails);
}

// A transfer whose results are used, left out.
RC_GTEST_PROP(ExplainMpmdProperty, DroppedTransferIsRefuted, ()) {
  std::vector<std::string> lines = Lines(*rc::gen::elementOf(Fixtures()));
  std::vector<size_t> transfers = LinesWith(lines, "= ifrt.CopyArrays(");
  for (size_t i : LinesWith(lines, "= ifrt.Reshard(")) transfers.push_back(i);
  const size_t i = *rc::gen::elementOf(transfers);
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i));
  RC_ASSERT(VerdictOf(absl::StrJoin(lines, "\n")) == Verdict::kFails);
}

// Two operands of a call with different types swapped.
RC_GTEST_PROP(ExplainMpmdProperty, SwappedOperandsOfDifferentTypesAreRefuted, ()) {
  const std::string& text = *rc::gen::elementOf(Fixtures());
  absl::StatusOr<IfrtProgram> program = ParseIfrtProgram(text, "p.mlir");
  RC_ASSERT(program.ok());
  std::vector<std::pair<size_t, std::pair<size_t, size_t>>> swaps;  // (op, (a, b)).
  for (size_t k = 0; k < program->ops.size(); ++k) {
    const IfrtOp& op = program->ops[k];
    if (op.kind != IfrtOpKind::kCall) continue;
    for (size_t a = 0; a < op.operands.size(); ++a) {
      for (size_t b = a + 1; b < op.operands.size(); ++b) {
        if (!(op.operand_types[a].shape == op.operand_types[b].shape) ||
            op.operand_types[a].devices != op.operand_types[b].devices ||
            !(op.operand_types[a].sharding == op.operand_types[b].sharding)) {
          swaps.push_back({k, {a, b}});
        }
      }
    }
  }
  RC_PRE(!swaps.empty());
  const auto [k, ab] = *rc::gen::elementOf(swaps);
  const IfrtOp& op = program->ops[k];
  std::vector<std::string> lines = Lines(text);
  std::string& line = lines[op.location.line - 1];
  const std::string before = absl::StrJoin(op.operands, ", ");
  std::vector<std::string> swapped = op.operands;
  std::swap(swapped[ab.first], swapped[ab.second]);
  const size_t at = line.find(absl::StrCat("(", before, ")"));
  RC_ASSERT(at != std::string::npos);
  line.replace(at + 1, before.size(), absl::StrJoin(swapped, ", "));
  RC_ASSERT(VerdictOf(absl::StrJoin(lines, "\n")) == Verdict::kFails);
}

// Any prefix of a program is an error or an explanation.
RC_GTEST_PROP(ExplainMpmdProperty, CutTextNeverCrashes, ()) {
  const std::string& text = *rc::gen::elementOf(Fixtures());
  const size_t cut = *rc::gen::inRange<size_t>(0, text.size());
  absl::StatusOr<IfrtProgram> program = ParseIfrtProgram(text.substr(0, cut), "cut.mlir");
  if (!program.ok()) {
    RC_ASSERT(program.status().message().find("cut.mlir:") != std::string::npos);
    return;
  }
  absl::StatusOr<MpmdExplanation> e = ExplainMpmd(*program);
  if (e.ok()) RC_ASSERT(!e->answer.empty());
}

// Bytes of a program overwritten at random places: an error or an explanation, never a crash.
RC_GTEST_PROP(ExplainMpmdProperty, ScrambledTextNeverCrashes, ()) {
  std::string text = *rc::gen::elementOf(Fixtures());
  const int edits = *rc::gen::inRange(1, 12);
  for (int k = 0; k < edits; ++k) {
    const size_t at = *rc::gen::inRange<size_t>(0, text.size());
    text[at] = *rc::gen::elementOf(std::string("[]<>(){},:#%@x0123456789 \n\"-="));
  }
  absl::StatusOr<IfrtProgram> program = ParseIfrtProgram(text, "s.mlir");
  if (!program.ok()) {
    RC_ASSERT(program.status().message().find("s.mlir:") != std::string::npos);
    return;
  }
  absl::StatusOr<MpmdExplanation> e = ExplainMpmd(*program);
  if (e.ok()) RC_ASSERT(!FormatMpmdText(*e).empty() && !FormatMpmdJson(*e).empty());
}

RC_GTEST_PROP(ExplainMpmdProperty, TensorTypesReadBack, ()) {
  const std::vector<int64_t> dims = *rc::gen::container<std::vector<int64_t>>(
      *rc::gen::inRange<size_t>(0, 5), rc::gen::inRange<int64_t>(0, 64));
  const auto [mlir, type] = *rc::gen::elementOf(
      std::vector<std::pair<std::string, PrimitiveType>>{{"f32", PrimitiveType::kF32},
                                                         {"bf16", PrimitiveType::kBF16},
                                                         {"i32", PrimitiveType::kS32},
                                                         {"ui8", PrimitiveType::kU8},
                                                         {"i1", PrimitiveType::kPred}});
  std::string text = "tensor<";
  for (int64_t d : dims) absl::StrAppend(&text, d, "x");
  absl::StrAppend(&text, mlir, ">");
  absl::StatusOr<Shape> shape = ParseMlirTensorType(text);
  RC_ASSERT(shape.ok());
  RC_ASSERT(shape->element_type() == type);
  RC_ASSERT(std::vector<int64_t>(shape->dimensions().begin(), shape->dimensions().end()) == dims);
}

}  // namespace
}  // namespace spmdcheck::explain
