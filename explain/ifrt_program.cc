// The IFRT program reader (explain/ifrt_program.h).
#include "explain/ifrt_program.h"

#include <cctype>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status.h"
#include "ir/primitive_type.h"

namespace spmdcheck::explain {
namespace {

// One line of the text with its 1-based number.
struct Line {
  int number = 0;
  absl::string_view text;
  int Indent() const {
    int n = 0;
    while (n < static_cast<int>(text.size()) && text[n] == ' ') ++n;
    return n;
  }
  absl::string_view Stripped() const { return absl::StripAsciiWhitespace(text); }
};

class Reader {
 public:
  Reader(absl::string_view text, absl::string_view path) : path_(path) {
    int number = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      lines_.push_back(Line{++number, line});
    }
  }

  absl::StatusOr<IfrtProgram> Read();

 private:
  absl::Status Error(const Line& line, absl::string_view at, absl::string_view what) const {
    int column = 1;
    if (at.data() >= line.text.data() && at.data() <= line.text.data() + line.text.size()) {
      column = static_cast<int>(at.data() - line.text.data()) + 1;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(base::SourceLocation(path_, line.number, column), ": ", what));
  }
  IfrtLocation LocationOf(const Line& line, absl::string_view at) const {
    return IfrtLocation{line.number, static_cast<int>(at.data() - line.text.data()) + 1};
  }

  absl::Status ReadAlias(const Line& line);
  absl::StatusOr<IfrtShardingParam> ShardingParam(const Line& line, absl::string_view text) const;
  absl::StatusOr<IfrtArrayType> ArrayType(const Line& line, absl::string_view text) const;
  absl::StatusOr<std::vector<IfrtArrayType>> TypeList(const Line& line,
                                                      absl::string_view text) const;
  absl::Status ReadMainSignature(const Line& line, IfrtProgram& program) const;
  absl::Status ReadOp(const Line& line, IfrtProgram& program) const;
  absl::Status ReadCall(const Line& line, absl::string_view rest, IfrtOp& op) const;
  absl::Status ReadTypes(const Line& line, absl::string_view types, IfrtOp& op) const;
  // Reads the nested module starting at lines_[*index]; leaves *index on its closing line.
  absl::Status ReadFragment(size_t* index, IfrtProgram& program) const;
  absl::Status ReadFragmentSignature(const Line& line, IfrtFragment& fragment) const;
  // `sdy.mesh @name = <[...]> {...}`.
  absl::StatusOr<SdyMesh> SdyMeshLine(const Line& line, std::string* name) const;

  std::string path_;
  std::vector<Line> lines_;
  std::map<std::string, IfrtShardingParam> aliases_;
};

enum class Bracket { kNone, kOpen, kClose };

// Whether text[i] opens or closes a bracket ('<', '(', '[', '{' and their partners); the `>`
// of an arrow `->` is none.
Bracket BracketAt(absl::string_view text, size_t i) {
  switch (text[i]) {
    case '<':
    case '(':
    case '[':
    case '{':
      return Bracket::kOpen;
    case '>':
      return i > 0 && text[i - 1] == '-' ? Bracket::kNone : Bracket::kClose;
    case ')':
    case ']':
    case '}':
      return Bracket::kClose;
    default:
      return Bracket::kNone;
  }
}

// Walks `text` from `from`, skipping quoted strings, and returns the first position where
// `stop(i, depth)` is true (depth: the brackets open before i), or npos.
template <typename Stop>
size_t ScanUnquoted(absl::string_view text, size_t from, Stop stop) {
  int depth = 0;
  bool quoted = false;
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
      continue;
    }
    if (stop(i, depth)) return i;
    if (c == '"') {
      quoted = true;
    } else if (const Bracket b = BracketAt(text, i); b == Bracket::kOpen) {
      ++depth;
    } else if (b == Bracket::kClose) {
      --depth;
    }
  }
  return absl::string_view::npos;
}

