#include "ir/hlo_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/lexer.h"
#include "ir/shape_inference.h"
#include "ir/source_text.h"

namespace spmdcheck {
namespace {

// An operand reference waiting for its computation to be complete.
struct PendingOperand {
  std::string name;
  size_t offset = 0;
  std::optional<Shape> written_shape;
};

// A computation reference waiting for all computations to be parsed.
struct PendingCall {
  HloInstruction* instruction = nullptr;
  size_t called_index = 0;  // Index into instruction->mutable_called().
  std::vector<std::pair<std::string, size_t>> names;  // (name, offset)
};

struct PendingInstruction {
  HloInstruction* instruction = nullptr;
  std::vector<PendingOperand> operands;
  bool has_shape = true;
  size_t offset = 0;
};

struct PendingComputation {
  HloComputation* computation = nullptr;
  std::vector<PendingInstruction> instructions;
  HloInstruction* root = nullptr;
  size_t offset = 0;
};

class Parser {
 public:
  Parser(absl::string_view text, const ParseOptions& options)
      : options_(options), source_(options.path, text), lex_(text) {}

  absl::StatusOr<ParsedModule> ParseModule();

  // Standalone entry points; each checks that nothing follows.
  absl::StatusOr<Shape> ParseWholeShape();
  absl::StatusOr<HloSharding> ParseWholeSharding();
  absl::StatusOr<ReplicaGroups> ParseWholeReplicaGroups();
  absl::StatusOr<Literal> ParseWholeLiteral(const Shape& shape);

 private:
  // ---- errors ----
  absl::Status ErrorAt(size_t offset, absl::string_view message) const {
    return absl::InvalidArgumentError(source_.FormatError(offset, message));
  }
  absl::Status Error(absl::string_view message) {
    lex_.SkipSpace();
    return ErrorAt(lex_.pos(), message);
  }
  absl::Status Expect(char c, absl::string_view context) {
    if (lex_.TryConsume(c)) return absl::OkStatus();
    if (lex_.AtEnd()) {
      return Error(absl::StrCat("expected '", std::string(1, c), "' ", context,
                                " but the input ends here (is the text cut off?)"));
    }
    return Error(absl::StrCat("expected '", std::string(1, c), "' ", context, " but found '",
                              std::string(1, lex_.Peek()), "'"));
  }
  std::string Warning(size_t offset, absl::string_view message) const {
    return absl::StrCat(source_.path(), ":", source_.LineOf(offset), ":",
                        source_.ColumnOf(offset), ": warning: ", message);
  }
  SourceLocation LocationOf(size_t offset) const {
    return {source_.LineOf(offset), source_.ColumnOf(offset)};
  }

  // ---- pieces ----
  absl::Status ParseShape(Shape* shape, int depth = 0, bool allow_layout = true);
  bool AtShapeStart();
  absl::Status ParseLayout(Shape* shape);
  absl::Status ParseInt(int64_t* value, absl::string_view what);
  absl::Status ParseIntList(char open, char close, std::vector<int64_t>* values,
                            absl::string_view what);
  absl::Status ParseBool(bool* value);
  absl::Status ParseSharding(HloSharding* sharding);
  absl::Status ParseSingleSharding(HloSharding* sharding);
  absl::Status ParseTileAssignment(TileAssignment* tiles, bool allow_list,
                                   bool* single_device_list);
  absl::Status ParseReplicaGroups(ReplicaGroups* groups);
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
  absl::Status ParseOperands(PendingComputation* pending, PendingInstruction* instruction,
                             int depth);
  absl::Status ParseAttribute(PendingComputation* pending, PendingInstruction* instruction);
  absl::Status ParseCalledComputations(HloInstruction* instruction, absl::string_view role,
                                       bool is_list);
  absl::Status ResolveComputation(PendingComputation* pending);
  absl::Status ResolveCalls();
  absl::Status InferMissingShapes(PendingComputation* pending);
  absl::Status AddFragmentParameters(PendingComputation* pending);
  std::optional<Shape> InferUndefinedOperandShape(const HloInstruction& user,
                                                  int64_t operand_count, int64_t index,
                                                  std::string* note);
  void SkipToNextStatement();
  std::string FreshName(absl::string_view base);

