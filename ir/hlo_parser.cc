#include "ir/hlo_parser.h"

#include <string.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/lexer.h"
#include "ir/mesh.h"
#include "ir/named_sharding.h"
#include "ir/shape_inference.h"
#include "ir/source_text.h"

namespace spmdcheck {
namespace {

// Operands are resolved by name as soon as they are read (HLO text defines an instruction
// before its users almost always); what cannot be resolved yet, and the rare extras below, are
// kept in flat per-parse lists and handled once the whole module is read, in the order the
// original one-pass-per-computation design used (so errors and warnings are unchanged).

// An operand that named nothing defined yet (a forward reference, or an undefined name).
struct UnresolvedOperand {
  HloInstruction* user = nullptr;
  absl::string_view name;
  size_t offset = 0;
  uint32_t operand_index = 0;
  // Position of `user` in its computation's completion order (nested anonymous instructions
  // complete before the statement holding them); assigned when the user is complete.
  uint32_t ordinal = UINT32_MAX;
  int32_t written = -1;  // Index into written_shapes_, or -1.
};

// An operand written with its shape (`add(f32[] x, f32[] y)`).
struct WrittenOperandShape {
  HloInstruction* user = nullptr;
  uint32_t operand_index = 0;
  size_t offset = 0;
  absl::string_view name;
  SharedValue<Shape> shape;
};

// An instruction written without its shape (inferred once operands are resolved).
struct MissingShape {
  HloInstruction* instruction = nullptr;
  size_t offset = 0;
};

// A computation reference waiting for all computations to be parsed. Its names are
// call_names_[names_begin, names_end).
struct PendingCall {
  HloInstruction* instruction = nullptr;  // Null once the statement was dropped (fragments).
  size_t called_index = 0;                // Index into instruction->mutable_called().
  size_t names_begin = 0;
  size_t names_end = 0;
};

struct CallName {
  absl::string_view name;  // Into the text, or into an inline body's computation name.
  size_t offset = 0;
};

// A computation while its statements are read.
struct PendingComputation {
  HloComputation* computation = nullptr;
  HloInstruction* root = nullptr;  // Written ROOT.
  HloInstruction* last = nullptr;  // Last completed instruction.
  uint32_t completed = 0;          // Completed instructions (the next ordinal).
  size_t offset = 0;
  // Set when an operand is not an earlier instruction (a forward reference, a nested
  // instruction, a self-reference): only then can the text order fail to be a post order.
  bool out_of_order = false;
};

// A parsed computation waiting for resolution.
struct ParsedComputation {
  HloComputation* computation = nullptr;
  size_t offset = 0;
  bool out_of_order = false;
};

// 1-based line and column of byte offsets, for a parser that mostly moves forward: counts the
// newlines between the previous query and this one.
class LineTracker {
 public:
  explicit LineTracker(absl::string_view text) : text_(text) {}

  SourceLocation At(size_t offset) {
    const size_t target = std::min(offset, text_.size());
    if (target >= pos_) {
      const char* p = text_.data() + pos_;
      const char* const end = text_.data() + target;
      while (p < end) {
        const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
        if (nl == nullptr) break;
        p = static_cast<const char*>(nl) + 1;
        ++line_;
        line_start_ = static_cast<size_t>(p - text_.data());
      }
    } else {
      line_ -= std::count(text_.data() + target, text_.data() + pos_, '\n');
      const void* nl = target == 0 ? nullptr : memrchr(text_.data(), '\n', target);
      line_start_ =
          nl == nullptr ? 0 : static_cast<size_t>(static_cast<const char*>(nl) - text_.data()) + 1;
    }
    pos_ = target;
    return {line_, static_cast<int64_t>(offset - line_start_) + 1};
  }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  size_t line_start_ = 0;
};

using SharedShape = SharedValue<Shape>;
using SharedSharding = SharedValue<std::optional<HloSharding>>;
using SharedLiteral = SharedValue<std::optional<Literal>>;

struct LiteralKey {
  absl::string_view shape;
  absl::string_view values;
  bool operator==(const LiteralKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const LiteralKey& key) {
    return H::combine(std::move(h), key.shape, key.values);
  }
};

class Parser {
 public:
  Parser(absl::string_view text, const ParseOptions& options)
      : options_(options), source_(options.path, text), lex_(text), lines_(text) {}

  absl::StatusOr<ParsedModule> ParseModule();
  // `status` with a statement's recorded error formatted in, when it is StatementFailed().
  absl::Status Formatted(absl::Status status) const {
    if (status.ok() || status != StatementFailed()) return status;
    return absl::InvalidArgumentError(
        source_.FormatError(statement_error_.offset, statement_error_.message));
  }

  // Standalone entry points; each checks that nothing follows.
  absl::StatusOr<Shape> ParseWholeShape();
  absl::StatusOr<HloSharding> ParseWholeSharding();
  absl::StatusOr<ReplicaGroups> ParseWholeReplicaGroups();
  absl::StatusOr<Literal> ParseWholeLiteral(const Shape& shape);

 private:
  // ---- errors ----
  absl::Status ErrorAt(size_t offset, absl::string_view message) {
    // A fragment's malformed statement becomes a one-line warning: its error is kept unformatted
    // until the statement is given up (StatementWarning), and what travels up is a shared status.
    if (statement_errors_are_warnings_) {
      statement_error_.offset = offset;
      statement_error_.message.assign(message.data(), message.size());
      return StatementFailed();
    }
    return absl::InvalidArgumentError(source_.FormatError(offset, message));
  }
  // What ErrorAt returns while a fragment statement is parsed (copying it allocates nothing).
  static const absl::Status& StatementFailed() {
    static const absl::Status* const failed = new absl::Status(
        absl::StatusCode::kInvalidArgument, "malformed statement (see the parser's record)");
    return *failed;
  }
  // The warning for fragment statement [start, end) given up for `status`.
  std::string StatementWarning(size_t start, size_t end, const absl::Status& status) const;
  absl::Status Error(absl::string_view message) {
    lex_.SkipSpace();
    return ErrorAt(lex_.pos(), message);
  }
  absl::Status Expect(char c, absl::string_view context) {
    if (lex_.TryConsume(c)) return absl::OkStatus();
    return ExpectFailed(c, context);
  }
  // Expect() whose context message is only built on failure.
  template <typename MakeContext>
  absl::Status ExpectLazy(char c, MakeContext make_context) {
    if (lex_.TryConsume(c)) return absl::OkStatus();
    return ExpectFailed(c, make_context());
  }
  absl::Status ExpectFailed(char c, absl::string_view context) {
    if (lex_.AtEnd()) {
      return Error(absl::StrCat("expected '", std::string(1, c), "' ", context,
                                " but the input ends here (is the text cut off?)"));
    }
    return Error(absl::StrCat("expected '", std::string(1, c), "' ", context, " but found '",
                              std::string(1, lex_.Peek()), "'"));
  }
  // `PATH:LINE:COL: warning: ` then `message`, all in one StrCat.
  template <typename... Message>
  std::string Warning(size_t offset, const Message&... message) const {
    return absl::StrCat(source_.path(), ":", source_.LineOf(offset), ":", source_.ColumnOf(offset),
                        ": warning: ", message...);
  }
  SourceLocation LocationOf(size_t offset) { return lines_.At(offset); }

  // ---- pieces ----
  absl::Status ParseShape(Shape* shape, int depth = 0, bool allow_layout = true);
  // A top-level shape (with layout), shared with earlier identical shape texts.
  // With `only_if_shape`, a shape is only read when one starts here (else *shape is null).
  absl::Status ParseSharedShape(SharedShape* shape, absl::string_view* key, bool only_if_shape);
  // The extent of the shape text at `start` when it can be looked up by its text, else npos.
  size_t ScanShapeExtent(size_t start) const;
  bool AtShapeStart();
  absl::Status ParseLayout(Shape* shape);
  absl::Status ParseInt(int64_t* value, absl::string_view what);
  // ParseInt() whose description is only built on failure.
  template <typename MakeWhat>
  absl::Status ParseIntLazy(int64_t* value, MakeWhat make_what) {
    lex_.SkipSpace();
    const size_t start = lex_.pos();
    bool overflow = false;
    std::optional<int64_t> v = lex_.ConsumeInt(&overflow);
    if (v.has_value() && !overflow) {
      *value = *v;
      return absl::OkStatus();
    }
    lex_.set_pos(start);
    return ParseInt(value, make_what());
  }
  absl::Status ParseIntList(char open, char close, std::vector<int64_t>* values,
                            absl::string_view what);
  absl::Status ParseBool(bool* value);
  absl::Status ParseSharding(HloSharding* sharding);
  // An instruction's sharding, shared with earlier identical sharding texts.
  absl::Status ParseSharedSharding(SharedSharding* sharding);
  absl::Status ParseSingleSharding(HloSharding* sharding);
  absl::Status ParseTileAssignment(TileAssignment* tiles, bool allow_list,
                                   bool* single_device_list);
  absl::Status ParseReplicaGroups(ReplicaGroups* groups);
  // XLA's mesh-axes form: `mesh['a'=2,'b'=4] {'b'}` (with `, device_ids=(...)` after the axes
  // when the device order is no plain iota, and sub-axes `'a':(1)2`).
  absl::Status ParseMeshAxesReplicaGroups(ReplicaGroups* groups);
  // `mesh['a'=2,'b'=4]` with an optional `, device_ids=(...)` (the keyword `mesh` consumed by
  // the caller when `keyword_read`).
  absl::Status ParseMesh(Mesh* mesh, bool keyword_read);
  // `'a'` or `'a':(pre)size` over `mesh`.
  absl::Status ParseAxisRef(const Mesh& mesh, MeshAxisRef* ref);
  // `{'a', 'b':(1)2}` over `mesh`.
  absl::Status ParseAxisRefList(const Mesh& mesh, std::vector<MeshAxisRef>* refs);
  // The body of a named-mesh sharding after its `{` (XLA's V3 form), through the closing `}`.
  absl::Status ParseNamedSharding(size_t start, HloSharding* sharding);
  // A mesh axis name: quoted ('a' or "a") or a bare identifier.
  absl::Status ParseAxisName(std::string* name);
  absl::Status ParseSourceTargetPairs(SourceTargetPairs* pairs);
  absl::Status ParseLiteral(const Shape& shape, Literal* literal, int depth = 0);
  absl::Status ParseArrayElements(Literal* literal, int64_t dim, int64_t* next, int depth);
  absl::Status ParseScalarInto(Literal* literal, int64_t index);
  absl::Status ParseSlice(std::vector<SliceDim>* slice);
  absl::Status ParsePadding(std::vector<PadDim>* padding);
  absl::Status ParseWindow(std::vector<WindowDim>* window);
  absl::Status ParseDimLabels(ConvolutionDimensionNumbers* dnums);
  absl::Status ParseRaw(std::string* text);

  // ---- module structure ----
  absl::Status ParseHeader();
  absl::Status ParseComputation();
  absl::Status ParseInstructionList(PendingComputation* pending, bool until_brace);
  absl::Status ParseInstruction(PendingComputation* pending);
  absl::Status ParseConstant(HloInstruction* instruction, const SharedShape& shape,
                             absl::string_view shape_key);
  absl::Status ParseOperands(PendingComputation* pending, HloInstruction* user, int depth);
  // Marks `instruction` complete: gives its unresolved operands (recorded from
  // `unresolved_begin` on) their ordinal.
  void CompleteInstruction(PendingComputation* pending, HloInstruction* instruction,
                           size_t unresolved_begin);
  absl::Status ParseAttribute(HloInstruction* instruction);
  // The structured (HloAttributes) attributes; `*handled` is false for other names.
  absl::Status ParseStructuredAttribute(HloInstruction* instruction, absl::string_view name,
                                        size_t start, bool* handled);
  // Shares the instruction's attributes with an earlier instruction that read the same text.
  void InternAttributes(HloInstruction* instruction);
  absl::Status ParseCalledComputations(HloInstruction* instruction, absl::string_view role,
                                       bool is_list);
  absl::Status ResolveComputation(const ParsedComputation& parsed, std::vector<size_t>* unresolved);
  absl::Status ResolveCalls();
  absl::Status InferMissingShapes(const ParsedComputation& parsed,
                                  const std::vector<size_t>& missing,
                                  const std::vector<size_t>& written);
  absl::Status AddFragmentParameters(HloComputation* computation,
                                     const std::vector<size_t>& unresolved);
  std::optional<Shape> InferUndefinedOperandShape(const HloInstruction& user, int64_t operand_count,
                                                  int64_t index, std::string* note);
  void SkipToNextStatement();
  void AbandonComputation(HloComputation* computation);
  std::string FreshName(absl::string_view base);

  const ParseOptions& options_;
  SourceText source_;
  Lexer lex_;
  LineTracker lines_;
  std::unique_ptr<HloModule> module_;
  std::vector<ParsedComputation> computations_;
  std::vector<PendingCall> pending_calls_;
  std::vector<CallName> call_names_;
  std::vector<UnresolvedOperand> unresolved_;
  std::vector<WrittenOperandShape> written_shapes_;
  std::vector<MissingShape> missing_shapes_;
  std::vector<HloInstruction*> operand_stack_;  // Operands of the instructions being read.
  std::vector<std::string> warnings_;
  // While a fragment statement is parsed: its errors become warnings (ErrorAt leaves out the
  // excerpt).
  bool statement_errors_are_warnings_ = false;
  // The last error ErrorAt kept while statement_errors_are_warnings_ (its buffer is reused).
  struct StatementError {
    size_t offset = 0;
    std::string message;
  };
  StatementError statement_error_;
  HloComputation* entry_ = nullptr;
  int64_t fresh_counter_ = 0;