// The index just past the bracket that closes the one at text[open]; npos when it does not
// close.
size_t MatchingClose(absl::string_view text, size_t open) {
  const size_t close = ScanUnquoted(text, open, [&](size_t i, int depth) {
    return depth == 1 && BracketAt(text, i) == Bracket::kClose;
  });
  return close == absl::string_view::npos ? close : close + 1;
}

// Splits at `separator` where no bracket or quote is open.
std::vector<absl::string_view> SplitTopLevel(absl::string_view text, char separator) {
  std::vector<absl::string_view> parts;
  size_t start = 0;
  ScanUnquoted(text, 0, [&](size_t i, int depth) {
    if (depth == 0 && text[i] == separator) {
      parts.push_back(absl::StripAsciiWhitespace(text.substr(start, i - start)));
      start = i + 1;
    }
    return false;
  });
  absl::string_view last = absl::StripAsciiWhitespace(text.substr(start));
  if (!last.empty() || !parts.empty()) parts.push_back(last);
  return parts;
}

// The position of `needle` in `text` where no bracket is open, or npos.
size_t FindTopLevel(absl::string_view text, absl::string_view needle, size_t from = 0) {
  return ScanUnquoted(text, from, [&](size_t i, int depth) {
    return depth == 0 && text.substr(i, needle.size()) == needle;
  });
}

// `[0, 1, 2]` or `[]`.
std::optional<std::vector<int64_t>> IntList(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&text, "[") || !absl::ConsumeSuffix(&text, "]")) return std::nullopt;
  std::vector<int64_t> values;
  if (absl::StripAsciiWhitespace(text).empty()) return values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v)) return std::nullopt;
    values.push_back(v);
  }
  return values;
}

// `2x1x4`.
std::optional<std::vector<int64_t>> TimesList(absl::string_view text) {
  std::vector<int64_t> values;
  for (absl::string_view part : absl::StrSplit(absl::StripAsciiWhitespace(text), 'x')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1) return std::nullopt;
    values.push_back(v);
  }
  return values;
}

// The `name` of `%name` or `%name#k` (a value reference), or empty when `text` is not one.
bool IsValueName(absl::string_view text) {
  if (text.size() < 2 || text[0] != '%') return false;
  for (char c : text.substr(1)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '#' && c != '.') {
      return false;
    }
  }
  return true;
}

// The quoted value of `key = "..."` inside an attribute dictionary, or empty.
std::string QuotedAttribute(absl::string_view attrs, absl::string_view key) {
  const size_t at = attrs.find(absl::StrCat(key, " = \""));
  if (at == absl::string_view::npos) return "";
  const size_t start = at + key.size() + 4;
  const size_t end = attrs.find('"', start);
  if (end == absl::string_view::npos) return "";
  return std::string(attrs.substr(start, end - start));
}

absl::Status Reader::ReadAlias(const Line& line) {
  absl::string_view text = line.Stripped();
  const size_t eq = text.find(" = ");
  if (eq == absl::string_view::npos) return Error(line, text, "expected `#alias = attribute`");
  absl::string_view name = text.substr(0, eq);
  absl::string_view value = text.substr(eq + 3);
  if (!absl::StartsWith(value, "#ifrt.sharding_param<")) return absl::OkStatus();  // Other aliases.
  absl::StatusOr<IfrtShardingParam> param = ShardingParam(line, value);
  if (!param.ok()) return param.status();
  aliases_[std::string(name)] = *std::move(param);
  return absl::OkStatus();
}