  const ParseOptions& options_;
  SourceText source_;
  Lexer lex_;
  std::unique_ptr<HloModule> module_;
  std::vector<PendingComputation> computations_;
  std::vector<PendingCall> pending_calls_;
  std::vector<std::string> warnings_;
  HloComputation* entry_ = nullptr;
  int64_t fresh_counter_ = 0;
};

// ===================================================================== shapes

bool Parser::AtShapeStart() {
  const char c = lex_.Peek();
  if (c == '(') return true;
  absl::string_view name = lex_.PeekName();
  if (name.empty() || lex_.PeekRaw() == '%') return false;
  if (!PrimitiveTypeFromName(name).has_value()) return false;
  const size_t after = static_cast<size_t>(name.data() - lex_.text().data()) + name.size();
  return after < lex_.text().size() && lex_.text()[after] == '[';
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
        Shape element;
        absl::Status status = ParseShape(&element, depth + 1);
        if (!status.ok()) return status;
        elements.push_back(std::move(element));
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
    return ErrorAt(start, type_name.empty() ? "expected a shape"
                                            : absl::StrCat("unknown element type '", type_name,
                                                           "'"));
  }
  if (lex_.PeekRaw() != '[') return Error("expected '[' after the element type");
  lex_.TryConsume('[');
  std::vector<int64_t> dims;
  std::vector<DimensionKind> kinds;
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
    *shape = Shape::Token();
  } else {
    *shape = Shape::Array(*type, dims);
    for (size_t i = 0; i < kinds.size(); ++i) shape->set_dimension_kind(i, kinds[i]);
    // Large shapes are fine as types (partitioner tests use them); only materialising one
    // (a constant, a run) is limited to kMaxArrayElements. A count past int64 is an error.
    if (!CheckedProduct(dims).has_value()) {
      return ErrorAt(start, absl::StrCat("shape ", shape->ToString(false),
                                         " has more than 2^63 elements"));
    }
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
    absl::string_view text = lex_.text();
    while (p < text.size()) {
      if (text[p] == '(') ++depth;
      if (text[p] == ')') --depth;
      if (text[p] == '}' && depth == 0) break;
      ++p;
    }
    if (p >= text.size()) return ErrorAt(start, "unterminated layout");
    layout.extension = std::string(text.substr(start, p - start));
    lex_.set_pos(p);
  }
  absl::Status status = Expect('}', "to close the layout");
  if (!status.ok()) return status;
  if (shape->IsArray() && !layout.minor_to_major.empty() &&
      static_cast<int64_t>(layout.minor_to_major.size()) != shape->rank()) {
    return Error(absl::StrCat("layout ", layout.ToString(), " has ",
                              layout.minor_to_major.size(), " entries but the shape has rank ",
                              shape->rank()));
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
  absl::Status status = Expect(open, absl::StrCat("to open ", what));
  if (!status.ok()) return status;
  values->clear();
  if (lex_.TryConsume(close)) return absl::OkStatus();
  do {
    int64_t v = 0;
    status = ParseInt(&v, absl::StrCat("an integer in ", what));
    if (!status.ok()) return status;
    values->push_back(v);
  } while (lex_.TryConsume(','));
  return Expect(close, absl::StrCat("to close ", what));
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
    } else if (!is_attr && (word == "mesh" || word == "maximal_mesh")) {
      return ErrorAt(item, "named (mesh) shardings are not supported yet");
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
      return ErrorAt(start, absl::StrCat("the sharding has ", subgroup_types.size(),
                                         " subgroup dims but only ", tiles->num_dimensions(),
                                         " tile dims"));
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

absl::Status Parser::ParseReplicaGroups(ReplicaGroups* groups) {
  const size_t start = lex_.pos();
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
      return ErrorAt(start, absl::StrCat("a source-target pair needs exactly 2 ids, not ",
                                         pair.size()));
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
      return ErrorAt(start,
                     absl::StrCat(token, " is out of range for ", PrimitiveTypeName(type)));
    }
    literal->SetInt64(index, v);
  } else {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(token, &v)) {
      return ErrorAt(start, absl::StrCat("'", token, "' is out of range"));
    }
    const int value_bits = type == PrimitiveType::kPred ? 1 : (is_signed ? bits - 1 : bits);
    if (value_bits < 64 && v >= (uint64_t{1} << value_bits)) {
      return ErrorAt(start,
                     absl::StrCat(token, " is out of range for ", PrimitiveTypeName(type)));
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
    return ErrorAt(start, absl::StrCat("dimension ", dim, " of the literal has ", count,
                                       " entries but the shape ", shape.ToString(false),
                                       " needs ", size));
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
      return ErrorAt(item, "expected a window field (size=, stride=, pad=, lhs_dilate=, "
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
      status = ParseInt(&v, absl::StrCat("a value of window ", field));
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
  while (p < text.size() && (std::isalnum(static_cast<unsigned char>(text[p])) ||
                             text[p] == '_' || text[p] == '-' || text[p] == '>' ||
                             text[p] == '?')) {
    ++p;
  }
  absl::string_view labels = text.substr(start, p - start);
  lex_.set_pos(p);
  const size_t underscore = labels.find('_');
  const size_t arrow = labels.find("->");
  if (underscore == absl::string_view::npos || arrow == absl::string_view::npos ||
      arrow < underscore) {
    return ErrorAt(start, absl::StrCat("malformed dim_labels '", labels,
                                       "' (expected e.g. b01f_01io->b01f)"));
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
    call.names.push_back({std::string(name), offset});
    return absl::OkStatus();
  };
  absl::Status status;
  if (is_list) {
    status = Expect('{', absl::StrCat("to open ", role));
    if (!status.ok()) return status;
    if (!lex_.TryConsume('}')) {
      do {
        status = read_name();
        if (!status.ok()) return status;
      } while (lex_.TryConsume(','));
      status = Expect('}', absl::StrCat("to close ", role));
      if (!status.ok()) return status;
    }
  } else {
    if (lex_.Peek() == '{') {
      // An inline computation body.
      const size_t offset = lex_.pos();
      std::string name = FreshName(absl::StrCat(instruction->name(), ".", role));
      PendingComputation inline_body;
      inline_body.computation = module_->AddComputation(std::make_unique<HloComputation>(name));
      inline_body.computation->set_location(LocationOf(offset));
      inline_body.offset = offset;
      lex_.TryConsume('{');
      status = ParseInstructionList(&inline_body, /*until_brace=*/true);
      if (!status.ok()) return status;
      computations_.push_back(std::move(inline_body));
      call.names.push_back({name, offset});
    } else {
      status = read_name();
      if (!status.ok()) return status;
    }
  }
  instruction->mutable_called().push_back({std::string(role), {}, is_list});
  pending_calls_.push_back(std::move(call));
  return absl::OkStatus();
}

absl::Status Parser::ParseAttribute(PendingComputation* pending, PendingInstruction* pi) {
  (void)pending;
  HloInstruction* instruction = pi->instruction;
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  absl::string_view name = lex_.ConsumeIdentifier();
  if (name.empty()) return Error("expected an attribute name after ','");
  if (!lex_.TryConsume('=')) return Error(absl::StrCat("expected '=' after '", name, "'"));
  HloAttributes& a = instruction->mutable_attrs();
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
    if (!a.dot_dimension_numbers) a.dot_dimension_numbers.emplace();
    return *a.dot_dimension_numbers;
  };
  auto gather = [&]() -> GatherDimensionNumbers& {
    if (!a.gather_dimension_numbers) a.gather_dimension_numbers.emplace();
    return *a.gather_dimension_numbers;
  };
  auto scatter = [&]() -> ScatterDimensionNumbers& {
    if (!a.scatter_dimension_numbers) a.scatter_dimension_numbers.emplace();
    return *a.scatter_dimension_numbers;
  };
  const bool is_gather = op == HloOpcode::kGather;
  const bool is_scatter = op == HloOpcode::kScatter;

  if (name == "sharding") {
    HloSharding sharding;
    absl::Status s = ParseSharding(&sharding);
    if (!s.ok()) return s;
    // A tuple-shaped instruction with a non-tuple sharding: that sharding on every leaf.
    instruction->set_sharding(std::move(sharding));
    return absl::OkStatus();
  }
  if (name == "dimensions") return int_list(&a.dimensions);
  if (name == "slice") {
    std::vector<SliceDim> slice;
    absl::Status s = ParseSlice(&slice);
    if (s.ok()) a.slice = std::move(slice);
    return s;
  }
  if (name == "dynamic_slice_sizes") return int_list(&a.dynamic_slice_sizes);
  if (name == "padding" && op == HloOpcode::kPad) {
    std::vector<PadDim> padding;
    absl::Status s = ParsePadding(&padding);
    if (s.ok()) a.padding = std::move(padding);
    return s;
  }
  if (name == "iota_dimension") return one_int(&a.iota_dimension);
  if (name == "index" && op == HloOpcode::kGetTupleElement) return one_int(&a.tuple_index);
  if (name == "direction") {
    absl::string_view d = lex_.ConsumeIdentifier();
    std::optional<ComparisonDirection> dir = ComparisonDirectionFromName(d);
    if (!dir) return ErrorAt(start, absl::StrCat("unknown comparison direction '", d, "'"));
    a.direction = *dir;
    return absl::OkStatus();
  }
  if (name == "type" && op == HloOpcode::kCompare) {
    a.comparison_type = std::string(lex_.ConsumeIdentifier());
    if (a.comparison_type->empty()) return Error("expected a comparison type");
    return absl::OkStatus();
  }
  if (name == "lhs_batch_dims") return int_list_into(&dot().lhs_batch);
  if (name == "rhs_batch_dims") return int_list_into(&dot().rhs_batch);
  if (name == "lhs_contracting_dims") return int_list_into(&dot().lhs_contracting);
  if (name == "rhs_contracting_dims") return int_list_into(&dot().rhs_contracting);
  if (name == "window") {
    std::vector<WindowDim> window;
    absl::Status s = ParseWindow(&window);
    if (s.ok()) a.window = std::move(window);
    return s;
  }
  if (name == "dim_labels") {
    ConvolutionDimensionNumbers dnums;
    absl::Status s = ParseDimLabels(&dnums);
    if (s.ok()) a.dim_labels = std::move(dnums);
    return s;
  }
  if (name == "feature_group_count") return one_int(&a.feature_group_count);
  if (name == "batch_group_count") return one_int(&a.batch_group_count);
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
  if (is_gather && name == "slice_sizes") return int_list(&a.gather_slice_sizes);
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
  if (name == "indices_are_sorted") return one_bool(&a.indices_are_sorted);
  if (name == "unique_indices") return one_bool(&a.unique_indices);
  if (name == "is_stable") return one_bool(&a.is_stable);
  if (name == "channel_id") return one_int(&a.channel_id);
  if (name == "replica_groups") {
    ReplicaGroups groups;
    absl::Status s = ParseReplicaGroups(&groups);
    if (s.ok()) a.replica_groups = std::move(groups);
    return s;
  }
  if (name == "use_global_device_ids") return one_bool(&a.use_global_device_ids);
  if (name == "constrain_layout") return one_bool(&a.constrain_layout);
  if (name == "source_target_pairs") {
    SourceTargetPairs pairs;
    absl::Status s = ParseSourceTargetPairs(&pairs);
    if (s.ok()) a.source_target_pairs = std::move(pairs);
    return s;
  }
  if (name == "custom_call_target") {
    absl::StatusOr<std::string> target = lex_.ConsumeString();
    if (!target.ok()) return Error(target.status().message());
    a.custom_call_target = *std::move(target);
    return absl::OkStatus();
  }
  if (name == "kind" && op == HloOpcode::kFusion) {
    a.fusion_kind = std::string(lex_.ConsumeIdentifier());
    return absl::OkStatus();
  }
  if (name == "distribution" && op == HloOpcode::kRng) {
    a.distribution = std::string(lex_.ConsumeIdentifier());
    return absl::OkStatus();
  }
  if (name == "to_apply" || name == "condition" || name == "body" ||
      name == "true_computation" || name == "false_computation" ||
      (name == "calls" && op != HloOpcode::kCustomCall) ||
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

// ============================================================== instructions

std::string Parser::FreshName(absl::string_view base) {
  return absl::StrCat(base, ".", ++fresh_counter_);
}

absl::Status Parser::ParseOperands(PendingComputation* pending, PendingInstruction* pi,
                                   int depth) {
  if (depth > kMaxNestingDepth) {
    return Error(absl::StrCat("operands nested deeper than ", kMaxNestingDepth, " levels"));
  }
  if (lex_.TryConsume(')')) return absl::OkStatus();
  do {
    lex_.SkipSpace();
    std::optional<Shape> written;
    if (AtShapeStart()) {
      Shape shape;
      absl::Status status = ParseShape(&shape);
      if (!status.ok()) return status;
      written = std::move(shape);
    }
    lex_.SkipSpace();
    const size_t offset = lex_.pos();
    absl::string_view name = lex_.ConsumeName();
    if (name.empty()) {
      if (lex_.AtEnd()) return Error("operand list is cut off: the input ends inside '(...)'");
      return Error("expected an operand name");
    }
    if (lex_.PeekRaw() == '(' && StringToHloOpcode(name).has_value()) {
      // A nested anonymous instruction: `add(f32[] x, f32[] negate(y))`.
      const HloOpcode opcode = *StringToHloOpcode(name);
      lex_.TryConsume('(');
      auto nested = std::make_unique<HloInstruction>(opcode, FreshName(name),
                                                     written.value_or(Shape()));
      nested->set_location(LocationOf(offset));
      PendingInstruction nested_pending;
      nested_pending.instruction = pending->computation->AddInstruction(std::move(nested));
      nested_pending.has_shape = written.has_value();
      nested_pending.offset = offset;
      absl::Status status = ParseOperands(pending, &nested_pending, depth + 1);
      if (!status.ok()) return status;
      pi->operands.push_back({nested_pending.instruction->name(), offset, std::nullopt});
      pending->instructions.push_back(std::move(nested_pending));
      continue;
    }
    pi->operands.push_back({std::string(name), offset, std::move(written)});
  } while (lex_.TryConsume(','));
  return Expect(')', "to close the operand list");
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
  std::optional<Shape> shape;
  if (AtShapeStart()) {
    Shape s;
    absl::Status status = ParseShape(&s);
    if (!status.ok()) return status;
    shape = std::move(s);
  }
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
  auto instruction = std::make_unique<HloInstruction>(*opcode, std::string(name),
                                                      shape.value_or(Shape()));
  instruction->set_location(LocationOf(start));
  PendingInstruction pi;
  pi.instruction = instruction.get();
  pi.has_shape = shape.has_value();
  pi.offset = start;
  HloInstruction* raw = pending->computation->AddInstruction(std::move(instruction));
  absl::Status status = Expect('(', absl::StrCat("after the opcode '", opcode_text, "'"));
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
    if (!shape.has_value()) {
      return ErrorAt(opcode_offset, "a constant needs its shape written before 'constant'");
    }
    Literal literal;
    status = ParseLiteral(*shape, &literal);
    if (!status.ok()) return status;
    raw->set_literal(std::move(literal));
    status = Expect(')', "to close constant(...)");
    if (!status.ok()) return status;
  } else {
    status = ParseOperands(pending, &pi, 0);
    if (!status.ok()) return status;
  }
  while (lex_.TryConsume(',')) {
    status = ParseAttribute(pending, &pi);
    if (!status.ok()) return status;
  }
  if (is_root) {
    if (pending->root != nullptr) {
      return ErrorAt(start, absl::StrCat("computation '", pending->computation->name(),
                                         "' has a second ROOT"));
    }
    pending->root = raw;
  }
  pending->instructions.push_back(std::move(pi));
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
      if (lex_.TryConsume('}')) return absl::OkStatus();
      if (lex_.AtEnd()) {
        return ErrorAt(pending->offset,
                       absl::StrCat("computation '", pending->computation->name(),
                                    "' is cut off: no closing '}'"));
      }
    } else if (lex_.AtEnd()) {
      return absl::OkStatus();
    }
    const size_t start = lex_.pos();
    const int64_t instructions_before = pending->computation->instruction_count();
    const size_t pending_before = pending->instructions.size();
    HloInstruction* root_before = pending->root;
    absl::Status status = ParseInstruction(pending);
    if (status.ok()) continue;
    if (!options_.fragment) return status;
    // Fragment mode: report the statement as cut off or malformed, undo it and go on.
    pending->computation->TruncateInstructions(instructions_before);
    pending->instructions.resize(pending_before);
    pending->root = root_before;
    const int64_t first = source_.LineOf(start);
    lex_.set_pos(start);
    SkipToNextStatement();
    const size_t end = lex_.pos();
    const int64_t last =
        std::max(first, end >= source_.text().size() ? source_.LineOf(end) : source_.LineOf(end) - 1);
    std::string reason(status.message());
    const size_t newline = reason.find('\n');
    if (newline != std::string::npos) reason.resize(newline);
    warnings_.push_back(Warning(
        start, absl::StrCat("statement on lines ", first, "-", last,
                            " is cut off or malformed and was skipped (", reason, ")")));
  }
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
      Shape ignored;
      absl::Status status = ParseShape(&ignored);
      if (!status.ok()) return status;
    }
  }
  absl::Status status = Expect('{', absl::StrCat("to open computation '", name, "'"));
  if (!status.ok()) return status;
  PendingComputation pending;
  pending.computation = module_->AddComputation(std::make_unique<HloComputation>(std::string(name)));
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
  computations_.push_back(std::move(pending));
  return absl::OkStatus();
}