  // Values shared between instructions whose text is identical. Keys point into the text.
  absl::flat_hash_map<absl::string_view, SharedShape> shape_cache_;
  absl::flat_hash_map<absl::string_view, SharedSharding> sharding_cache_;
  absl::flat_hash_map<LiteralKey, SharedLiteral> literal_cache_;
  // Structured attributes by opcode and the text of each structured attribute, in order.
  absl::flat_hash_map<std::string, SharedValue<HloAttributes>> attrs_cache_;
  std::string attrs_key_;  // The key of the instruction being read.
  // The structured attributes of the instruction being read (fresh when !scratch_in_use_).
  std::optional<HloAttributes> scratch_attrs_;
  bool scratch_in_use_ = false;
};

// ===================================================================== shapes

bool Parser::AtShapeStart() {
  const char c = lex_.Peek();
  if (c == '(') return true;
  absl::string_view name = lex_.PeekName();
  if (name.empty() || lex_.PeekRaw() == '%') return false;
  const size_t after = static_cast<size_t>(name.data() - lex_.text().data()) + name.size();
  if (after >= lex_.text().size() || lex_.text()[after] != '[') return false;
  return PrimitiveTypeFromName(name).has_value();
}

namespace {

bool IsSpaceChar(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

size_t Parser::ScanShapeExtent(size_t start) const {
  // Only the plain forms are looked up: `type[dims]`, `type[dims]{layout}` and one-line
  // tuples. Anything else (comments, line breaks, odd spacing) is parsed afresh.
  const std::string_view text(lex_.text().data(), lex_.text().size());  // Inline operator[].
  const size_t size = text.size();
  size_t p = start;
  if (p >= size) return absl::string_view::npos;
  if (text[p] == '(') {
    // A tuple ends at its matching ')' and ParseShape reads nothing after it.
    int depth = 0;
    for (; p < size; ++p) {
      const char c = text[p];
      if (c == '(') {
        ++depth;
      } else if (c == ')') {
        if (--depth == 0) return p + 1;
      } else if (c == '\n' || c == '"' || c == '\'') {
        return absl::string_view::npos;
      }
    }
    return absl::string_view::npos;
  }
  const size_t type_start = p;
  while (p < size && ((text[p] >= 'a' && text[p] <= 'z') || (text[p] >= '0' && text[p] <= '9'))) {
    ++p;
  }
  if (p == type_start || p >= size || text[p] != '[') return absl::string_view::npos;
  for (++p; p < size && text[p] != ']'; ++p) {
    const char c = text[p];
    if (!((c >= '0' && c <= '9') || c == ',' || c == '<' || c == '=' || c == '?')) {
      return absl::string_view::npos;
    }
  }
  if (p >= size) return absl::string_view::npos;
  ++p;  // ']'
  if (p < size && text[p] == '{') {
    // An adjacent layout: the key holds it and ParseShape reads nothing after it (a `{...}`
    // that is not a layout makes ParseShape stop at ']', so the key is never stored).
    for (++p; p < size && text[p] != '}'; ++p) {
      if (text[p] == '{' || text[p] == '\n' || text[p] == '/') return absl::string_view::npos;
    }
    return p < size ? p + 1 : absl::string_view::npos;
  }
  // No layout: ParseShape then probes for one after spaces; the key is only usable when that
  // probe certainly fails.
  size_t q = p;
  while (q < size && IsSpaceChar(text[q])) ++q;
  if (q >= size) return p;
  if (text[q] == '/') return absl::string_view::npos;
  if (text[q] != '{') return p;
  ++q;
  while (q < size && IsSpaceChar(text[q])) ++q;
  if (q >= size) return p;
  const char c = text[q];
  if (c == '/' || c == ':' || c == '}' || (c >= '0' && c <= '9')) return absl::string_view::npos;
  return p;
}

absl::Status Parser::ParseSharedShape(SharedShape* shape, absl::string_view* key,
                                      bool only_if_shape) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  if (only_if_shape) {
    // Shapes start with '(' or an element type (lower case): operand names usually do not.
    const char c = lex_.PeekRaw();
    if (c != '(' && !(c >= 'a' && c <= 'z')) {
      shape->reset();
      *key = absl::string_view();
      return absl::OkStatus();
    }
  }
  const size_t end = ScanShapeExtent(start);
  absl::string_view text;
  if (end != absl::string_view::npos) {
    text = lex_.text().substr(start, end - start);
    auto it = shape_cache_.find(text);
    if (it != shape_cache_.end()) {
      lex_.set_pos(end);
      *shape = it->second;
      *key = text;
      return absl::OkStatus();
    }
  }
  *key = absl::string_view();
  if (only_if_shape && !AtShapeStart()) {
    shape->reset();
    return absl::OkStatus();
  }
  Shape parsed;
  absl::Status status = ParseShape(&parsed);
  if (!status.ok()) return status;
  auto shared = SharedShape::Make(std::move(parsed));
  if (end != absl::string_view::npos && lex_.pos() == end) {
    shape_cache_.emplace(text, shared);
    *key = text;
  }
  *shape = std::move(shared);
  return absl::OkStatus();
}

absl::Status Parser::ParseShape(Shape* shape, int depth, bool allow_layout) {
  if (depth > kMaxNestingDepth) {
    return Error(absl::StrCat("shape nested deeper than ", kMaxNestingDepth, " levels"));
  }
  const char c = lex_.Peek();
  if (c == '(') {
    lex_.TryConsume('(');
    std::vector<Shape> elements;
    if (!lex_.TryConsume(')')) {
      do {
        Shape& element = elements.emplace_back();
        absl::Status status = ParseShape(&element, depth + 1);
        if (!status.ok()) return status;
      } while (lex_.TryConsume(','));
      absl::Status status = Expect(')', "to close the tuple shape");
      if (!status.ok()) return status;
    }
    *shape = Shape::Tuple(std::move(elements));
    return absl::OkStatus();
  }
  const size_t start = lex_.pos();
  absl::string_view type_name = lex_.ConsumeIdentifier();
  std::optional<PrimitiveType> type = PrimitiveTypeFromName(type_name);
  if (!type.has_value()) {
    return ErrorAt(start, type_name.empty()
                              ? "expected a shape"
                              : absl::StrCat("unknown element type '", type_name, "'"));
  }
  if (lex_.PeekRaw() != '[') return Error("expected '[' after the element type");
  lex_.TryConsume('[');
  absl::InlinedVector<int64_t, 8> dims;
  absl::InlinedVector<DimensionKind, 8> kinds;
  if (!lex_.TryConsume(']')) {
    do {
      DimensionKind kind = DimensionKind::kStatic;
      int64_t size = 0;
      if (lex_.TryConsume('?')) {
        kind = DimensionKind::kUnbounded;
      } else {
        if (lex_.TryConsume("<=")) kind = DimensionKind::kBoundedDynamic;
        const size_t dim_start = lex_.pos();
        absl::Status status = ParseInt(&size, "a dimension size");
        if (!status.ok()) return status;
        if (size < 0) return ErrorAt(dim_start, "dimension sizes must be non-negative");
      }
      dims.push_back(size);
      kinds.push_back(kind);
    } while (lex_.TryConsume(','));
    absl::Status status = Expect(']', "to close the dimensions");
    if (!status.ok()) return status;
  }
  if (*type == PrimitiveType::kToken) {
    // `token[]` only: a token has no dimensions and no layout (a layout would not print).
    if (!dims.empty()) return ErrorAt(start, "a token shape has no dimensions: token[]");
    *shape = Shape::Token();
    return absl::OkStatus();
  }
  *shape = Shape::Array(*type, dims);
  for (size_t i = 0; i < kinds.size(); ++i) shape->set_dimension_kind(i, kinds[i]);
  // Large shapes are fine as types (partitioner tests use them); only materialising one
  // (a constant, a run) is limited to kMaxArrayElements. A count past int64 is an error.
  if (!CheckedProduct(dims).has_value()) {
    return ErrorAt(start,
                   absl::StrCat("shape ", shape->ToString(false), " has more than 2^63 elements"));
  }
  if (!allow_layout) return absl::OkStatus();
  // A layout follows only as `{` + int or `:` (otherwise the brace opens a body).
  const size_t save = lex_.pos();
  if (lex_.TryConsume('{')) {
    const char next = lex_.Peek();
    if (std::isdigit(static_cast<unsigned char>(next)) || next == ':' || next == '}') {
      if (next == '}') {
        // `{}` is a layout only for scalars; otherwise restore (e.g. `f32[] {}` body).
        if (shape->rank() != 0) {
          lex_.set_pos(save);
          return absl::OkStatus();
        }
      }
      lex_.set_pos(save);
      return ParseLayout(shape);
    }
    lex_.set_pos(save);
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseLayout(Shape* shape) {
  lex_.TryConsume('{');
  Layout layout;
  if (lex_.Peek() != ':' && lex_.Peek() != '}') {
    do {
      int64_t v = 0;
      absl::Status status = ParseInt(&v, "a layout dimension");
      if (!status.ok()) return status;
      layout.minor_to_major.push_back(v);
    } while (lex_.TryConsume(','));
  }
  if (lex_.TryConsume(':')) {
    lex_.SkipSpace();
    const size_t start = lex_.pos();
    int depth = 0;
    size_t p = start;
    std::string_view text(lex_.text().data(), lex_.text().size());  // Inline operator[].
    // Layout extensions (`T(8,128)(2,1)`, `S(1)`, `E(4)`, `*(s8)`, ...) are kept verbatim, so only
    // their own characters are accepted: anything else is a malformed layout, not text to carry.
    while (p < text.size()) {
      const char c = text[p];
      if (c == '(') ++depth;
      if (c == ')' && --depth < 0) return ErrorAt(p, "unbalanced ')' in the layout");
      if (c == '}' && depth == 0) break;
      const bool allowed = std::isalnum(static_cast<unsigned char>(c)) || c == '(' || c == ')' ||
                           c == ',' || c == '*' || c == ':' || c == '#' || c == '_' || c == ' ' ||
                           c == '.' || c == '-';
      if (!allowed) {
        return ErrorAt(
            p, absl::StrCat("unexpected character '", std::string(1, c), "' in the layout"));
      }
      ++p;
    }
    if (p >= text.size()) return ErrorAt(start, "unterminated layout");
    if (p == start) return ErrorAt(start, "empty layout extension after ':'");
    layout.extension = std::string(text.substr(start, p - start));
    lex_.set_pos(p);
  }
  absl::Status status = Expect('}', "to close the layout");
  if (!status.ok()) return status;
  if (shape->IsArray() && (!layout.minor_to_major.empty() || shape->rank() > 0) &&
      static_cast<int64_t>(layout.minor_to_major.size()) != shape->rank()) {
    return Error(absl::StrCat("layout ", layout.ToString(), " has ", layout.minor_to_major.size(),
                              " entries but the shape has rank ", shape->rank()));
  }
  shape->set_layout(std::move(layout));
  return absl::OkStatus();
}

absl::Status Parser::ParseInt(int64_t* value, absl::string_view what) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  bool overflow = false;
  std::optional<int64_t> v = lex_.ConsumeInt(&overflow);
  if (!v.has_value()) {
    if (lex_.AtEnd()) return ErrorAt(start, absl::StrCat("expected ", what, " but the input ends"));
    return ErrorAt(start, absl::StrCat("expected ", what));
  }
  if (overflow) return ErrorAt(start, absl::StrCat(what, " is out of the 64-bit range"));
  *value = *v;
  return absl::OkStatus();
}

absl::Status Parser::ParseIntList(char open, char close, std::vector<int64_t>* values,
                                  absl::string_view what) {
  absl::Status status = ExpectLazy(open, [&] { return absl::StrCat("to open ", what); });
  if (!status.ok()) return status;
  values->clear();
  if (lex_.TryConsume(close)) return absl::OkStatus();
  absl::InlinedVector<int64_t, 16> list;
  do {
    int64_t v = 0;
    status = ParseIntLazy(&v, [&] { return absl::StrCat("an integer in ", what); });
    if (!status.ok()) return status;
    list.push_back(v);
  } while (lex_.TryConsume(','));
  values->assign(list.begin(), list.end());
  return ExpectLazy(close, [&] { return absl::StrCat("to close ", what); });
}

absl::Status Parser::ParseBool(bool* value) {
  if (lex_.TryConsumeKeyword("true")) {
    *value = true;
  } else if (lex_.TryConsumeKeyword("false")) {
    *value = false;
  } else {
    return Error("expected true or false");
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseRaw(std::string* text) {
  absl::StatusOr<absl::string_view> raw = lex_.ScanBalancedValue(kMaxNestingDepth);
  if (!raw.ok()) return ErrorAt(lex_.pos(), raw.status().message());
  if (raw->empty()) return Error("expected an attribute value");
  *text = std::string(*raw);
  return absl::OkStatus();
}

// ================================================================= shardings

absl::Status Parser::ParseTileAssignment(TileAssignment* tiles, bool allow_list,
                                         bool* single_device_list) {
  const size_t start = lex_.pos();
  std::vector<int64_t> dims;
  absl::Status status = ParseIntList('[', ']', &dims, "the tile assignment dims");
  if (!status.ok()) return status;
  if (dims.empty()) return ErrorAt(start, "tile assignment dims are empty");
  if (lex_.TryConsume("<=")) {
    std::vector<int64_t> reshape;
    status = ParseIntList('[', ']', &reshape, "the iota reshape dims");
    if (!status.ok()) return status;
    std::vector<int64_t> perm;
    if (reshape.size() > 1 || lex_.Peek() == 'T') {
      if (!lex_.TryConsume('T')) return Error("expected 'T(' after a multi-dimensional iota");
      if (reshape.size() <= 1) return Error("T(...) must not follow a one-dimensional iota");
      status = ParseIntList('(', ')', &perm, "the iota transpose");
      if (!status.ok()) return status;
    } else {
      perm = {0};
    }
    absl::StatusOr<TileAssignment> result = TileAssignment::Iota(dims, reshape, perm);
    if (!result.ok()) return ErrorAt(start, result.status().message());
    *tiles = *std::move(result);
    return absl::OkStatus();
  }
  if (!allow_list) return Error("expected '<=' (replica groups take the iota form here)");
  std::vector<int64_t> devices;
  do {
    int64_t d = 0;
    status = ParseInt(&d, "a device id");
    if (!status.ok()) return status;
    devices.push_back(d);
  } while (lex_.TryConsume(','));
  if (single_device_list != nullptr) *single_device_list = devices.size() == 1;
  absl::StatusOr<TileAssignment> result = TileAssignment::Explicit(dims, std::move(devices));
  if (!result.ok()) return ErrorAt(start, result.status().message());
  *tiles = *std::move(result);
  return absl::OkStatus();
}

absl::Status Parser::ParseSingleSharding(HloSharding* sharding) {
  const size_t start = lex_.pos();
  absl::Status status = Expect('{', "to open a sharding");
  if (!status.ok()) return status;
  {
    // XLA's named-mesh form (V3): `{mesh[...], ...}` or `{single_device[device_id=N]}`.
    const size_t after_brace = lex_.pos();
    absl::string_view first = lex_.ConsumeIdentifier();
    const bool named = (first == "mesh" || first == "single_device" || first == "maximal_mesh") &&
                       lex_.PeekRaw() != '=';
    lex_.set_pos(after_brace);
    if (named) {
      return ParseNamedSharding(start, sharding);
    }
  }
  bool replicated = false, maximal = false, manual = false, unknown = false, unreduced = false;
  bool last_tile_dim_replicate = false;
  std::optional<int64_t> device;
  std::optional<TileAssignment> tiles;
  bool single_device_list = false;
  std::vector<SubgroupType> subgroup_types;
  HloSharding::ShardGroupKind group_kind = HloSharding::ShardGroupKind::kNone;
  int64_t group_id = -1;
  std::string metadata;
  while (!lex_.TryConsume('}')) {
    if (lex_.AtEnd()) return Error("sharding is cut off: expected '}'");
    const size_t item = lex_.pos();
    absl::string_view word = lex_.ConsumeIdentifier();
    if (word.empty()) {
      return ErrorAt(item, absl::StrCat("unexpected '", std::string(1, lex_.Peek()),
                                        "' in a sharding (items are separated by spaces)"));
    }
    const bool is_attr = lex_.PeekRaw() == '=';
    if (is_attr) lex_.TryConsume('=');
    if (!is_attr && word == "replicated") {
      replicated = true;
    } else if (!is_attr && word == "maximal") {
      maximal = true;
    } else if (!is_attr && word == "manual") {
      manual = true;
    } else if (!is_attr && word == "unknown") {
      unknown = true;
    } else if (!is_attr && word == "unreduced") {
      unreduced = true;
    } else if (!is_attr && word == "last_tile_dim_replicate") {
      last_tile_dim_replicate = true;
    } else if (!is_attr && (word == "shard_as" || word == "shard_like")) {
      group_kind = word == "shard_as" ? HloSharding::ShardGroupKind::kAs
                                      : HloSharding::ShardGroupKind::kLike;
      status = ParseInt(&group_id, "a shard group id");
      if (!status.ok()) return status;
    } else if (is_attr && word == "device") {
      int64_t d = 0;
      status = ParseInt(&d, "a device id");
      if (!status.ok()) return status;
      device = d;
    } else if (is_attr && word == "devices") {
      TileAssignment t;
      status = ParseTileAssignment(&t, /*allow_list=*/true, &single_device_list);
      if (!status.ok()) return status;
      tiles = std::move(t);
    } else if (is_attr && word == "last_tile_dims") {
      status = Expect('{', "to open last_tile_dims");
      if (!status.ok()) return status;
      do {
        const size_t type_start = lex_.pos();
        absl::string_view type = lex_.ConsumeIdentifier();
        if (type == "manual") {
          subgroup_types.push_back(SubgroupType::kManual);
        } else if (type == "replicated") {
          subgroup_types.push_back(SubgroupType::kReplicated);
        } else if (type == "unreduced") {
          subgroup_types.push_back(SubgroupType::kUnreduced);
        } else if (type == "maximal") {
          subgroup_types.push_back(SubgroupType::kMaximal);
        } else {
          return ErrorAt(type_start, absl::StrCat("unknown subgroup type '", type, "'"));
        }
      } while (lex_.TryConsume(','));
      status = Expect('}', "to close last_tile_dims");
      if (!status.ok()) return status;
    } else if (is_attr && word == "metadata") {
      status = ParseRaw(&metadata);
      if (!status.ok()) return status;
    } else {
      return ErrorAt(item, absl::StrCat("unknown sharding item '", word, is_attr ? "=" : "",
                                        "' (expected replicated, maximal, manual, device=, "
                                        "devices=, last_tile_dim_replicate, last_tile_dims=, "
                                        "shard_as, shard_like or metadata=)"));
    }
  }
  HloSharding result;
  if (replicated) {
    if (tiles.has_value()) return ErrorAt(start, "a replicated sharding must not list devices");
    result = HloSharding::Replicate();
  } else if (maximal) {
    if (!device.has_value()) {
      return ErrorAt(start, "a maximal sharding needs exactly one device (device=N)");
    }
    result = HloSharding::AssignDevice(*device);
  } else if (manual) {
    if (tiles.has_value()) return ErrorAt(start, "a manual sharding must not list devices");
    result = HloSharding::Manual();
  } else if (unknown) {
    result = HloSharding::Unknown();
  } else if (unreduced) {
    result = HloSharding::Unreduced();
  } else {
    if (!tiles.has_value()) {
      return ErrorAt(start,
                     "a sharding needs replicated, maximal, manual or devices=[...] to say "
                     "what it is");
    }
    if (single_device_list) {
      return ErrorAt(start, "non-maximal shardings must have more than one device assigned");
    }
    if (last_tile_dim_replicate && !subgroup_types.empty()) {
      return ErrorAt(start, "last_tile_dim_replicate and last_tile_dims= cannot be combined");
    }
    if (last_tile_dim_replicate) subgroup_types = {SubgroupType::kReplicated};
    if (tiles->num_elements() == 1) {
      // Dec-2023 text semantics (FromProto): any one-device assignment is maximal, whatever
      // subgroups it declares.
      subgroup_types.clear();
    }
    if (static_cast<int64_t>(subgroup_types.size()) > tiles->num_dimensions()) {
      return ErrorAt(
          start, absl::StrCat("the sharding has ", subgroup_types.size(),
                              " subgroup dims but only ", tiles->num_dimensions(), " tile dims"));
    }
    result = HloSharding::Subgroup(*tiles, subgroup_types);
  }
  if (group_kind != HloSharding::ShardGroupKind::kNone) result.SetShardGroup(group_kind, group_id);
  result.set_metadata(std::move(metadata));
  *sharding = std::move(result);
  return absl::OkStatus();
}

absl::Status Parser::ParseSharding(HloSharding* sharding) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  if (lex_.Peek() != '{') return Error("expected '{' to open a sharding");
  // `{}` (empty tuple) or `{{...}, ...}` (tuple) or `{...}` (single).
  lex_.TryConsume('{');
  if (lex_.TryConsume('}')) {
    *sharding = HloSharding::Tuple({});
    return absl::OkStatus();
  }
  if (lex_.Peek() != '{') {
    lex_.set_pos(start);
    return ParseSingleSharding(sharding);
  }
  std::vector<HloSharding> elements;
  do {
    HloSharding element;
    absl::Status status = ParseSingleSharding(&element);
    if (!status.ok()) return status;
    elements.push_back(std::move(element));
  } while (lex_.TryConsume(','));
  absl::Status status = Expect('}', "to close the tuple sharding");
  if (!status.ok()) return status;
  *sharding = HloSharding::Tuple(std::move(elements));
  return absl::OkStatus();
}

absl::Status Parser::ParseSharedSharding(SharedSharding* sharding) {
  // The extent of a one-line `{...}` without comments: ParseSharding reads exactly up to the
  // matching '}', so equal texts give equal shardings.
  lex_.SkipSpace();
  const absl::string_view text = lex_.text();
  const size_t start = lex_.pos();
  size_t end = absl::string_view::npos;
  if (start < text.size() && text[start] == '{') {
    int depth = 0;
    for (size_t p = start; p < text.size(); ++p) {
      const char c = text[p];
      if (c == '{') {
        ++depth;
      } else if (c == '}') {
        if (--depth == 0) {
          end = p + 1;
          break;
        }
      } else if (c == '"' || c == '\'') {
        size_t q = p + 1;
        while (q < text.size() && text[q] != c && text[q] != '\n') q += text[q] == '\\' ? 2 : 1;
        if (q >= text.size() || text[q] != c) break;
        p = q;
      } else if (c == '\n' || c == '/') {
        break;
      }
    }
  }
  absl::string_view key;
  if (end != absl::string_view::npos) {
    key = text.substr(start, end - start);
    auto it = sharding_cache_.find(key);
    if (it != sharding_cache_.end()) {
      lex_.set_pos(end);
      *sharding = it->second;
      return absl::OkStatus();
    }
  }
  HloSharding parsed;
  absl::Status status = ParseSharding(&parsed);
  if (!status.ok()) return status;
  auto shared = SharedSharding::Make(std::move(parsed));
  if (end != absl::string_view::npos && lex_.pos() == end) sharding_cache_.emplace(key, shared);
  *sharding = std::move(shared);
  return absl::OkStatus();
}

absl::Status Parser::ParseAxisName(std::string* name) {
  const char c = lex_.Peek();
  if (c == '\'' || c == '"') {
    absl::StatusOr<std::string> value = lex_.ConsumeString();
    if (!value.ok()) return Error(value.status().message());
    *name = *std::move(value);
    return absl::OkStatus();
  }
  absl::string_view identifier = lex_.ConsumeIdentifier();
  if (identifier.empty()) return Error("expected a mesh axis name");
  *name = std::string(identifier);
  return absl::OkStatus();
}

absl::Status Parser::ParseMesh(Mesh* mesh, bool keyword_read) {
  const size_t start = lex_.pos();
  if (!keyword_read && !lex_.TryConsumeKeyword("mesh")) return Error("expected 'mesh['");
  absl::Status status = Expect('[', "to open the mesh axes");
  if (!status.ok()) return status;
  std::vector<MeshAxis> axes;
  if (!lex_.TryConsume(']')) {
    do {
      MeshAxis axis;
      status = ParseAxisName(&axis.name);
      if (!status.ok()) return status;
      status = Expect('=', "after a mesh axis name");
      if (!status.ok()) return status;
      status = ParseInt(&axis.size, "a mesh axis size");
      if (!status.ok()) return status;
      axes.push_back(std::move(axis));
    } while (lex_.TryConsume(','));
    status = Expect(']', "to close the mesh axes");
    if (!status.ok()) return status;
  }
  std::optional<TileAssignment> devices;
  const size_t before_devices = lex_.pos();
  if (lex_.TryConsume(',') && lex_.TryConsumeKeyword("device_ids")) {
    status = Expect('=', "after device_ids");
    if (!status.ok()) return status;
    status = Expect('(', "to open the mesh's device ids");
    if (!status.ok()) return status;
    std::vector<int64_t> sizes;
    for (const MeshAxis& axis : axes) sizes.push_back(axis.size);
    if (lex_.Peek() == '[') {
      // XLA prints an iota device order as `[4,4]T(1,0)` (reshape dims, then a transpose);
      // `[dims]<=[reshape]T(perm)` and `[dims]d0,d1,...` are read too.
      std::vector<int64_t> first;
      status = ParseIntList('[', ']', &first, "the mesh's device ids");
      if (!status.ok()) return status;
      std::vector<int64_t> reshape = first;
      std::vector<int64_t> perm;
      absl::StatusOr<TileAssignment> tiles;
      if (lex_.TryConsume("<=")) {
        status = ParseIntList('[', ']', &reshape, "the iota reshape dims");
        if (!status.ok()) return status;
      }
      if (std::isdigit(static_cast<unsigned char>(lex_.Peek()))) {
        std::vector<int64_t> ids;
        do {
          int64_t id = 0;
          status = ParseInt(&id, "a device id");
          if (!status.ok()) return status;
          ids.push_back(id);
        } while (lex_.TryConsume(','));
        tiles = TileAssignment::Explicit(sizes, std::move(ids));
      } else {
        if (lex_.TryConsume('T')) {
          status = ParseIntList('(', ')', &perm, "the device ids' transpose");
          if (!status.ok()) return status;
        } else {
          for (size_t k = 0; k < reshape.size(); ++k) perm.push_back(static_cast<int64_t>(k));
        }
        tiles = TileAssignment::Iota(sizes, reshape, perm);
      }
      if (!tiles.ok()) return ErrorAt(before_devices, tiles.status().message());
      devices = *std::move(tiles);
    } else {
      std::vector<int64_t> ids;
      do {
        int64_t id = 0;
        status = ParseInt(&id, "a device id");
        if (!status.ok()) return status;
        ids.push_back(id);
      } while (lex_.TryConsume(','));
      absl::StatusOr<TileAssignment> tiles = TileAssignment::Explicit(sizes, std::move(ids));
      if (!tiles.ok()) return ErrorAt(before_devices, tiles.status().message());
      devices = *std::move(tiles);
    }
    status = Expect(')', "to close the mesh's device ids");
    if (!status.ok()) return status;
    if (!devices->DevicesDistinct() || devices->DeviceBound() != devices->num_elements()) {
      return ErrorAt(before_devices,
                     "the mesh's device ids must be a permutation of 0..N-1 (each device once)");
    }
  } else {
    lex_.set_pos(before_devices);
  }
  absl::StatusOr<Mesh> made = Mesh::Create(axes, devices);
  if (!made.ok()) return ErrorAt(start, made.status().message());
  *mesh = *std::move(made);
  return absl::OkStatus();
}

absl::Status Parser::ParseAxisRef(const Mesh& mesh, MeshAxisRef* ref) {
  const size_t at = lex_.pos();
  std::string name;
  absl::Status status = ParseAxisName(&name);
  if (!status.ok()) return status;
  std::optional<int64_t> index = mesh.AxisIndex(name);
  if (!index.has_value()) return ErrorAt(at, absl::StrCat("no mesh axis '", name, "'"));
  *ref = MeshAxisRef{*index, 1, 0};
  if (lex_.TryConsume(':')) {
    status = Expect('(', "to open a sub-axis pre-size");
    if (!status.ok()) return status;
    status = ParseInt(&ref->pre_size, "a sub-axis pre-size");
    if (!status.ok()) return status;
    status = Expect(')', "to close a sub-axis pre-size");
    if (!status.ok()) return status;
    status = ParseInt(&ref->size, "a sub-axis size");
    if (!status.ok()) return status;
    const int64_t axis_size = mesh.axes()[*index].size;
    if (ref->pre_size < 1 || ref->size < 1 || ref->pre_size > axis_size || ref->size > axis_size ||
        axis_size % (ref->pre_size * ref->size) != 0) {
      return ErrorAt(at, absl::StrCat("sub-axis '", name, "':(", ref->pre_size, ")", ref->size,
                                      " does not divide the axis of size ", axis_size));
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseAxisRefList(const Mesh& mesh, std::vector<MeshAxisRef>* refs) {
  absl::Status status = Expect('{', "to open a list of mesh axes");
  if (!status.ok()) return status;
  if (lex_.TryConsume('}')) return absl::OkStatus();
  do {
    MeshAxisRef ref;
    status = ParseAxisRef(mesh, &ref);
    if (!status.ok()) return status;
    refs->push_back(ref);
  } while (lex_.TryConsume(','));
  return Expect('}', "to close a list of mesh axes");
}

absl::Status Parser::ParseNamedSharding(size_t start, HloSharding* sharding) {
  std::string metadata;
  auto finish = [&](absl::StatusOr<NamedSharding> named) -> absl::Status {
    if (!named.ok()) return ErrorAt(start, named.status().message());
    if (lex_.TryConsume(',')) {
      const size_t at = lex_.pos();
      if (!lex_.TryConsumeKeyword("metadata") || !lex_.TryConsume('=')) {
        return ErrorAt(at, "expected metadata= or '}' after a named sharding's special form");
      }
      absl::Status status = ParseRaw(&metadata);
      if (!status.ok()) return status;
    }
    absl::Status status = Expect('}', "to close the named sharding");
    if (!status.ok()) return status;
    absl::StatusOr<HloSharding> result = HloSharding::FromNamed(*named);
    if (!result.ok()) return ErrorAt(start, result.status().message());
    result->set_metadata(std::move(metadata));
    *sharding = *std::move(result);
    return absl::OkStatus();
  };
  if (lex_.TryConsumeKeyword("single_device") || lex_.TryConsumeKeyword("maximal_mesh")) {
    absl::Status status = Expect('[', "to open the single device");
    if (!status.ok()) return status;
    if (!lex_.TryConsumeKeyword("device_id")) return Error("expected device_id=");
    status = Expect('=', "after device_id");
    if (!status.ok()) return status;
    int64_t device = 0;
    status = ParseInt(&device, "a device id");
    if (!status.ok()) return status;
    if (device < 0) return Error("a device id is >= 0");
    status = Expect(']', "to close the single device");
    if (!status.ok()) return status;
    return finish(NamedSharding::SingleDevice(device));
  }
  Mesh mesh;
  absl::Status status = ParseMesh(&mesh, /*keyword_read=*/false);
  if (!status.ok()) return status;
  status = Expect(',', "after the mesh of a named sharding");
  if (!status.ok()) return status;
  // The short forms: replicated, manual, unreduced[=op][{axes}].
  if (lex_.TryConsumeKeyword("replicated")) return finish(NamedSharding::Replicated(mesh));
  if (lex_.TryConsumeKeyword("manual")) return finish(NamedSharding::Manual(mesh));
  if (lex_.TryConsumeKeyword("unreduced")) {
    std::string op;
    if (lex_.TryConsume('=')) op = std::string(lex_.ConsumeIdentifier());
    std::vector<MeshAxisRef> axes;
    if (lex_.Peek() == '{') {
      status = ParseAxisRefList(mesh, &axes);
      if (!status.ok()) return status;
    }
    return finish(NamedSharding::Unreduced(mesh, std::move(axes), std::move(op)));
  }
  // The general form: [dims] then replicated= / unreduced= / manual= / metadata= in any order.
  status = Expect('[', "to open a named sharding's dims (or replicated, manual, unreduced)");
  if (!status.ok()) return status;
  std::vector<NamedSharding::Dim> dims;
  if (!lex_.TryConsume(']')) {
    do {
      status = Expect('{', "to open a dim's mesh axes");
      if (!status.ok()) return status;
      NamedSharding::Dim dim;
      if (!lex_.TryConsume('}')) {
        do {
          if (dim.open) return Error("'?' must be the last item of a dim");
          if (lex_.TryConsume('?')) {
            dim.open = true;
            continue;
          }
          MeshAxisRef ref;
          status = ParseAxisRef(mesh, &ref);
          if (!status.ok()) return status;
          dim.axes.push_back(ref);
        } while (lex_.TryConsume(','));
        status = Expect('}', "to close a dim's mesh axes");
        if (!status.ok()) return status;
      }
      dims.push_back(std::move(dim));
    } while (lex_.TryConsume(','));
    status = Expect(']', "to close a named sharding's dims");
    if (!status.ok()) return status;
  }
  std::vector<MeshAxisRef> replicated, unreduced, manual;
  std::string op;
  while (lex_.TryConsume(',')) {
    const size_t item = lex_.pos();
    absl::string_view word = lex_.ConsumeIdentifier();
    if (!lex_.TryConsume('=')) {
      return ErrorAt(item, absl::StrCat("expected replicated=, unreduced=, manual= or metadata= "
                                        "in a named sharding, found '",
                                        word, "'"));
    }
    if (word == "replicated") {
      status = ParseAxisRefList(mesh, &replicated);
    } else if (word == "unreduced") {
      if (lex_.Peek() != '{') op = std::string(lex_.ConsumeIdentifier());
      status = ParseAxisRefList(mesh, &unreduced);
    } else if (word == "manual") {
      status = ParseAxisRefList(mesh, &manual);
    } else if (word == "metadata") {
      status = ParseRaw(&metadata);
    } else {
      return ErrorAt(item, absl::StrCat("unknown named-sharding item '", word,
                                        "=' (expected replicated=, unreduced=, manual= or "
                                        "metadata=)"));
    }
    if (!status.ok()) return status;
  }
  return finish(NamedSharding::Create(std::move(mesh), std::move(dims), std::move(replicated),
                                      std::move(unreduced), std::move(manual), std::move(op)));
}

absl::Status Parser::ParseMeshAxesReplicaGroups(ReplicaGroups* groups) {
  const size_t start = lex_.pos();
  if (lex_.TryConsumeKeyword("maximal_mesh") || lex_.TryConsumeKeyword("single_device")) {
    return ErrorAt(start, "replica groups over a single-device mesh are not supported");
  }
  Mesh mesh;
  absl::Status status = ParseMesh(&mesh, /*keyword_read=*/false);
  if (!status.ok()) return status;
  std::vector<MeshAxisRef> refs;
  status = Expect('{', "to open the replica groups' mesh axes");
  if (!status.ok()) return status;
  if (!lex_.TryConsume('}')) {
    do {
      MeshAxisRef ref;
      status = ParseAxisRef(mesh, &ref);
      if (!status.ok()) return status;
      refs.push_back(ref);
    } while (lex_.TryConsume(','));
    status = Expect('}', "to close the replica groups' mesh axes");
    if (!status.ok()) return status;
  }
  absl::StatusOr<ReplicaGroups> result = mesh.ReplicaGroupsOver(refs);
  if (!result.ok()) return ErrorAt(start, result.status().message());
  *groups = *std::move(result);
  return absl::OkStatus();
}

absl::Status Parser::ParseReplicaGroups(ReplicaGroups* groups) {
  const size_t start = lex_.pos();
  if (lex_.Peek() == 'm') return ParseMeshAxesReplicaGroups(groups);
  if (lex_.Peek() == '[') {
    TileAssignment tiles;
    absl::Status status = ParseTileAssignment(&tiles, /*allow_list=*/false, nullptr);
    if (!status.ok()) return status;
    if (tiles.num_dimensions() != 2) {
      return ErrorAt(start, "iota replica groups need exactly two dims: [groups,group_size]");
    }
    *groups = ReplicaGroups(*tiles.iota());
    return absl::OkStatus();
  }
  absl::Status status = Expect('{', "to open the replica groups");
  if (!status.ok()) return status;
  std::vector<std::vector<int64_t>> list;
  if (!lex_.TryConsume('}')) {
    do {
      std::vector<int64_t> group;
      status = ParseIntList('{', '}', &group, "a replica group");
      if (!status.ok()) return status;
      list.push_back(std::move(group));
    } while (lex_.TryConsume(','));
    status = Expect('}', "to close the replica groups");
    if (!status.ok()) return status;
  }
  *groups = ReplicaGroups(std::move(list));
  return absl::OkStatus();
}

absl::Status Parser::ParseSourceTargetPairs(SourceTargetPairs* pairs) {
  absl::Status status = Expect('{', "to open source_target_pairs");
  if (!status.ok()) return status;
  pairs->clear();
  if (lex_.TryConsume('}')) return absl::OkStatus();
  do {
    const size_t start = lex_.pos();
    std::vector<int64_t> pair;
    status = ParseIntList('{', '}', &pair, "a source-target pair");
    if (!status.ok()) return status;
    if (pair.size() != 2) {
      return ErrorAt(start,
                     absl::StrCat("a source-target pair needs exactly 2 ids, not ", pair.size()));
    }
    pairs->push_back({pair[0], pair[1]});
  } while (lex_.TryConsume(','));
  return Expect('}', "to close source_target_pairs");
}

// ================================================================== literals

absl::Status Parser::ParseScalarInto(Literal* literal, int64_t index) {
  const PrimitiveType type = literal->shape().element_type();
  const size_t start = lex_.pos();
  if (IsComplexType(type)) {
    absl::Status status = Expect('(', "to open a complex value");
    if (!status.ok()) return status;
    absl::string_view re = lex_.ConsumeNumberToken();
    status = Expect(',', "between the parts of a complex value");
    if (!status.ok()) return status;
    absl::string_view im = lex_.ConsumeNumberToken();
    status = Expect(')', "to close a complex value");
    if (!status.ok()) return status;
    double r = 0, i = 0;
    if (!absl::SimpleAtod(re, &r) || !absl::SimpleAtod(im, &i)) {
      return ErrorAt(start, "malformed complex value");
    }
    literal->SetComplex(index, {r, i});
    return absl::OkStatus();
  }
  lex_.SkipSpace();
  absl::string_view token = lex_.ConsumeNumberToken();
  if (token.empty()) {
    if (lex_.AtEnd()) return ErrorAt(start, "expected a number but the input ends");
    return ErrorAt(start, absl::StrCat("expected a number for ", PrimitiveTypeName(type)));
  }
  if (token == "true" || token == "false") {
    if (IsFloatingType(type)) {
      return ErrorAt(start, absl::StrCat("'", token, "' is not a ", PrimitiveTypeName(type)));
    }
    literal->SetUint64(index, token == "true" ? 1 : 0);
    return absl::OkStatus();
  }
  if (IsFloatingType(type)) {
    double value = 0;
    absl::string_view body = token;
    bool negative = false;
    if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
      negative = body[0] == '-';
      body.remove_prefix(1);
    }
    if (absl::StartsWith(body, "nan")) {
      value = std::nan("");
    } else if (body == "inf") {
      value = INFINITY;
    } else if (!absl::SimpleAtod(body, &value)) {
      return ErrorAt(start, absl::StrCat("malformed number '", token, "'"));
    }
    literal->SetDouble(index, negative ? -value : value);
    return absl::OkStatus();
  }
  // Integral (or pred) types: exact parse with a range check.
  const bool is_signed = IsSignedIntegralType(type);
  const int bits = BitWidth(type);
  if (absl::StrContains(token, '.') || absl::StrContains(token, 'e') ||
      absl::StrContains(token, 'n')) {
    return ErrorAt(start, absl::StrCat("'", token, "' is not an integer (element type ",
                                       PrimitiveTypeName(type), ")"));
  }
  if (token[0] == '-') {
    int64_t v = 0;
    if (!absl::SimpleAtoi(token, &v)) {
      return ErrorAt(start, absl::StrCat("'", token, "' is out of range"));
    }
    const bool fits = is_signed && (bits >= 64 || v >= -(int64_t{1} << (bits - 1)));
    if (!fits) {
      return ErrorAt(start, absl::StrCat(token, " is out of range for ", PrimitiveTypeName(type)));
    }
    literal->SetInt64(index, v);
  } else {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(token, &v)) {
      return ErrorAt(start, absl::StrCat("'", token, "' is out of range"));
    }
    const int value_bits = type == PrimitiveType::kPred ? 1 : (is_signed ? bits - 1 : bits);
    if (value_bits < 64 && v >= (uint64_t{1} << value_bits)) {
      return ErrorAt(start, absl::StrCat(token, " is out of range for ", PrimitiveTypeName(type)));
    }
    literal->SetUint64(index, v);
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseArrayElements(Literal* literal, int64_t dim, int64_t* next, int depth) {
  if (depth > kMaxNestingDepth) {
    return Error(absl::StrCat("literal nested deeper than ", kMaxNestingDepth, " levels"));
  }
  const Shape& shape = literal->shape();
  if (dim == shape.rank()) return ParseScalarInto(literal, (*next)++);
  const size_t start = lex_.pos();
  absl::Status status = Expect('{', absl::StrCat("to open dimension ", dim, " of the literal"));
  if (!status.ok()) return status;
  const int64_t size = shape.dimensions(dim);
  int64_t count = 0;
  if (!lex_.TryConsume('}')) {
    do {
      if (count == size) {
        return ErrorAt(start, absl::StrCat("dimension ", dim, " of the literal has more than ",
                                           size, " entries"));
      }
      status = ParseArrayElements(literal, dim + 1, next, depth + 1);
      if (!status.ok()) return status;
      ++count;
    } while (lex_.TryConsume(','));
    status = Expect('}', absl::StrCat("to close dimension ", dim, " of the literal"));
    if (!status.ok()) return status;
  }
  if (count != size) {
    return ErrorAt(start,
                   absl::StrCat("dimension ", dim, " of the literal has ", count,
                                " entries but the shape ", shape.ToString(false), " needs ", size));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseLiteral(const Shape& shape, Literal* literal, int depth) {
  if (depth > kMaxNestingDepth) {
    return Error(absl::StrCat("literal nested deeper than ", kMaxNestingDepth, " levels"));
  }
  if (shape.IsTuple()) {
    absl::Status status = Expect('(', "to open a tuple literal");
    if (!status.ok()) return status;
    std::vector<Literal> elements;
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      if (i > 0) {
        status = Expect(',', "between tuple literal elements");
        if (!status.ok()) return status;
      }
      Literal element;
      status = ParseLiteral(shape.tuple_shapes()[i], &element, depth + 1);
      if (!status.ok()) return status;
      elements.push_back(std::move(element));
    }
    status = Expect(')', "to close a tuple literal");
    if (!status.ok()) return status;
    *literal = Literal::Tuple(std::move(elements));
    return absl::OkStatus();
  }
  if (!shape.IsArray()) return Error("constants must have an array or tuple shape");
  // Elided contents: `{...}`.
  const size_t save = lex_.pos();
  if (lex_.TryConsume('{') && lex_.TryConsume("...") && lex_.TryConsume('}')) {
    *literal = Literal::Elided(shape);
    return absl::OkStatus();
  }
  lex_.set_pos(save);
  // Every element needs at least one character of text: a larger shape is refused before its
  // buffer is allocated (a 30-byte input must not cost gigabytes).
  const int64_t remaining = static_cast<int64_t>(lex_.text().size() - lex_.pos());
  if (shape.ElementCount() > remaining) {
    return Error(absl::StrCat("the literal of shape ", shape.ToString(false), " needs ",
                              shape.ElementCount(), " values but only ", remaining,
                              " characters of text follow"));
  }
  absl::StatusOr<Literal> created = Literal::CreateChecked(shape);
  if (!created.ok()) return Error(created.status().message());
  *literal = *std::move(created);
  int64_t next = 0;
  if (shape.rank() == 0 && lex_.Peek() == '{') {
    // Some writers brace scalars: `{5}`.
    lex_.TryConsume('{');
    absl::Status status = ParseScalarInto(literal, 0);
    if (!status.ok()) return status;
    return Expect('}', "to close the scalar");
  }
  return ParseArrayElements(literal, 0, &next, depth + 1);
}

// ================================================================ attributes

absl::Status Parser::ParseSlice(std::vector<SliceDim>* slice) {
  absl::Status status = Expect('{', "to open slice");
  if (!status.ok()) return status;
  slice->clear();
  if (lex_.TryConsume('}')) return absl::OkStatus();
  do {
    status = Expect('[', "to open a slice range [start:limit:stride]");
    if (!status.ok()) return status;
    SliceDim d;
    status = ParseInt(&d.start, "the slice start");
    if (!status.ok()) return status;
    status = Expect(':', "in a slice range");
    if (!status.ok()) return status;
    status = ParseInt(&d.limit, "the slice limit");
    if (!status.ok()) return status;
    if (lex_.TryConsume(':')) {
      status = ParseInt(&d.stride, "the slice stride");
      if (!status.ok()) return status;
    }
    status = Expect(']', "to close a slice range");
    if (!status.ok()) return status;
    slice->push_back(d);
  } while (lex_.TryConsume(','));
  return Expect('}', "to close slice");
}

absl::Status Parser::ParsePadding(std::vector<PadDim>* padding) {
  lex_.SkipSpace();
  padding->clear();
  do {
    PadDim d;
    absl::Status status = ParseInt(&d.low, "the low padding");
    if (!status.ok()) return status;
    if (!lex_.TryConsume('_')) return Error("expected '_' in the padding (low_high[_interior])");
    status = ParseInt(&d.high, "the high padding");
    if (!status.ok()) return status;
    if (lex_.PeekRaw() == '_') {
      lex_.TryConsume('_');
      status = ParseInt(&d.interior, "the interior padding");
      if (!status.ok()) return status;
    }
    padding->push_back(d);
  } while (lex_.PeekRaw() == 'x' && (lex_.TryConsume('x')));
  return absl::OkStatus();
}

absl::Status Parser::ParseWindow(std::vector<WindowDim>* window) {
  absl::Status status = Expect('{', "to open the window");
  if (!status.ok()) return status;
  window->clear();
  auto ensure = [&](size_t n) -> absl::Status {
    if (window->empty()) window->resize(n);
    if (window->size() != n) {
      return Error(absl::StrCat("window fields disagree on the number of dims (", window->size(),
                                " vs ", n, ")"));
    }
    return absl::OkStatus();
  };
  while (!lex_.TryConsume('}')) {
    if (lex_.AtEnd()) return Error("window is cut off: expected '}'");
    const size_t item = lex_.pos();
    absl::string_view field = lex_.ConsumeIdentifier();
    if (field.empty() || !lex_.TryConsume('=')) {
      return ErrorAt(item,
                     "expected a window field (size=, stride=, pad=, lhs_dilate=, "
                     "rhs_dilate=, rhs_reversal=)");
    }
    if (field == "pad") {
      std::vector<PadDim> pads;
      status = ParsePadding(&pads);
      if (!status.ok()) return status;
      status = ensure(pads.size());
      if (!status.ok()) return status;
      for (size_t i = 0; i < pads.size(); ++i) {
        if (pads[i].interior != 0) return ErrorAt(item, "window padding has no interior part");
        (*window)[i].pad_low = pads[i].low;
        (*window)[i].pad_high = pads[i].high;
      }
      continue;
    }
    std::vector<int64_t> values;
    do {
      int64_t v = 0;
      status = ParseIntLazy(&v, [&] { return absl::StrCat("a value of window ", field); });
      if (!status.ok()) return status;
      values.push_back(v);
    } while (lex_.PeekRaw() == 'x' && lex_.TryConsume('x'));
    status = ensure(values.size());
    if (!status.ok()) return status;
    for (size_t i = 0; i < values.size(); ++i) {
      WindowDim& d = (*window)[i];
      if (field == "size") {
        d.size = values[i];
      } else if (field == "stride") {
        d.stride = values[i];
      } else if (field == "lhs_dilate") {
        d.lhs_dilation = values[i];
      } else if (field == "rhs_dilate") {
        d.rhs_dilation = values[i];
      } else if (field == "rhs_reversal") {
        d.reversal = values[i] != 0;
      } else {
        return ErrorAt(item, absl::StrCat("unknown window field '", field, "'"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseDimLabels(ConvolutionDimensionNumbers* dnums) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  absl::string_view text = lex_.text();
  size_t p = start;
  while (p < text.size() && (std::isalnum(static_cast<unsigned char>(text[p])) || text[p] == '_' ||
                             text[p] == '-' || text[p] == '>' || text[p] == '?')) {
    ++p;
  }
  absl::string_view labels = text.substr(start, p - start);
  lex_.set_pos(p);
  const size_t underscore = labels.find('_');
  const size_t arrow = labels.find("->");
  if (underscore == absl::string_view::npos || arrow == absl::string_view::npos ||
      arrow < underscore) {
    return ErrorAt(
        start, absl::StrCat("malformed dim_labels '", labels, "' (expected e.g. b01f_01io->b01f)"));
  }
  absl::string_view lhs = labels.substr(0, underscore);
  absl::string_view rhs = labels.substr(underscore + 1, arrow - underscore - 1);
  absl::string_view out = labels.substr(arrow + 2);
  if (lhs.size() != rhs.size() || lhs.size() != out.size() || lhs.size() < 2) {
    return ErrorAt(start, absl::StrCat("dim_labels '", labels, "' have parts of unequal rank"));
  }
  const size_t spatial = lhs.size() - 2;
  auto parse_part = [&](absl::string_view part, char a, char b, int64_t* pa, int64_t* pb,
                        std::vector<int64_t>* sp) -> bool {
    *pa = -1;
    *pb = -1;
    sp->assign(spatial, -1);
    for (size_t i = 0; i < part.size(); ++i) {
      const char c = part[i];
      if (c == a && *pa < 0) {
        *pa = static_cast<int64_t>(i);
      } else if (c == b && *pb < 0) {
        *pb = static_cast<int64_t>(i);
      } else if (std::isdigit(static_cast<unsigned char>(c)) &&
                 static_cast<size_t>(c - '0') < spatial && (*sp)[c - '0'] < 0) {
        (*sp)[c - '0'] = static_cast<int64_t>(i);
      } else {
        return false;
      }
    }
    return true;
  };
  if (!parse_part(lhs, 'b', 'f', &dnums->input_batch, &dnums->input_feature,
                  &dnums->input_spatial) ||
      !parse_part(rhs, 'i', 'o', &dnums->kernel_input_feature, &dnums->kernel_output_feature,
                  &dnums->kernel_spatial) ||
      !parse_part(out, 'b', 'f', &dnums->output_batch, &dnums->output_feature,
                  &dnums->output_spatial)) {
    return ErrorAt(start, absl::StrCat("malformed dim_labels '", labels, "'"));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseCalledComputations(HloInstruction* instruction, absl::string_view role,
                                             bool is_list) {
  PendingCall call;
  call.instruction = instruction;
  call.called_index = instruction->called().size();
  auto read_name = [&]() -> absl::Status {
    lex_.SkipSpace();
    const size_t offset = lex_.pos();
    absl::string_view name = lex_.ConsumeName();
    if (name.empty()) return Error("expected a computation name");
    call_names_.push_back({name, offset});
    return absl::OkStatus();
  };
  absl::Status status;
  if (is_list) {
    status = ExpectLazy('{', [&] { return absl::StrCat("to open ", role); });
    if (!status.ok()) return status;
    call.names_begin = call_names_.size();
    if (!lex_.TryConsume('}')) {
      do {
        status = read_name();
        if (!status.ok()) return status;
      } while (lex_.TryConsume(','));
      status = ExpectLazy('}', [&] { return absl::StrCat("to close ", role); });
      if (!status.ok()) return status;
    }
  } else {
    if (lex_.Peek() == '{') {
      // An inline computation body.
      const size_t offset = lex_.pos();
      std::string name = FreshName(absl::StrCat(instruction->name(), ".", role));
      PendingComputation inline_body;
      inline_body.computation =
          module_->AddComputation(std::make_unique<HloComputation>(std::move(name)));
      inline_body.computation->set_location(LocationOf(offset));
      inline_body.offset = offset;
      lex_.TryConsume('{');
      // The body's statements reuse the per-instruction attribute state: keep this one's.
      std::string outer_key;
      outer_key.swap(attrs_key_);
      const bool outer_in_use = scratch_in_use_;
      std::optional<HloAttributes> outer_scratch;
      if (outer_in_use) outer_scratch = std::move(scratch_attrs_);
      scratch_in_use_ = false;
      status = ParseInstructionList(&inline_body, /*until_brace=*/true);
      attrs_key_.swap(outer_key);
      if (outer_in_use) scratch_attrs_ = std::move(outer_scratch);
      scratch_in_use_ = outer_in_use;
      if (!status.ok()) {
        AbandonComputation(inline_body.computation);
        return status;
      }
      computations_.push_back(
          {inline_body.computation, inline_body.offset, inline_body.out_of_order});
      call.names_begin = call_names_.size();
      call_names_.push_back({inline_body.computation->name(), offset});
    } else {
      call.names_begin = call_names_.size();
      status = read_name();
      if (!status.ok()) return status;
    }
  }
  call.names_end = call_names_.size();
  instruction->mutable_called().push_back({std::string(role), {}, is_list});
  pending_calls_.push_back(call);
  return absl::OkStatus();
}

absl::Status Parser::ParseAttribute(HloInstruction* instruction) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  absl::string_view name = lex_.ConsumeIdentifier();
  if (name.empty()) return Error("expected an attribute name after ','");
  if (!lex_.TryConsume('=')) return Error(absl::StrCat("expected '=' after '", name, "'"));
  if (name == "sharding") {
    SharedSharding sharding;
    absl::Status s = ParseSharedSharding(&sharding);
    if (!s.ok()) return s;
    // A named sharding whose dims XLA printed as `[]` (all empty) gets the value's rank.
    if (sharding && sharding->has_value() && instruction->shape().IsValid()) {
      if (std::optional<HloSharding> fitted =
              FitNamedShardingsToShape(**sharding, instruction->shape())) {
        sharding = SharedSharding::Make(*std::move(fitted));
      }
    }
    // A tuple-shaped instruction with a non-tuple sharding: that sharding on every leaf.
    instruction->set_shared_sharding(std::move(sharding));
    return absl::OkStatus();
  }
  const size_t value_start = lex_.pos();
  bool handled = false;
  absl::Status structured = ParseStructuredAttribute(instruction, name, start, &handled);
  if (handled) {
    if (!structured.ok()) return structured;
    // The interning key: opcode, then each structured attribute as name, '=', length, text.
    if (attrs_key_.empty()) {
      const uint16_t op = static_cast<uint16_t>(instruction->opcode());
      attrs_key_.append(reinterpret_cast<const char*>(&op), sizeof(op));
    }
    const absl::string_view value = lex_.text().substr(value_start, lex_.pos() - value_start);
    const uint32_t length = static_cast<uint32_t>(value.size());
    attrs_key_.append(name.data(), name.size());
    attrs_key_.push_back('=');
    attrs_key_.append(reinterpret_cast<const char*>(&length), sizeof(length));
    attrs_key_.append(value.data(), value.size());
    return absl::OkStatus();
  }
  const HloOpcode op = instruction->opcode();
  if (name == "to_apply" || name == "condition" || name == "body" || name == "true_computation" ||
      name == "false_computation" || (name == "calls" && op != HloOpcode::kCustomCall) ||
      (op == HloOpcode::kSelectAndScatter && (name == "select" || name == "scatter"))) {
    return ParseCalledComputations(instruction, name, /*is_list=*/false);
  }
  if (name == "branch_computations" || name == "called_computations" ||
      (name == "calls" && op == HloOpcode::kCustomCall)) {
    return ParseCalledComputations(instruction, name, /*is_list=*/true);
  }
  // Everything else is kept as text and printed back verbatim.
  for (const RawAttribute& existing : instruction->raw_attributes()) {
    if (existing.name == name) {
      return ErrorAt(start, absl::StrCat("attribute '", name, "' appears twice"));
    }
  }
  std::string text;
  absl::Status s = ParseRaw(&text);
  if (!s.ok()) return s;
  instruction->mutable_raw_attributes().push_back({std::string(name), std::move(text)});
  return absl::OkStatus();
}

absl::Status Parser::ParseStructuredAttribute(HloInstruction* instruction, absl::string_view name,
                                              size_t start, bool* handled) {
  *handled = true;
  // Read into a scratch value that InternAttributes() hands to the instruction.
  auto A = [&]() -> HloAttributes& {
    if (!scratch_in_use_) {
      scratch_attrs_.emplace();
      scratch_in_use_ = true;
    }
    return *scratch_attrs_;
  };
  const HloOpcode op = instruction->opcode();
  auto int_list = [&](std::optional<std::vector<int64_t>>* field) {
    std::vector<int64_t> v;
    absl::Status s = ParseIntList('{', '}', &v, name);
    if (s.ok()) *field = std::move(v);
    return s;
  };
  auto int_list_into = [&](std::vector<int64_t>* field) {
    return ParseIntList('{', '}', field, name);
  };
  auto one_int = [&](std::optional<int64_t>* field) {
    int64_t v = 0;
    absl::Status s = ParseInt(&v, name);
    if (s.ok()) *field = v;
    return s;
  };
  auto one_bool = [&](std::optional<bool>* field) {
    bool v = false;
    absl::Status s = ParseBool(&v);
    if (s.ok()) *field = v;
    return s;
  };
  auto dot = [&]() -> DotDimensionNumbers& {
    HloAttributes& a = A();
    if (!a.dot_dimension_numbers) a.dot_dimension_numbers.emplace();
    return *a.dot_dimension_numbers;
  };
  auto gather = [&]() -> GatherDimensionNumbers& {
    HloAttributes& a = A();
    if (!a.gather_dimension_numbers) a.gather_dimension_numbers.emplace();
    return *a.gather_dimension_numbers;
  };
  auto scatter = [&]() -> ScatterDimensionNumbers& {
    HloAttributes& a = A();
    if (!a.scatter_dimension_numbers) a.scatter_dimension_numbers.emplace();
    return *a.scatter_dimension_numbers;
  };
  const bool is_gather = op == HloOpcode::kGather;
  const bool is_scatter = op == HloOpcode::kScatter;

  if (name == "dimensions") return int_list(&A().dimensions);
  if (name == "slice") {
    std::vector<SliceDim> slice;
    absl::Status s = ParseSlice(&slice);
    if (s.ok()) A().slice = std::move(slice);
    return s;
  }
  if (name == "dynamic_slice_sizes") return int_list(&A().dynamic_slice_sizes);
  if (name == "padding" && op == HloOpcode::kPad) {
    std::vector<PadDim> padding;
    absl::Status s = ParsePadding(&padding);
    if (s.ok()) A().padding = std::move(padding);
    return s;
  }
  if (name == "iota_dimension") return one_int(&A().iota_dimension);
  if (name == "index" && op == HloOpcode::kGetTupleElement) return one_int(&A().tuple_index);
  if (name == "direction") {
    absl::string_view d = lex_.ConsumeIdentifier();
    std::optional<ComparisonDirection> dir = ComparisonDirectionFromName(d);
    if (!dir) return ErrorAt(start, absl::StrCat("unknown comparison direction '", d, "'"));
    A().direction = *dir;
    return absl::OkStatus();
  }
  if (name == "type" && op == HloOpcode::kCompare) {
    A().comparison_type = std::string(lex_.ConsumeIdentifier());
    if (A().comparison_type->empty()) return Error("expected a comparison type");
    return absl::OkStatus();
  }
  if (name == "lhs_batch_dims") return int_list_into(&dot().lhs_batch);
  if (name == "rhs_batch_dims") return int_list_into(&dot().rhs_batch);
  if (name == "lhs_contracting_dims") return int_list_into(&dot().lhs_contracting);
  if (name == "rhs_contracting_dims") return int_list_into(&dot().rhs_contracting);
  if (name == "window") {
    std::vector<WindowDim> window;
    absl::Status s = ParseWindow(&window);
    if (s.ok()) A().window = std::move(window);
    return s;
  }
  if (name == "dim_labels") {
    ConvolutionDimensionNumbers dnums;
    absl::Status s = ParseDimLabels(&dnums);
    if (s.ok()) A().dim_labels = std::move(dnums);
    return s;
  }
  if (name == "feature_group_count") return one_int(&A().feature_group_count);
  if (name == "batch_group_count") return one_int(&A().batch_group_count);
  if (is_gather && name == "offset_dims") return int_list_into(&gather().offset_dims);
  if (is_gather && name == "collapsed_slice_dims") {
    return int_list_into(&gather().collapsed_slice_dims);
  }
  if (is_gather && name == "start_index_map") return int_list_into(&gather().start_index_map);
  if (is_gather && name == "operand_batching_dims") {
    return int_list_into(&gather().operand_batching_dims);
  }
  if (is_gather && name == "start_indices_batching_dims") {
    return int_list_into(&gather().start_indices_batching_dims);
  }
  if (is_gather && name == "slice_sizes") return int_list(&A().gather_slice_sizes);
  if ((is_gather || is_scatter) && name == "index_vector_dim") {
    int64_t v = 0;
    absl::Status s = ParseInt(&v, name);
    if (!s.ok()) return s;
    if (is_gather) {
      gather().index_vector_dim = v;
    } else {
      scatter().index_vector_dim = v;
    }
    return absl::OkStatus();
  }
  if (is_scatter && name == "update_window_dims") {
    return int_list_into(&scatter().update_window_dims);
  }
  if (is_scatter && name == "inserted_window_dims") {
    return int_list_into(&scatter().inserted_window_dims);
  }
  if (is_scatter && name == "scatter_dims_to_operand_dims") {
    return int_list_into(&scatter().scatter_dims_to_operand_dims);
  }
  if (is_scatter && name == "input_batching_dims") {
    return int_list_into(&scatter().input_batching_dims);
  }
  if (is_scatter && name == "scatter_indices_batching_dims") {
    return int_list_into(&scatter().scatter_indices_batching_dims);
  }
  if (name == "indices_are_sorted") return one_bool(&A().indices_are_sorted);
  if (name == "unique_indices") return one_bool(&A().unique_indices);
  if (name == "is_stable") return one_bool(&A().is_stable);
  if (name == "channel_id") return one_int(&A().channel_id);
  if (name == "replica_groups") {
    ReplicaGroups groups;
    absl::Status s = ParseReplicaGroups(&groups);
    if (s.ok()) A().replica_groups = std::move(groups);
    return s;
  }
  if (name == "use_global_device_ids") return one_bool(&A().use_global_device_ids);
  if (name == "constrain_layout") return one_bool(&A().constrain_layout);
  if (name == "source_target_pairs") {
    SourceTargetPairs pairs;
    absl::Status s = ParseSourceTargetPairs(&pairs);
    if (s.ok()) A().source_target_pairs = std::move(pairs);
    return s;
  }
  if (name == "custom_call_target") {
    absl::StatusOr<std::string> target = lex_.ConsumeString();
    if (!target.ok()) return Error(target.status().message());
    A().custom_call_target = *std::move(target);
    return absl::OkStatus();
  }
  if (name == "kind" && op == HloOpcode::kFusion) {
    A().fusion_kind = std::string(lex_.ConsumeIdentifier());
    return absl::OkStatus();
  }
  if (name == "distribution" && op == HloOpcode::kRng) {
    A().distribution = std::string(lex_.ConsumeIdentifier());
    return absl::OkStatus();
  }
  *handled = false;
  return absl::OkStatus();
}

void Parser::InternAttributes(HloInstruction* instruction) {
  auto it = attrs_cache_.find(attrs_key_);
  if (it != attrs_cache_.end()) {
    instruction->set_shared_attrs(it->second);
  } else {
    auto shared = SharedValue<HloAttributes>::Make(std::move(*scratch_attrs_));
    attrs_cache_.emplace(attrs_key_, shared);
    instruction->set_shared_attrs(std::move(shared));
  }
  scratch_in_use_ = false;
}

// ============================================================== instructions

std::string Parser::FreshName(absl::string_view base) {
  return absl::StrCat(base, ".", ++fresh_counter_);
}

absl::Status Parser::ParseOperands(PendingComputation* pending, HloInstruction* user, int depth) {
  if (depth > kMaxNestingDepth) {
    return Error(absl::StrCat("operands nested deeper than ", kMaxNestingDepth, " levels"));
  }
  const size_t base = operand_stack_.size();
  if (!lex_.TryConsume(')')) {
    do {
      SharedShape written;
      absl::string_view written_key;
      absl::Status status = ParseSharedShape(&written, &written_key, /*only_if_shape=*/true);
      if (!status.ok()) return status;
      lex_.SkipSpace();
      const size_t offset = lex_.pos();
      absl::string_view name = lex_.ConsumeName();
      if (name.empty()) {
        if (lex_.AtEnd()) return Error("operand list is cut off: the input ends inside '(...)'");
        return Error("expected an operand name");
      }
      const uint32_t index = static_cast<uint32_t>(operand_stack_.size() - base);
      if (lex_.PeekRaw() == '(') {
        if (std::optional<HloOpcode> opcode = StringToHloOpcode(name); opcode.has_value()) {
          // A nested anonymous instruction: `add(f32[] x, f32[] negate(y))`.
          lex_.TryConsume('(');
          auto nested = std::make_unique<HloInstruction>(*opcode, FreshName(name), written);
          nested->set_location(LocationOf(offset));
          HloInstruction* nested_raw = pending->computation->AddInstruction(std::move(nested));
          if (!written) missing_shapes_.push_back({nested_raw, offset});
          const size_t nested_unresolved = unresolved_.size();
          status = ParseOperands(pending, nested_raw, depth + 1);
          if (!status.ok()) return status;
          CompleteInstruction(pending, nested_raw, nested_unresolved);
          pending->out_of_order = true;
          // Referenced by its name, like any operand (the first instruction of that name).
          operand_stack_.push_back(pending->computation->FindInstruction(nested_raw->name()));
          continue;
        }
      }
      HloInstruction* target = pending->computation->FindInstruction(name);
      if (lex_.PeekRaw() == '#') {
        // XLA's compact get-tuple-element (jaxlib 0.12's dumps print every non-ROOT one so):
        // `%t#1` is get-tuple-element(%t), index=1; `%t#0#1` nests. Each becomes an instruction.
        HloInstruction* tuple = target;
        bool first = true;
        while (lex_.PeekRaw() == '#') {
          lex_.TryConsume('#');
          int64_t tuple_index = 0;
          status = ParseInt(&tuple_index, "a tuple index after '#'");
          if (!status.ok()) return status;
          auto gte = std::make_unique<HloInstruction>(
              HloOpcode::kGetTupleElement, FreshName("get-tuple-element"), SharedShape());
          gte->set_location(LocationOf(offset));
          gte->mutable_attrs().tuple_index = tuple_index;
          HloInstruction* gte_raw = pending->computation->AddInstruction(std::move(gte));
          missing_shapes_.push_back({gte_raw, offset});
          const size_t gte_unresolved = unresolved_.size();
          if (first && tuple == nullptr) {
            unresolved_.push_back({gte_raw, name, offset, 0, UINT32_MAX, -1});
          }
          gte_raw->set_operands({tuple});
          CompleteInstruction(pending, gte_raw, gte_unresolved);
          tuple = gte_raw;
          first = false;
        }
        pending->out_of_order = true;
        target = tuple;
      }
      int32_t written_index = -1;
      if (written) {
        written_index = static_cast<int32_t>(written_shapes_.size());
        written_shapes_.push_back({user, index, offset, name, std::move(written)});
      }
      if (target == nullptr) {
        unresolved_.push_back({user, name, offset, index, UINT32_MAX, written_index});
        pending->out_of_order = true;
      } else if (target->index_in_parent() >= user->index_in_parent()) {
        pending->out_of_order = true;
      }
      operand_stack_.push_back(target);
    } while (lex_.TryConsume(','));
    absl::Status status = Expect(')', "to close the operand list");
    if (!status.ok()) return status;
  }
  user->set_operands(
      std::vector<HloInstruction*>(operand_stack_.begin() + base, operand_stack_.end()));
  operand_stack_.resize(base);
  return absl::OkStatus();
}

void Parser::CompleteInstruction(PendingComputation* pending, HloInstruction* instruction,
                                 size_t unresolved_begin) {
  const uint32_t ordinal = pending->completed++;
  for (size_t i = unresolved_begin; i < unresolved_.size(); ++i) {
    if (unresolved_[i].user == instruction) unresolved_[i].ordinal = ordinal;
  }
  pending->last = instruction;
}

absl::Status Parser::ParseConstant(HloInstruction* instruction, const SharedShape& shape,
                                   absl::string_view shape_key) {
  // Constants of the same (cached) shape text and the same value text share one literal. The
  // values run to the ')' that closes `constant(`; ParseLiteral reads nothing past it.
  const absl::string_view text = lex_.text();
  const size_t values_start = lex_.pos();
  size_t close = absl::string_view::npos;
  if (!shape_key.empty()) {
    int depth = 1;
    for (size_t p = values_start; p < text.size(); ++p) {
      const char c = text[p];
      if (c == '(') {
        ++depth;
      } else if (c == ')') {
        if (--depth == 0) {
          close = p;
          break;
        }
      } else if (c == '\n' || c == '/' || c == '"' || c == '\'') {
        break;
      }
    }
  }
  LiteralKey key;
  if (close != absl::string_view::npos) {
    key = {shape_key, text.substr(values_start, close - values_start)};
    auto it = literal_cache_.find(key);
    if (it != literal_cache_.end()) {
      instruction->set_shared_literal(it->second);
      lex_.set_pos(close);
      return Expect(')', "to close constant(...)");
    }
  }
  Literal literal;
  absl::Status status = ParseLiteral(*shape, &literal);
  if (!status.ok()) return status;
  auto shared = SharedLiteral::Make(std::move(literal));
  instruction->set_shared_literal(shared);
  status = Expect(')', "to close constant(...)");
  if (!status.ok()) return status;
  if (close != absl::string_view::npos && lex_.pos() == close + 1) {
    literal_cache_.emplace(key, std::move(shared));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseInstruction(PendingComputation* pending) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  const bool is_root = lex_.TryConsumeKeyword("ROOT");
  lex_.SkipSpace();
  const size_t name_offset = lex_.pos();
  absl::string_view name = lex_.ConsumeName();
  if (name.empty()) return Error("expected an instruction name");
  if (!lex_.TryConsume('=')) {
    return Error(absl::StrCat("expected '=' after the instruction name '", name, "'"));
  }
  SharedShape shape;
  absl::string_view shape_key;
  absl::Status status = ParseSharedShape(&shape, &shape_key, /*only_if_shape=*/true);
  if (!status.ok()) return status;
  lex_.SkipSpace();
  const size_t opcode_offset = lex_.pos();
  absl::string_view opcode_text = lex_.ConsumeIdentifier();
  if (opcode_text.empty()) {
    if (lex_.AtEnd()) return Error("the statement is cut off: expected an opcode");
    return Error("expected an opcode");
  }
  std::optional<HloOpcode> opcode = StringToHloOpcode(opcode_text);
  if (!opcode.has_value()) {
    return ErrorAt(opcode_offset, absl::StrCat("unknown opcode '", opcode_text, "'"));
  }
  if (pending->computation->FindInstruction(name) != nullptr) {
    return ErrorAt(name_offset,
                   absl::StrCat("instruction '", name, "' is defined twice in computation '",
                                pending->computation->name(), "'"));
  }
  auto instruction = std::make_unique<HloInstruction>(*opcode, std::string(name), shape);
  instruction->set_location(LocationOf(start));
  HloInstruction* raw = pending->computation->AddInstruction(std::move(instruction));
  if (!shape) missing_shapes_.push_back({raw, start});
  const size_t unresolved_begin = unresolved_.size();
  status = ExpectLazy('(', [&] { return absl::StrCat("after the opcode '", opcode_text, "'"); });
  if (!status.ok()) return status;
  if (*opcode == HloOpcode::kParameter) {
    int64_t number = 0;
    status = ParseInt(&number, "the parameter number");
    if (!status.ok()) return status;
    if (number < 0) return Error("parameter numbers must be non-negative");
    raw->set_parameter_number(number);
    status = Expect(')', "to close parameter(N)");
    if (!status.ok()) return status;
  } else if (*opcode == HloOpcode::kConstant) {
    if (!shape) {
      return ErrorAt(opcode_offset, "a constant needs its shape written before 'constant'");
    }
    status = ParseConstant(raw, shape, shape_key);
    if (!status.ok()) return status;
  } else {
    status = ParseOperands(pending, raw, 0);
    if (!status.ok()) return status;
  }
  attrs_key_.clear();
  scratch_in_use_ = false;
  while (lex_.TryConsume(',')) {
    status = ParseAttribute(raw);
    if (!status.ok()) return status;
  }
  if (!attrs_key_.empty()) InternAttributes(raw);
  if (is_root) {
    if (pending->root != nullptr) {
      return ErrorAt(start, absl::StrCat("computation '", pending->computation->name(),
                                         "' has a second ROOT"));
    }
    pending->root = raw;
  }
  CompleteInstruction(pending, raw, unresolved_begin);
  return absl::OkStatus();
}

void Parser::SkipToNextStatement() {
  // Move to the start of the next line that looks like `[ROOT] name = `.
  absl::string_view text = lex_.text();
  size_t p = lex_.pos();
  while (true) {
    const size_t nl = text.find('\n', p);
    if (nl == absl::string_view::npos) {
      lex_.set_pos(text.size());
      return;
    }
    p = nl + 1;
    Lexer probe(text);
    probe.set_pos(p);
    probe.TryConsumeKeyword("ROOT");
    if (!probe.ConsumeName().empty() && probe.TryConsume('=')) {
      lex_.set_pos(p);
      return;
    }
  }
}

absl::Status Parser::ParseInstructionList(PendingComputation* pending, bool until_brace) {
  while (true) {
    if (until_brace) {
      if (lex_.TryConsume('}')) break;
      if (lex_.AtEnd()) {
        return ErrorAt(pending->offset, absl::StrCat("computation '", pending->computation->name(),
                                                     "' is cut off: no closing '}'"));
      }
    } else if (lex_.AtEnd()) {
      break;
    }
    const size_t start = lex_.pos();
    const int64_t instructions_before = pending->computation->instruction_count();
    const PendingComputation pending_before = *pending;
    const size_t unresolved_before = unresolved_.size();
    const size_t written_before = written_shapes_.size();
    const size_t missing_before = missing_shapes_.size();
    const size_t calls_before = pending_calls_.size();
    const size_t operands_before = operand_stack_.size();
    const bool errors_were_warnings = statement_errors_are_warnings_;
    statement_errors_are_warnings_ = options_.fragment;
    absl::Status status = ParseInstruction(pending);
    statement_errors_are_warnings_ = errors_were_warnings;
    if (status.ok()) continue;
    if (!options_.fragment) return status;
    // Fragment mode: report the statement as cut off or malformed, undo it and go on. What was
    // recorded for the dropped instructions goes too (inline bodies it held stay, as before).
    HloComputation* computation = pending->computation;
    auto dropped = [&](const HloInstruction* instruction) {
      return instruction->parent() == computation &&
             instruction->index_in_parent() >= instructions_before;
    };
    unresolved_.erase(std::remove_if(unresolved_.begin() + unresolved_before, unresolved_.end(),
                                     [&](const UnresolvedOperand& u) { return dropped(u.user); }),
                      unresolved_.end());
    written_shapes_.erase(
        std::remove_if(written_shapes_.begin() + written_before, written_shapes_.end(),
                       [&](const WrittenOperandShape& w) { return dropped(w.user); }),
        written_shapes_.end());
    missing_shapes_.erase(
        std::remove_if(missing_shapes_.begin() + missing_before, missing_shapes_.end(),
                       [&](const MissingShape& m) { return dropped(m.instruction); }),
        missing_shapes_.end());
    for (size_t i = calls_before; i < pending_calls_.size(); ++i) {
      if (pending_calls_[i].instruction != nullptr && dropped(pending_calls_[i].instruction)) {
        pending_calls_[i].instruction = nullptr;
      }
    }
    operand_stack_.resize(operands_before);
    computation->TruncateInstructions(instructions_before);
    *pending = pending_before;
    lex_.set_pos(start);
    SkipToNextStatement();
    warnings_.push_back(StatementWarning(start, lex_.pos(), status));
  }
  // The root: the written ROOT, else the last statement's instruction.
  if (pending->root != nullptr) {
    pending->computation->set_root(pending->root);
  } else if (pending->last != nullptr) {
    pending->computation->set_root(pending->last);
  }
  pending->computation->ShrinkInstructions();
  return absl::OkStatus();
}

absl::string_view FirstLine(absl::string_view text) { return text.substr(0, text.find('\n')); }

std::string Parser::StatementWarning(size_t start, size_t end, const absl::Status& status) const {
  const int64_t first = source_.LineOf(start);
  const int64_t last =
      std::max(first, end >= source_.text().size() ? source_.LineOf(end) : source_.LineOf(end) - 1);
  constexpr absl::string_view kSkipped = " is cut off or malformed and was skipped (";
  if (status == StatementFailed()) {
    const size_t at = std::min(statement_error_.offset, source_.text().size());
    return Warning(start, "statement on lines ", first, "-", last, kSkipped, source_.path(), ":",
                   source_.LineOf(at), ":", source_.ColumnOf(at),
                   ": error: ", FirstLine(statement_error_.message), ")");
  }
  return Warning(start, "statement on lines ", first, "-", last, kSkipped,
                 FirstLine(status.message()), ")");
}

void Parser::AbandonComputation(HloComputation* computation) {
  // An inline body that could not be read completely is kept in the module as it stood, but
  // nothing of it is resolved later: its instructions keep no operands.
  for (const auto& instruction : computation->instructions()) instruction->set_operands({});
  auto in = [&](const HloInstruction* instruction) { return instruction->parent() == computation; };
  unresolved_.erase(std::remove_if(unresolved_.begin(), unresolved_.end(),
                                   [&](const UnresolvedOperand& u) { return in(u.user); }),
                    unresolved_.end());
  written_shapes_.erase(std::remove_if(written_shapes_.begin(), written_shapes_.end(),
                                       [&](const WrittenOperandShape& w) { return in(w.user); }),
                        written_shapes_.end());
  missing_shapes_.erase(std::remove_if(missing_shapes_.begin(), missing_shapes_.end(),
                                       [&](const MissingShape& m) { return in(m.instruction); }),
                        missing_shapes_.end());
}

absl::Status Parser::ParseHeader() {
  if (!lex_.TryConsumeKeyword("HloModule")) {
    return Error("expected 'HloModule' at the start of the module");
  }
  lex_.SkipSpace();
  absl::string_view name = lex_.ConsumeName();
  if (name.empty()) return Error("expected the module name after 'HloModule'");
  module_->set_name(std::string(name));
  while (lex_.TryConsume(',')) {
    lex_.SkipSpace();
    const size_t start = lex_.pos();
    absl::string_view attr = lex_.ConsumeIdentifier();
    if (attr.empty() || !lex_.TryConsume('=')) return ErrorAt(start, "expected a module attribute");
    if (attr == "is_scheduled") {
      bool v = false;
      absl::Status status = ParseBool(&v);
      if (!status.ok()) return status;
      module_->set_is_scheduled(v);
    } else if (attr == "replica_count" || attr == "num_partitions") {
      int64_t v = 0;
      absl::Status status = ParseInt(&v, attr);
      if (!status.ok()) return status;
      if (v < 1 || v > (int64_t{1} << 24)) {
        return ErrorAt(start, absl::StrCat(attr, " must be in [1, 2^24], not ", v));
      }
      if (attr == "replica_count") {
        module_->set_replica_count(v);
      } else {
        module_->set_num_partitions(v);
      }
    } else {
      std::string text;
      absl::Status status = ParseRaw(&text);
      if (!status.ok()) return status;
      module_->mutable_raw_header_attributes().push_back({std::string(attr), std::move(text)});
    }
  }
  // Stack-frame tables of newer dumps: `FileNames 1 "a.py" ...` blocks, kept out of the IR.
  while (true) {
    const size_t save = lex_.pos();
    absl::string_view word = lex_.ConsumeIdentifier();
    if (word != "FileNames" && word != "FunctionNames" && word != "FileLocations" &&
        word != "StackFrames") {
      lex_.set_pos(save);
      break;
    }
    while (std::isdigit(static_cast<unsigned char>(lex_.Peek()))) {
      int64_t index = 0;
      absl::Status status = ParseInt(&index, "a table index");
      if (!status.ok()) return status;
      std::string text;
      status = ParseRaw(&text);
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseComputation() {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  const bool is_entry = lex_.TryConsumeKeyword("ENTRY");
  lex_.SkipSpace();
  absl::string_view name = lex_.ConsumeName();
  if (name.empty()) return Error("expected a computation name (or ENTRY)");
  if (module_->FindComputation(name) != nullptr) {
    return ErrorAt(start, absl::StrCat("computation '", name, "' is defined twice"));
  }
  if (lex_.Peek() == '(') {
    // Signature `(p0: f32[], ...) -> shape`: informational; parameters come from parameter(i).
    int depth = 0;
    absl::string_view text = lex_.text();
    size_t p = lex_.pos();
    for (; p < text.size(); ++p) {
      if (text[p] == '(') ++depth;
      if (text[p] == ')' && --depth == 0) break;
      if (depth > kMaxNestingDepth) return ErrorAt(p, "signature nested too deeply");
    }
    if (p >= text.size()) return ErrorAt(lex_.pos(), "computation signature is not closed");
    lex_.set_pos(p + 1);
    if (lex_.TryConsume("->")) {
      SharedShape ignored;
      absl::string_view key;
      absl::Status status = ParseSharedShape(&ignored, &key, /*only_if_shape=*/false);
      if (!status.ok()) return status;
    }
  }
  absl::Status status =
      ExpectLazy('{', [&] { return absl::StrCat("to open computation '", name, "'"); });
  if (!status.ok()) return status;
  PendingComputation pending;
  pending.computation =
      module_->AddComputation(std::make_unique<HloComputation>(std::string(name)));
  pending.computation->set_location(LocationOf(start));
  pending.offset = start;
  if (is_entry) {
    if (entry_ != nullptr) return ErrorAt(start, "a module may have only one ENTRY computation");
    entry_ = pending.computation;
  }
  status = ParseInstructionList(&pending, /*until_brace=*/true);
  if (!status.ok()) return status;
  if (lex_.TryConsume(',')) {
    absl::string_view attr = lex_.ConsumeIdentifier();
    if (attr != "execution_thread" || !lex_.TryConsume('=')) {
      return Error("expected execution_thread= after the computation");
    }
    absl::StatusOr<std::string> thread = lex_.ConsumeString();
    if (!thread.ok()) return Error(thread.status().message());
    pending.computation->set_execution_thread(*thread);
  }
  computations_.push_back({pending.computation, pending.offset, pending.out_of_order});
  return absl::OkStatus();
}

absl::Status Parser::ResolveCalls() {
  absl::flat_hash_set<std::string> reported;
  for (const PendingCall& call : pending_calls_) {
    CalledComputations* called = nullptr;
    if (call.instruction != nullptr) {
      called = &call.instruction->mutable_called()[call.called_index];
      called->computations.reserve(call.names_end - call.names_begin);
    }
    for (size_t i = call.names_begin; i < call.names_end; ++i) {
      const absl::string_view name = call_names_[i].name;
      const size_t offset = call_names_[i].offset;
      HloComputation* computation = module_->FindComputation(name);
      if (computation == nullptr) {
        if (!options_.fragment) {
          return ErrorAt(offset, absl::StrCat("unknown computation '", name, "'"));
        }
        auto opaque = std::make_unique<HloComputation>(std::string(name));
        opaque->set_opaque(true);
        opaque->set_location(LocationOf(offset));
        computation = module_->AddComputation(std::move(opaque));
      }
      if (computation->is_opaque() && reported.insert(std::string(name)).second) {
        warnings_.push_back(Warning(
            offset, absl::StrCat("computation '", name,
                                 "' is not in the paste; it is kept as an opaque reference")));
      }
      if (called != nullptr) called->computations.push_back(computation);
    }
  }
  return absl::OkStatus();
}

std::optional<Shape> Parser::InferUndefinedOperandShape(const HloInstruction& user,
                                                        int64_t operand_count, int64_t index,
                                                        std::string* note) {
  const Shape& out = user.shape();
  if (!out.IsValid()) return std::nullopt;
  const HloAttributes& a = user.attrs();
  auto with_type = [](Shape s, PrimitiveType t) {
    s.set_element_type(t);
    s.clear_layout();
    return s;
  };
  const HloOpcode op = user.opcode();
  const int arity = ElementwiseArity(op);
  if (arity > 0 && out.IsArray()) {
    if (op == HloOpcode::kSelect && index == 0) return with_type(out, PrimitiveType::kPred);
    return with_type(out, out.element_type());
  }
  switch (op) {
    case HloOpcode::kCompare:
      *note = "element type assumed f32";
      return with_type(out, PrimitiveType::kF32);
    case HloOpcode::kConvert:
      *note = "element type assumed f32";
      return with_type(out, PrimitiveType::kF32);
    case HloOpcode::kWhile:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kAllReduce:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kDynamicUpdateSlice:
      if (op == HloOpcode::kDynamicUpdateSlice && index >= 2) {
        return Shape::Scalar(PrimitiveType::kS32);
      }
      if (op == HloOpcode::kDynamicUpdateSlice && index == 1) return std::nullopt;
      return out;
    case HloOpcode::kTranspose: {
      if (!a.dimensions || static_cast<int64_t>(a.dimensions->size()) != out.rank()) break;
      std::vector<int64_t> dims(out.rank());
      for (int64_t i = 0; i < out.rank(); ++i) {
        const int64_t d = (*a.dimensions)[i];
        if (d < 0 || d >= out.rank()) return std::nullopt;
        dims[d] = out.dimensions(i);
      }
      return Shape::Array(out.element_type(), dims);
    }
    case HloOpcode::kBroadcast: {
      if (!a.dimensions) break;
      std::vector<int64_t> dims;
      for (int64_t d : *a.dimensions) {
        if (d < 0 || d >= out.rank()) return std::nullopt;
        dims.push_back(out.dimensions(d));
      }
      return Shape::Array(out.element_type(), dims);
    }
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
      *note = "only the element count is known; shown as a rank-1 array";
      return Shape::Array(out.element_type(), {out.ElementCount()});
    case HloOpcode::kSlice: {
      if (!a.slice || static_cast<int64_t>(a.slice->size()) != out.rank()) break;
      std::vector<int64_t> dims;
      for (const SliceDim& d : *a.slice) dims.push_back(d.limit);
      *note = "dims assumed to end at the slice limits";
      return Shape::Array(out.element_type(), dims);
    }
    case HloOpcode::kScatter: {
      const int64_t n = (operand_count - 1) / 2;
      if (index < n) return out.IsTuple() ? out.tuple_shapes()[index] : out;
      break;
    }
    case HloOpcode::kReduce:
    case HloOpcode::kReduceWindow: {
      const int64_t n = operand_count / 2;
      if (index >= n) {
        const Shape& element = out.IsTuple() ? out.tuple_shapes()[index - n] : out;
        return Shape::Scalar(element.element_type());
      }
      break;
    }
    case HloOpcode::kGetTupleElement: {
      if (!a.tuple_index || *a.tuple_index < 0 || *a.tuple_index > 100000) break;
      std::vector<Shape> elements(*a.tuple_index + 1, Shape::Token());
      elements.back() = out;
      *note = absl::StrCat("only element ", *a.tuple_index,
                           " is known; the other elements are shown as token[]");
      return Shape::Tuple(std::move(elements));
    }
    default:
      break;
  }
  return std::nullopt;
}

absl::Status Parser::AddFragmentParameters(HloComputation* computation,
                                           const std::vector<size_t>& unresolved) {
  int64_t next_parameter = 0;
  for (HloInstruction* p : computation->parameters()) {
    if (p != nullptr) next_parameter = std::max(next_parameter, p->parameter_number() + 1);
  }
  // The name an operand was written with (resolved operands carry it as their own name).
  auto operand_target = [&](const HloInstruction* user, int64_t index) -> HloInstruction* {
    if (const HloInstruction* operand = user->operand(index); operand != nullptr) {
      return computation->FindInstruction(operand->name());
    }
    for (size_t i : unresolved) {
      const UnresolvedOperand& u = unresolved_[i];
      if (u.user == user && u.operand_index == index) {
        return computation->FindInstruction(u.name);
      }
    }
    return nullptr;
  };
  // Undefined names in order of first use.
  std::vector<std::string> order;
  absl::flat_hash_map<std::string, std::vector<const UnresolvedOperand*>> uses;
  for (size_t i : unresolved) {
    const UnresolvedOperand& operand = unresolved_[i];
    if (computation->FindInstruction(operand.name) != nullptr) continue;
    auto [it, inserted] = uses.try_emplace(std::string(operand.name));
    if (inserted) order.push_back(std::string(operand.name));
    it->second.push_back(&operand);
  }
  for (const std::string& name : order) {
    const std::vector<const UnresolvedOperand*>& list = uses[name];
    std::optional<Shape> shape;
    std::string note;
    std::string source;
    for (const UnresolvedOperand* use : list) {
      if (use->written >= 0) {
        shape = *written_shapes_[use->written].shape;
        source = "written inline";
        break;
      }
    }
    for (const UnresolvedOperand* use : list) {
      if (shape.has_value()) break;
      const HloInstruction& user = *use->user;
      const int64_t operand_count = user.operand_count();
      const int64_t use_index = use->operand_index;
      shape = InferUndefinedOperandShape(user, operand_count, use_index, &note);
      // Scatter indices: updates scatter dims (+ index vector dim when inside the rank).
      if (!shape && user.opcode() == HloOpcode::kScatter &&
          user.attrs().scatter_dimension_numbers) {
        const int64_t n = (operand_count - 1) / 2;
        const ScatterDimensionNumbers& d = *user.attrs().scatter_dimension_numbers;
        if (use_index == n && operand_count > n + 1) {
          HloInstruction* updates = operand_target(&user, n + 1);
          if (updates != nullptr && updates->shape().IsArray()) {
            std::vector<int64_t> dims;
            for (int64_t k = 0; k < updates->shape().rank(); ++k) {
              if (std::find(d.update_window_dims.begin(), d.update_window_dims.end(), k) ==
                  d.update_window_dims.end()) {
                dims.push_back(updates->shape().dimensions(k));
              }
            }
            const int64_t index_vector_size =
                static_cast<int64_t>(d.scatter_dims_to_operand_dims.size());
            if (d.index_vector_dim < static_cast<int64_t>(dims.size()) + 1 &&
                d.index_vector_dim >= 0) {
              if (d.index_vector_dim < static_cast<int64_t>(dims.size()) ||
                  index_vector_size != 1) {
                dims.insert(dims.begin() + d.index_vector_dim, index_vector_size);
              }
            }
            shape = Shape::Array(PrimitiveType::kS32, dims);
            note = "element type assumed s32";
          }
        }
      }
      if (shape.has_value()) source = absl::StrCat("inferred from ", user.name());
    }
    const UnresolvedOperand& first = *list.front();
    if (!shape.has_value()) {
      return ErrorAt(first.offset,
                     absl::StrCat("'", name,
                                  "' is not defined in the paste and its shape cannot "
                                  "be inferred from '",
                                  first.user->name(),
                                  "'; paste its definition or write its shape before it, e.g. "
                                  "'f32[8] ",
                                  name, "'"));
    }
    auto parameter = std::make_unique<HloInstruction>(HloOpcode::kParameter, name, *shape);
    parameter->set_parameter_number(next_parameter);
    parameter->set_location(LocationOf(first.offset));
    computation->AddInstruction(std::move(parameter));
    warnings_.push_back(
        Warning(first.offset,
                absl::StrCat("'", name, "' is not defined in the paste; it becomes parameter(",
                             next_parameter, ") with shape ",
                             shape->IsTuple() && shape->tuple_size() > 5
                                 ? absl::StrCat("(a ", shape->tuple_size(), "-element tuple)")
                                 : shape->ToString(false),
                             " (", source, note.empty() ? "" : "; ", note, ")")));
    ++next_parameter;
  }
  return absl::OkStatus();
}

absl::Status Parser::ResolveComputation(const ParsedComputation& parsed,
                                        std::vector<size_t>* unresolved) {
  HloComputation* computation = parsed.computation;
  // In the order the instructions were completed, each one's operands in order.
  std::stable_sort(unresolved->begin(), unresolved->end(), [&](size_t a, size_t b) {
    return unresolved_[a].ordinal < unresolved_[b].ordinal;
  });
  if (options_.fragment) {
    absl::Status status = AddFragmentParameters(computation, *unresolved);
    if (!status.ok()) return status;
  }
  for (size_t i : *unresolved) {
    const UnresolvedOperand& operand = unresolved_[i];
    HloInstruction* target = computation->FindInstruction(operand.name);
    if (target == nullptr) {
      return ErrorAt(operand.offset, absl::StrCat("use of undefined instruction '", operand.name,
                                                  "' in computation '", computation->name(), "'"));
    }
    operand.user->ReplaceOperand(operand.operand_index, target);
  }
  if (computation->instruction_count() == 0) {
    return ErrorAt(parsed.offset,
                   absl::StrCat("computation '", computation->name(), "' has no instructions"));
  }
  // The root was set when the computation was read (written ROOT, else the last statement).
  if (computation->root() == nullptr) {
    computation->set_root(computation->instructions().back().get());
  }
  return absl::OkStatus();
}

absl::Status Parser::InferMissingShapes(const ParsedComputation& parsed,
                                        const std::vector<size_t>& missing,
                                        const std::vector<size_t>& written) {
  HloComputation* computation = parsed.computation;
  // When every operand named an earlier instruction, the text order is the post order (what
  // PostOrder() would return) and there is no cycle.
  std::vector<HloInstruction*> order;
  if (parsed.out_of_order) {
    order = computation->PostOrder();
    if (order.empty()) {
      return ErrorAt(parsed.offset, absl::StrCat("computation '", computation->name(),
                                                 "' has a cycle: an instruction depends on "
                                                 "itself"));
    }
  }
  if (missing.empty() && written.empty()) return absl::OkStatus();
  if (!parsed.out_of_order) {
    order.reserve(computation->instructions().size());
    for (const auto& instruction : computation->instructions()) {
      order.push_back(instruction.get());
    }
  }
  absl::flat_hash_map<const HloInstruction*, size_t> missing_offset;
  for (size_t i : missing) {
    missing_offset.emplace(missing_shapes_[i].instruction, missing_shapes_[i].offset);
  }
  absl::flat_hash_map<const HloInstruction*, std::vector<size_t>> written_of;
  for (size_t i : written) written_of[written_shapes_[i].user].push_back(i);
  for (HloInstruction* instruction : order) {
    if (auto it = missing_offset.find(instruction); it != missing_offset.end()) {
      const size_t offset = it->second;
      absl::StatusOr<Shape> shape =
          InferShape(*instruction, module_->has_num_partitions() ? module_->num_partitions() : 0,
                     module_->has_replica_count() ? module_->replica_count() : 0);
      if (!shape.ok()) {
        if (absl::IsUnimplemented(shape.status())) {
          return ErrorAt(offset, absl::StrCat("cannot infer the shape of '", instruction->name(),
                                              "' (", HloOpcodeString(instruction->opcode()),
                                              "); write it before the opcode"));
        }
        return ErrorAt(offset, shape.status().message());
      }
      instruction->set_shape(*std::move(shape));
    }
    auto it = written_of.find(instruction);
    if (it == written_of.end()) continue;
    for (size_t i : it->second) {
      const WrittenOperandShape& operand = written_shapes_[i];
      const Shape& defined = instruction->operand(operand.operand_index)->shape();
      if (defined.IsValid() && !defined.Compatible(*operand.shape)) {
        return ErrorAt(operand.offset,
                       absl::StrCat("operand '", operand.name, "' is written as ",
                                    operand.shape->ToString(false), " but it is defined as ",
                                    defined.ToString(false)));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ParsedModule> Parser::ParseModule() {
  if (source_.text().size() > kMaxInputBytes) {
    return absl::InvalidArgumentError(absl::StrCat(source_.path(), ":1:1: error: the input is ",
                                                   source_.text().size(),
                                                   " bytes; inputs over 1 GiB are not accepted"));
  }
  module_ = std::make_unique<HloModule>("fragment");
  module_->set_source_path(source_.path());
  lex_.SkipSpace();
  const bool has_header = absl::StartsWith(source_.text().substr(lex_.pos()), "HloModule");
  absl::Status status;
  if (options_.fragment && !has_header) {
    PendingComputation pending;
    pending.computation = module_->AddComputation(std::make_unique<HloComputation>("fragment"));
    pending.computation->set_location({1, 1});
    entry_ = pending.computation;
    status = ParseInstructionList(&pending, /*until_brace=*/false);
    if (!status.ok()) return status;
    if (pending.completed == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_.path(), ":1:1: error: the fragment holds no complete statement"));
    }
    computations_.push_back({pending.computation, pending.offset, pending.out_of_order});
  } else {
    status = ParseHeader();
    if (!status.ok()) return status;
    while (!lex_.AtEnd()) {
      status = ParseComputation();
      if (!status.ok()) return status;
    }
    if (lex_.unterminated_comment() != std::string::npos) {
      return ErrorAt(lex_.unterminated_comment(), "unterminated /* comment");
    }
    if (computations_.empty()) return Error("the module has no computations");
  }
  if (options_.honor_num_devices_comment && !module_->has_num_partitions()) {
    absl::string_view first_line = source_.Line(1);
    const size_t at = first_line.find("num_devices=");
    if (absl::StartsWith(first_line, "//") && at != absl::string_view::npos) {
      int64_t n = 0;
      absl::string_view digits = first_line.substr(at + 12);
      size_t len = 0;
      while (len < digits.size() && std::isdigit(static_cast<unsigned char>(digits[len]))) ++len;
      if (absl::SimpleAtoi(digits.substr(0, len), &n) && n >= 1 && n <= (int64_t{1} << 24)) {
        module_->set_num_partitions(n);
      }
    }
  }
  status = ResolveCalls();
  if (!status.ok()) return status;
  // The rare per-instruction records, by computation.
  struct Records {
    std::vector<size_t> unresolved;
    std::vector<size_t> missing;
    std::vector<size_t> written;
  };
  absl::flat_hash_map<const HloComputation*, Records> records;
  for (size_t i = 0; i < unresolved_.size(); ++i) {
    records[unresolved_[i].user->parent()].unresolved.push_back(i);
  }
  for (size_t i = 0; i < missing_shapes_.size(); ++i) {
    records[missing_shapes_[i].instruction->parent()].missing.push_back(i);
  }
  for (size_t i = 0; i < written_shapes_.size(); ++i) {
    records[written_shapes_[i].user->parent()].written.push_back(i);
  }
  Records none;
  for (const ParsedComputation& parsed : computations_) {
    Records* r = &none;
    if (!records.empty()) {
      auto it = records.find(parsed.computation);
      if (it != records.end()) r = &it->second;
    }
    status = ResolveComputation(parsed, &r->unresolved);
    if (!status.ok()) return status;
    status = InferMissingShapes(parsed, r->missing, r->written);
    if (!status.ok()) return status;
  }
  module_->set_entry(entry_ != nullptr ? entry_ : computations_.back().computation);
  ParsedModule result;
  result.module = std::move(module_);
  result.warnings = std::move(warnings_);
  return result;
}

absl::StatusOr<Shape> Parser::ParseWholeShape() {
  Shape shape;
  absl::Status status = ParseShape(&shape);
  if (!status.ok()) return status;
  if (!lex_.AtEnd()) return Error("unexpected text after the shape");
  return shape;
}

absl::StatusOr<HloSharding> Parser::ParseWholeSharding() {
  HloSharding sharding;
  absl::Status status = ParseSharding(&sharding);
  if (!status.ok()) return status;
  if (!lex_.AtEnd()) return Error("unexpected text after the sharding");
  return sharding;
}

absl::StatusOr<ReplicaGroups> Parser::ParseWholeReplicaGroups() {
  ReplicaGroups groups;
  absl::Status status = ParseReplicaGroups(&groups);
  if (!status.ok()) return status;
  if (!lex_.AtEnd()) return Error("unexpected text after the replica groups");
  return groups;
}

absl::StatusOr<Literal> Parser::ParseWholeLiteral(const Shape& given) {
  Shape shape = given;
  if (!shape.IsValid()) {
    // `SHAPE VALUES`: the values follow the shape directly, so no layout is read here
    // (`s32[2] {1, 2}` is values, not a layout).
    absl::Status status = ParseShape(&shape, 0, /*allow_layout=*/false);
    if (!status.ok()) return status;
  }
  Literal literal;
  absl::Status status = ParseLiteral(shape, &literal);
  if (!status.ok()) return status;
  if (!lex_.AtEnd()) return Error("unexpected text after the literal");
  return literal;
}

}  // namespace

absl::StatusOr<ParsedModule> ParseHloModule(absl::string_view text, const ParseOptions& options) {
  Parser parser(text, options);
  absl::StatusOr<ParsedModule> parsed = parser.ParseModule();
  // A statement's error is kept unformatted while a fragment is read; none should get here.
  if (!parsed.ok()) return parser.Formatted(parsed.status());
  return parsed;
}

absl::StatusOr<Shape> ParseShape(absl::string_view text) {
  ParseOptions options;
  return Parser(text, options).ParseWholeShape();
}

absl::StatusOr<HloSharding> ParseSharding(absl::string_view text) {
  ParseOptions options;
  return Parser(text, options).ParseWholeSharding();
}

absl::StatusOr<ReplicaGroups> ParseReplicaGroups(absl::string_view text) {
  ParseOptions options;
  return Parser(text, options).ParseWholeReplicaGroups();
}

absl::StatusOr<Literal> ParseLiteral(absl::string_view text, const Shape& shape) {
  ParseOptions options;
  return Parser(text, options).ParseWholeLiteral(shape);
}

}  // namespace spmdcheck