absl::StatusOr<IfrtShardingParam> Reader::ShardingParam(const Line& line,
                                                        absl::string_view text) const {
  absl::string_view inner = text;
  if (absl::StartsWith(inner, "#") && !absl::StartsWith(inner, "#ifrt.sharding_param")) {
    auto it = aliases_.find(std::string(inner));
    if (it == aliases_.end()) {
      return Error(line, text, absl::StrCat("unknown sharding alias ", inner));
    }
    return it->second;
  }
  if (!absl::ConsumePrefix(&inner, "#ifrt.sharding_param<") || !absl::ConsumeSuffix(&inner, ">")) {
    return Error(line, text, absl::StrCat("expected #ifrt.sharding_param<...>, got ", text));
  }
  // `DIMS to [PERM] on MESH`.
  const size_t to = inner.find(" to ");
  const size_t on = inner.find(" on ");
  if (to == absl::string_view::npos || on == absl::string_view::npos || on < to) {
    return Error(line, text, "a sharding_param reads `DIMS to [PERMUTATION] on MESH`");
  }
  std::optional<std::vector<int64_t>> dims = TimesList(inner.substr(0, to));
  std::optional<std::vector<int64_t>> perm = IntList(inner.substr(to + 4, on - to - 4));
  std::optional<std::vector<int64_t>> mesh = TimesList(inner.substr(on + 4));
  if (!dims || !perm || !mesh) {
    return Error(line, text, absl::StrCat("malformed sharding_param ", text));
  }
  IfrtShardingParam param{*std::move(dims), *std::move(perm), *std::move(mesh)};
  if (param.MeshDevices() % param.Tiles() != 0) {
    return Error(line, text,
                 absl::StrCat("sharding_param ", text, " splits into ", param.Tiles(),
                              " parts over ", param.MeshDevices(), " devices"));
  }
  return param;
}

absl::StatusOr<IfrtArrayType> Reader::ArrayType(const Line& line, absl::string_view text) const {
  absl::string_view inner = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&inner, "!ifrt.array<") || !absl::ConsumeSuffix(&inner, ">")) {
    return Error(line, text, absl::StrCat("expected an !ifrt.array<...> type, got ", text));
  }
  std::vector<absl::string_view> parts = SplitTopLevel(inner, ',');
  if (parts.size() < 3) {
    return Error(line, text, "an !ifrt.array type has a tensor type, a sharding and devices");
  }
  IfrtArrayType type;
  absl::StatusOr<Shape> shape = ParseMlirTensorType(parts[0]);
  if (!shape.ok()) return Error(line, parts[0], shape.status().message());
  type.shape = *std::move(shape);
  absl::StatusOr<IfrtShardingParam> sharding = ShardingParam(line, parts[1]);
  if (!sharding.ok()) return sharding.status();
  type.sharding = *std::move(sharding);
  std::optional<std::vector<int64_t>> devices = IntList(parts[2]);
  if (!devices || devices->empty()) {
    return Error(line, parts[2], absl::StrCat("expected a device list, got ", parts[2]));
  }
  type.devices = *std::move(devices);
  if (type.sharding.MeshDevices() != static_cast<int64_t>(type.devices.size())) {
    return Error(line, text,
                 absl::StrCat("the sharding's mesh has ", type.sharding.MeshDevices(),
                              " devices, the array lists ", type.devices.size()));
  }
  if (type.sharding.dims.size() != type.shape.dimensions().size()) {
    return Error(line, text, "the sharding_param's rank differs from the tensor's");
  }
  for (size_t d = 0; d < type.sharding.dims.size(); ++d) {
    if (type.shape.dimensions()[d] % type.sharding.dims[d] != 0) {
      return Error(line, text,
                   absl::StrCat("dim ", d, " of size ", type.shape.dimensions()[d],
                                " is not split evenly in ", type.sharding.dims[d]));
    }
  }
  return type;
}

absl::StatusOr<std::vector<IfrtArrayType>> Reader::TypeList(const Line& line,
                                                            absl::string_view text) const {
  text = absl::StripAsciiWhitespace(text);
  if (absl::StartsWith(text, "(")) {
    const size_t close = MatchingClose(text, 0);
    if (close != text.size()) return Error(line, text, "unbalanced type list");
    text = text.substr(1, text.size() - 2);
  }
  std::vector<IfrtArrayType> types;
  for (absl::string_view part : SplitTopLevel(text, ',')) {
    absl::StatusOr<IfrtArrayType> type = ArrayType(line, part);
    if (!type.ok()) return type.status();
    types.push_back(*std::move(type));
  }
  return types;
}