absl::Status Parser::ResolveCalls() {
  absl::flat_hash_set<std::string> reported;
  for (PendingCall& call : pending_calls_) {
    CalledComputations& called = call.instruction->mutable_called()[call.called_index];
    for (const auto& [name, offset] : call.names) {
      HloComputation* computation = module_->FindComputation(name);
      if (computation == nullptr) {
        if (!options_.fragment) {
          return ErrorAt(offset, absl::StrCat("unknown computation '", name, "'"));
        }
        auto opaque = std::make_unique<HloComputation>(name);
        opaque->set_opaque(true);
        opaque->set_location(LocationOf(offset));
        computation = module_->AddComputation(std::move(opaque));
      }
      if (computation->is_opaque() && reported.insert(name).second) {
        warnings_.push_back(Warning(
            offset, absl::StrCat("computation '", name,
                                 "' is not in the paste; it is kept as an opaque reference")));
      }
      called.computations.push_back(computation);
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

absl::Status Parser::AddFragmentParameters(PendingComputation* pending) {
  HloComputation* computation = pending->computation;
  int64_t next_parameter = 0;
  for (HloInstruction* p : computation->parameters()) {
    if (p != nullptr) next_parameter = std::max(next_parameter, p->parameter_number() + 1);
  }
  // Undefined names in order of first use.
  struct Use {
    PendingInstruction* user;
    int64_t index;
    const PendingOperand* operand;
  };
  std::vector<std::string> order;
  absl::flat_hash_map<std::string, std::vector<Use>> uses;
  for (PendingInstruction& pi : pending->instructions) {
    for (size_t i = 0; i < pi.operands.size(); ++i) {
      const PendingOperand& operand = pi.operands[i];
      if (computation->FindInstruction(operand.name) != nullptr) continue;
      auto [it, inserted] = uses.try_emplace(operand.name);
      if (inserted) order.push_back(operand.name);
      it->second.push_back({&pi, static_cast<int64_t>(i), &operand});
    }
  }
  for (const std::string& name : order) {
    const std::vector<Use>& list = uses[name];
    std::optional<Shape> shape;
    std::string note;
    std::string source;
    for (const Use& use : list) {
      if (use.operand->written_shape.has_value()) {
        shape = use.operand->written_shape;
        source = "written inline";
        break;
      }
    }
    for (const Use& use : list) {
      if (shape.has_value()) break;
      const HloInstruction& user = *use.user->instruction;
      const int64_t operand_count = static_cast<int64_t>(use.user->operands.size());
      shape = InferUndefinedOperandShape(user, operand_count, use.index, &note);
      // Scatter indices: updates scatter dims (+ index vector dim when inside the rank).
      if (!shape && user.opcode() == HloOpcode::kScatter && user.attrs().scatter_dimension_numbers) {
        const int64_t n = (operand_count - 1) / 2;
        const ScatterDimensionNumbers& d = *user.attrs().scatter_dimension_numbers;
        if (use.index == n && operand_count > n + 1) {
          HloInstruction* updates = computation->FindInstruction(use.user->operands[n + 1].name);
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
    const Use& first = list.front();
    if (!shape.has_value()) {
      return ErrorAt(first.operand->offset,
                     absl::StrCat("'", name, "' is not defined in the paste and its shape cannot "
                                  "be inferred from '", first.user->instruction->name(),
                                  "'; paste its definition or write its shape before it, e.g. "
                                  "'f32[8] ", name, "'"));
    }
    auto parameter =
        std::make_unique<HloInstruction>(HloOpcode::kParameter, name, *shape);
    parameter->set_parameter_number(next_parameter);
    parameter->set_location(LocationOf(first.operand->offset));
    computation->AddInstruction(std::move(parameter));
    warnings_.push_back(Warning(
        first.operand->offset,
        absl::StrCat("'", name, "' is not defined in the paste; it becomes parameter(",
                     next_parameter, ") with shape ",
                     shape->IsTuple() && shape->tuple_size() > 5
                         ? absl::StrCat("(a ", shape->tuple_size(), "-element tuple)")
                         : shape->ToString(false),
                     " (", source,
                     note.empty() ? "" : "; ", note, ")")));
    ++next_parameter;
  }
  return absl::OkStatus();
}

absl::Status Parser::ResolveComputation(PendingComputation* pending) {
  HloComputation* computation = pending->computation;
  if (options_.fragment) {
    absl::Status status = AddFragmentParameters(pending);
    if (!status.ok()) return status;
  }
  for (PendingInstruction& pi : pending->instructions) {
    for (const PendingOperand& operand : pi.operands) {
      HloInstruction* target = computation->FindInstruction(operand.name);
      if (target == nullptr) {
        return ErrorAt(operand.offset,
                       absl::StrCat("use of undefined instruction '", operand.name,
                                    "' in computation '", computation->name(), "'"));
      }
      pi.instruction->AppendOperand(target);
    }
  }
  if (computation->instruction_count() == 0) {
    return ErrorAt(pending->offset,
                   absl::StrCat("computation '", computation->name(), "' has no instructions"));
  }
  if (pending->root != nullptr) {
    computation->set_root(pending->root);
  } else if (!pending->instructions.empty()) {
    computation->set_root(pending->instructions.back().instruction);
  } else {
    computation->set_root(computation->instructions().back().get());
  }
  return absl::OkStatus();
}

absl::Status Parser::InferMissingShapes(PendingComputation* pending) {
  absl::flat_hash_map<const HloInstruction*, const PendingInstruction*> by_instruction;
  for (const PendingInstruction& pi : pending->instructions) by_instruction[pi.instruction] = &pi;
  std::vector<HloInstruction*> order = pending->computation->PostOrder();
  if (order.empty()) {
    return ErrorAt(pending->offset, absl::StrCat("computation '", pending->computation->name(),
                                                 "' has a cycle: an instruction depends on "
                                                 "itself"));
  }
  for (HloInstruction* instruction : order) {
    auto it = by_instruction.find(instruction);
    if (it == by_instruction.end()) continue;
    const PendingInstruction& pi = *it->second;
    if (!pi.has_shape) {
      absl::StatusOr<Shape> shape =
          InferShape(*instruction, module_->has_num_partitions() ? module_->num_partitions() : 0,
                     module_->has_replica_count() ? module_->replica_count() : 0);
      if (!shape.ok()) {
        if (absl::IsUnimplemented(shape.status())) {
          return ErrorAt(pi.offset, absl::StrCat("cannot infer the shape of '",
                                                 instruction->name(), "' (",
                                                 HloOpcodeString(instruction->opcode()),
                                                 "); write it before the opcode"));
        }
        return ErrorAt(pi.offset, shape.status().message());
      }
      instruction->set_shape(*std::move(shape));
    }
    for (size_t i = 0; i < pi.operands.size(); ++i) {
      const PendingOperand& operand = pi.operands[i];
      if (!operand.written_shape.has_value()) continue;
      const Shape& defined = instruction->operand(i)->shape();
      if (defined.IsValid() && !defined.Compatible(*operand.written_shape)) {
        return ErrorAt(operand.offset,
                       absl::StrCat("operand '", operand.name, "' is written as ",
                                    operand.written_shape->ToString(false),
                                    " but it is defined as ", defined.ToString(false)));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ParsedModule> Parser::ParseModule() {
  if (source_.text().size() > kMaxInputBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        source_.path(), ":1:1: error: the input is ", source_.text().size(),
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
    if (pending.instructions.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_.path(), ":1:1: error: the fragment holds no complete statement"));
    }
    computations_.push_back(std::move(pending));
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
  for (PendingComputation& pending : computations_) {
    status = ResolveComputation(&pending);
    if (!status.ok()) return status;
    status = InferMissingShapes(&pending);
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
  return parser.ParseModule();
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