absl::Status Reader::ReadMainSignature(const Line& line, IfrtProgram& program) const {
  absl::string_view text = line.text;
  const size_t open = text.find("@main(") + 5;
  const size_t close = MatchingClose(text, open);
  if (close == absl::string_view::npos) {
    return Error(line, text.substr(open), "unbalanced parameter list of @main");
  }
  for (absl::string_view param : SplitTopLevel(text.substr(open + 1, close - open - 2), ',')) {
    const size_t colon = param.find(": ");
    if (colon == absl::string_view::npos || !IsValueName(param.substr(0, colon))) {
      return Error(line, param, absl::StrCat("expected `%name: type`, got ", param));
    }
    absl::string_view type_text = param.substr(colon + 2);
    // A parameter may carry an attribute dictionary after its type.
    if (const size_t attrs = FindTopLevel(type_text, " {"); attrs != absl::string_view::npos) {
      type_text = type_text.substr(0, attrs);
    }
    absl::StatusOr<IfrtArrayType> type = ArrayType(line, type_text);
    if (!type.ok()) return type.status();
    program.param_names.push_back(std::string(param.substr(0, colon)));
    program.param_types.push_back(*std::move(type));
  }
  return absl::OkStatus();
}

absl::Status Reader::ReadTypes(const Line& line, absl::string_view types, IfrtOp& op) const {
  const size_t arrow = FindTopLevel(types, " -> ");
  if (arrow == absl::string_view::npos) {
    return Error(line, types, "expected `(operand types) -> result types`");
  }
  absl::StatusOr<std::vector<IfrtArrayType>> in = TypeList(line, types.substr(0, arrow));
  if (!in.ok()) return in.status();
  absl::StatusOr<std::vector<IfrtArrayType>> out = TypeList(line, types.substr(arrow + 4));
  if (!out.ok()) return out.status();
  op.operand_types = *std::move(in);
  op.result_types = *std::move(out);
  if (op.operand_types.size() != op.operands.size()) {
    return Error(line, types,
                 absl::StrCat(op.operands.size(), " operands but ", op.operand_types.size(),
                              " operand types"));
  }
  if (op.result_types.size() != op.results.size()) {
    return Error(
        line, types,
        absl::StrCat(op.results.size(), " results but ", op.result_types.size(), " result types"));
  }
  return absl::OkStatus();
}

absl::Status Reader::ReadCall(const Line& line, absl::string_view rest, IfrtOp& op) const {
  // `@CALLEE::@main(OPERANDS) [after %c, ...] on devices [..] [<...>] [{attrs}]`.
  if (!absl::ConsumePrefix(&rest, "@")) return Error(line, rest, "expected @callee after Call");
  const size_t sep = rest.find("::@");
  const size_t paren = rest.find('(');
  if (sep == absl::string_view::npos || paren == absl::string_view::npos || paren < sep) {
    return Error(line, rest, "expected `@module::@function(operands)`");
  }
  op.callee = std::string(rest.substr(0, sep));
  const size_t close = MatchingClose(rest, paren);
  if (close == absl::string_view::npos) return Error(line, rest, "unbalanced operand list");
  for (absl::string_view v : SplitTopLevel(rest.substr(paren + 1, close - paren - 2), ',')) {
    if (!IsValueName(v)) return Error(line, v, absl::StrCat("expected a value, got ", v));
    op.operands.push_back(std::string(v));
  }
  absl::string_view tail = rest.substr(close);
  const size_t on = tail.find(" on devices ");
  if (on == absl::string_view::npos) return Error(line, tail, "a Call names its devices");
  if (const size_t after = tail.find(" after "); after != absl::string_view::npos && after < on) {
    for (absl::string_view v : SplitTopLevel(tail.substr(after + 7, on - after - 7), ',')) {
      if (!IsValueName(v)) return Error(line, v, absl::StrCat("expected a control value: ", v));
      op.after.push_back(std::string(v));
    }
  }
  absl::string_view devices = tail.substr(on + 12);
  const size_t devices_end = MatchingClose(devices, 0);
  std::optional<std::vector<int64_t>> ids = devices_end == absl::string_view::npos
                                                ? std::nullopt
                                                : IntList(devices.substr(0, devices_end));
  if (!ids || ids->empty()) return Error(line, devices, "expected `on devices [ids]`");
  op.devices = *std::move(ids);
  op.mesh_name = QuotedAttribute(devices.substr(devices_end), "ifrt.mesh_name");
  return absl::OkStatus();
}

absl::Status Reader::ReadOp(const Line& line, IfrtProgram& program) const {
  absl::string_view text = line.Stripped();
  if (absl::StartsWith(text, "return")) {
    absl::string_view values = absl::StripPrefix(text, "return");
    const size_t colon = FindTopLevel(values, " : ");
    if (colon != absl::string_view::npos) values = values.substr(0, colon);
    for (absl::string_view v : SplitTopLevel(values, ',')) {
      if (!IsValueName(v)) return Error(line, v, absl::StrCat("expected a value, got ", v));
      program.returned.push_back(std::string(v));
    }
    program.return_location = LocationOf(line, text);
    return absl::OkStatus();
  }
  const size_t eq = text.find(" = ");
  if (eq == absl::string_view::npos) {
    program.other_ops.push_back(
        absl::StrCat(base::SourceLocation(path_, line.number, line.Indent() + 1), ": ", text));
    return absl::OkStatus();
  }
  absl::string_view body = text.substr(eq + 3);
  IfrtOp op;
  op.location = LocationOf(line, body);
  if (absl::StartsWith(body, "ifrt.Call ")) {
    op.kind = IfrtOpKind::kCall;
  } else if (absl::StartsWith(body, "ifrt.CopyArrays(")) {
    op.kind = IfrtOpKind::kCopyArrays;
  } else if (absl::StartsWith(body, "ifrt.Reshard(")) {
    op.kind = IfrtOpKind::kReshard;
  } else {
    program.other_ops.push_back(
        absl::StrCat(base::SourceLocation(path_, line.number, op.location.column), ": ", body));
    return absl::OkStatus();
  }
  // Results: `%outputs_0:3, %control_output_1` or `%outputs, %control_output`.
  std::vector<absl::string_view> names = SplitTopLevel(text.substr(0, eq), ',');
  if (names.size() != 2) {
    return Error(line, text, "an IFRT op has its results and one control output");
  }
  absl::string_view outputs = names[0];
  int64_t count = 1;
  if (const size_t colon = outputs.find(':'); colon != absl::string_view::npos) {
    if (!absl::SimpleAtoi(outputs.substr(colon + 1), &count) || count < 1) {
      return Error(line, outputs, absl::StrCat("bad result count in ", outputs));
    }
    outputs = outputs.substr(0, colon);
    for (int64_t k = 0; k < count; ++k) op.results.push_back(absl::StrCat(outputs, "#", k));
  } else {
    op.results.push_back(std::string(outputs));
  }
  op.control_result = std::string(names[1]);
  const size_t types = FindTopLevel(body, " : ");
  if (types == absl::string_view::npos) return Error(line, body, "expected ` : types`");
  if (op.kind == IfrtOpKind::kCall) {
    absl::Status call = ReadCall(line, body.substr(10, types - 10), op);
    if (!call.ok()) return call;
  } else {
    const size_t paren = body.find('(');
    const size_t close = MatchingClose(body, paren);
    if (close == absl::string_view::npos || close > types) {
      return Error(line, body, "unbalanced operand list");
    }
    for (absl::string_view v : SplitTopLevel(body.substr(paren + 1, close - paren - 2), ',')) {
      if (!IsValueName(v)) return Error(line, v, absl::StrCat("expected a value, got ", v));
      op.operands.push_back(std::string(v));
    }
    absl::string_view tail = body.substr(close, types - close);
    if (const size_t after = tail.find("after "); after != absl::string_view::npos) {
      absl::string_view controls = tail.substr(after + 6);
      if (const size_t brace = controls.find(" {"); brace != absl::string_view::npos) {
        controls = controls.substr(0, brace);
      }
      for (absl::string_view v : SplitTopLevel(controls, ',')) {
        if (IsValueName(v)) op.after.push_back(std::string(v));
      }
    }
  }
  absl::Status typed = ReadTypes(line, body.substr(types + 3), op);
  if (!typed.ok()) return typed;
  program.ops.push_back(std::move(op));
  return absl::OkStatus();
}

// `%arg0: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{}, {"x"}]>, ...}` or a result
// `tensor<6x8xf32> {sdy.sharding = ...}`.
absl::StatusOr<IfrtFragmentValue> FragmentValue(absl::string_view text) {
  if (IsValueName(text.substr(0, text.find(':')))) text = text.substr(text.find(':') + 1);
  text = absl::StripAsciiWhitespace(text);
  const size_t attrs = FindTopLevel(text, " {");
  absl::StatusOr<Shape> shape =
      ParseMlirTensorType(attrs == absl::string_view::npos ? text : text.substr(0, attrs));
  if (!shape.ok()) return shape.status();
  IfrtFragmentValue value{*std::move(shape), std::nullopt};
  if (attrs == absl::string_view::npos) return value;
  const size_t at = text.find("#sdy.sharding<", attrs);
  if (at == absl::string_view::npos) return value;
  const size_t end = MatchingClose(text, at + 13);
  if (end == absl::string_view::npos) return absl::InvalidArgumentError("unbalanced sdy.sharding");
  absl::StatusOr<SdySharding> sharding = ParseSdySharding(text.substr(at, end - at));
  if (!sharding.ok()) return sharding.status();
  value.sharding = *std::move(sharding);
  return value;
}

absl::Status Reader::ReadFragmentSignature(const Line& line, IfrtFragment& fragment) const {
  absl::string_view text = line.text;
  const size_t open = text.find('(');
  const size_t close = MatchingClose(text, open);
  if (close == absl::string_view::npos) return Error(line, text, "unbalanced parameter list");
  for (absl::string_view arg : SplitTopLevel(text.substr(open + 1, close - open - 2), ',')) {
    absl::StatusOr<IfrtFragmentValue> value = FragmentValue(arg);
    if (!value.ok()) return Error(line, arg, value.status().message());
    fragment.args.push_back(*std::move(value));
  }
  absl::string_view rest = text.substr(close);
  if (!absl::ConsumePrefix(&rest, " -> ")) return absl::OkStatus();  // No results.
  if (const size_t attrs = FindTopLevel(rest, " attributes "); attrs != absl::string_view::npos) {
    rest = rest.substr(0, attrs);
  } else if (const size_t body = FindTopLevel(rest, " {"); body != absl::string_view::npos) {
    // ` {` also opens a result's attributes inside parentheses; at top level it is the body.
    rest = rest.substr(0, body);
  }
  rest = absl::StripAsciiWhitespace(rest);
  if (absl::StartsWith(rest, "(") && MatchingClose(rest, 0) == rest.size()) {
    rest = rest.substr(1, rest.size() - 2);
  }
  for (absl::string_view result : SplitTopLevel(rest, ',')) {
    absl::StatusOr<IfrtFragmentValue> value = FragmentValue(result);
    if (!value.ok()) return Error(line, result, value.status().message());
    fragment.results.push_back(*std::move(value));
  }
  return absl::OkStatus();
}

absl::StatusOr<SdyMesh> Reader::SdyMeshLine(const Line& line, std::string* name) const {
  absl::string_view stripped = line.Stripped();
  const size_t lt = stripped.find('<');
  const size_t end = lt == absl::string_view::npos ? lt : MatchingClose(stripped, lt);
  if (end == absl::string_view::npos) return Error(line, stripped, "malformed sdy.mesh");
  absl::StatusOr<SdyMesh> mesh = ParseSdyMesh(stripped.substr(lt, end - lt));
  if (!mesh.ok()) return Error(line, stripped, mesh.status().message());
  absl::string_view mesh_name = absl::StripPrefix(stripped, "sdy.mesh @");
  *name = std::string(mesh_name.substr(0, mesh_name.find(' ')));
  return mesh;
}

absl::Status Reader::ReadFragment(size_t* index, IfrtProgram& program) const {
  const Line& head = lines_[*index];
  absl::string_view text = head.Stripped();
  absl::string_view name = absl::StripPrefix(text, "module @");
  name = name.substr(0, name.find_first_of(" {<"));
  IfrtFragment fragment;
  fragment.name = std::string(name);
  fragment.location = LocationOf(head, text);
  const int indent = head.Indent();
  bool in_main = false;
  int main_indent = 0;
  for (++*index; *index < lines_.size(); ++*index) {
    const Line& line = lines_[*index];
    absl::string_view stripped = line.Stripped();
    if (line.Indent() == indent && stripped == "}") {
      if (program.fragments.contains(fragment.name)) {
        return Error(head, text, absl::StrCat("module @", fragment.name, " defined twice"));
      }
      program.fragments[fragment.name] = std::move(fragment);
      return absl::OkStatus();
    }
    if (absl::StartsWith(stripped, "sdy.mesh @")) {
      absl::StatusOr<SdyMesh> mesh = SdyMeshLine(line, &fragment.sdy_mesh_name);
      if (!mesh.ok()) return mesh.status();
      fragment.sdy_mesh = *std::move(mesh);
    } else if (absl::StartsWith(stripped, "func.func") && absl::StrContains(stripped, "@main(")) {
      absl::Status signature = ReadFragmentSignature(line, fragment);
      if (!signature.ok()) return signature;
      in_main = true;
      main_indent = line.Indent();
    } else if (in_main && line.Indent() == main_indent && stripped == "}") {
      in_main = false;
    } else if (in_main && !stripped.empty() && !absl::StartsWith(stripped, "return")) {
      ++fragment.instructions;
    }
  }
  return Error(head, text, absl::StrCat("module @", fragment.name, " is not closed"));
}

absl::StatusOr<IfrtProgram> Reader::Read() {
  IfrtProgram program;
  program.path = path_;
  bool saw_main = false;
  for (size_t i = 0; i < lines_.size(); ++i) {
    const Line& line = lines_[i];
    absl::string_view stripped = line.Stripped();
    if (stripped.empty() || absl::StartsWith(stripped, "//")) continue;
    if (line.Indent() == 0 && absl::StartsWith(stripped, "#")) {
      absl::Status alias = ReadAlias(line);
      if (!alias.ok()) return alias;
    } else if (line.Indent() == 0 && absl::StartsWith(stripped, "module")) {
      absl::string_view name = absl::StripPrefix(stripped, "module");
      name = absl::StripAsciiWhitespace(name);
      if (absl::ConsumePrefix(&name, "@")) {
        program.name = std::string(name.substr(0, name.find_first_of(" {")));
      }
    } else if (absl::StartsWith(stripped, "func.func") && absl::StrContains(stripped, "@main(") &&
               !saw_main) {
      absl::Status signature = ReadMainSignature(line, program);
      if (!signature.ok()) return signature;
      saw_main = true;
      const int indent = line.Indent();
      for (++i; i < lines_.size() && !(lines_[i].Indent() == indent && lines_[i].Stripped() == "}");
           ++i) {
        if (lines_[i].Stripped().empty()) continue;
        absl::Status op = ReadOp(lines_[i], program);
        if (!op.ok()) return op;
      }
      if (i == lines_.size()) return Error(line, stripped, "@main is not closed");
    } else if (absl::StartsWith(stripped, "module @") && line.Indent() > 0) {
      absl::Status fragment = ReadFragment(&i, program);
      if (!fragment.ok()) return fragment;
    } else if (absl::StartsWith(stripped, "sdy.mesh @")) {
      std::string name;
      absl::StatusOr<SdyMesh> mesh = SdyMeshLine(line, &name);
      if (!mesh.ok()) return mesh.status();
      program.sdy_meshes.emplace_back(std::move(name), *std::move(mesh));
    }
  }
  if (!saw_main) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ":1:1: no func.func @main taking !ifrt.array values"));
  }
  return program;
}

}  // namespace

int64_t IfrtShardingParam::Tiles() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t IfrtShardingParam::MeshDevices() const {
  int64_t n = 1;
  for (int64_t d : mesh_shape) n *= d;
  return n;
}

std::string IfrtShardingParam::ToString() const {
  return absl::StrCat(absl::StrJoin(dims, "x"), " to [", absl::StrJoin(permutation, ", "), "] on ",
                      absl::StrJoin(mesh_shape, "x"));
}

int64_t IfrtArrayType::ShardBytes() const { return shape.ByteSize() / sharding.Tiles(); }

std::string IfrtArrayType::ToString() const {
  return absl::StrCat(shape.ToString(), " split ", absl::StrJoin(sharding.dims, "x"), " on [",
                      absl::StrJoin(devices, ","), "]");
}

bool LooksLikeIfrtProgram(absl::string_view text) {
  return absl::StrContains(text, "!ifrt.array<") &&
         (absl::StrContains(text, "ifrt.function") || absl::StrContains(text, "ifrt.Call"));
}

std::optional<PrimitiveType> MlirElementType(absl::string_view name) {
  if (name == "i1") return PrimitiveType::kPred;
  if (absl::ConsumePrefix(&name, "ui")) return PrimitiveTypeFromName(absl::StrCat("u", name));
  if (absl::ConsumePrefix(&name, "i")) return PrimitiveTypeFromName(absl::StrCat("s", name));
  return PrimitiveTypeFromName(name);
}

absl::StatusOr<Shape> ParseMlirTensorType(absl::string_view text) {
  absl::string_view inner = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&inner, "tensor<") || !absl::ConsumeSuffix(&inner, ">")) {
    return absl::InvalidArgumentError(absl::StrCat("expected tensor<...>, got ", text));
  }
  std::vector<absl::string_view> parts = absl::StrSplit(inner, 'x');
  std::optional<PrimitiveType> type = MlirElementType(parts.back());
  if (!type) {
    return absl::InvalidArgumentError(absl::StrCat("unknown element type ", parts.back()));
  }
  std::vector<int64_t> dims;
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  int64_t elements = 1;
  for (size_t k = 0; k + 1 < parts.size(); ++k) {
    int64_t d = 0;
    if (!absl::SimpleAtoi(parts[k], &d) || d < 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad dim '", parts[k], "' in ", text));
    }
    if (d > 0 && elements > kMaxElements / d) {
      return absl::InvalidArgumentError(absl::StrCat(text, " has more than 2^40 elements"));
    }
    elements *= d;
    dims.push_back(d);
  }
  return Shape::Array(*type, dims);
}

absl::StatusOr<IfrtProgram> ParseIfrtProgram(absl::string_view text, absl::string_view path) {
  return Reader(text, path).Read();
}

}  // namespace spmdcheck::explain
