// Collective ops (spec §3.3, §3.5): all-reduce, all-gather, reduce-scatter, all-to-all,
// collective-permute, collective-broadcast and the async start/done pairs. Each collective
// handler computes every executing device at once from the groups of CollectiveGroups().
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "ir/float_types.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "oracle/collective_groups.h"
#include "oracle/element_type_dispatch.h"
#include "oracle/kernel_util.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {
namespace {

std::string Ids(absl::Span<const int64_t> ids) {
  return absl::StrCat("{", absl::StrJoin(ids, ","), "}");
}

std::string Str(const Shape& shape) { return shape.ToString(/*print_layout=*/false); }

// ---- Leaves ------------------------------------------------------------------------------------

void CollectLeaves(const Literal& literal, std::vector<const Literal*>* out) {
  if (literal.shape().IsTuple()) {
    for (const Literal& element : literal.tuple_elements()) CollectLeaves(element, out);
    return;
  }
  out->push_back(&literal);
}

void CollectShapeLeaves(const Shape& shape, std::vector<const Shape*>* out) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes()) CollectShapeLeaves(element, out);
    return;
  }
  out->push_back(&shape);
}

// Rebuilds a literal of `shape`'s tuple structure from its leaves (consumed from `next`).
Literal BuildFromLeaves(const Shape& shape, std::vector<Literal>& leaves, size_t& next) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& element : shape.tuple_shapes()) {
      elements.push_back(BuildFromLeaves(element, leaves, next));
    }
    Literal result = Literal::Tuple(std::move(elements));
    return result;
  }
  return std::move(leaves[next++]);
}

// Same element type and dims (layouts ignored).
bool SameArray(const Shape& a, const Shape& b) {
  return a.IsArray() && b.IsArray() && a.Compatible(b);
}

// ---- Participants ------------------------------------------------------------------------------

struct Group {
  std::vector<int64_t> ids;       // flattened device ids, rank order
  std::vector<size_t> positions;  // index of each member in args.devices
};

// The groups of the instruction that contain an executing device; each must be complete.
absl::StatusOr<std::vector<Group>> ExecutingGroups(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  if (args.operands == nullptr || args.operands->size() != args.devices.size()) {
    return InstructionError(instruction, "operand values do not match the executing devices");
  }
  for (size_t i = 0; i < args.devices.size(); ++i) {
    const std::vector<const Literal*>& ops = (*args.operands)[i];
    if (static_cast<int64_t>(ops.size()) != instruction.operand_count()) {
      return InstructionError(
          instruction, absl::StrCat("device ", args.devices[i], " has ", ops.size(),
                                    " operand values, expected ", instruction.operand_count()));
    }
    for (const Literal* op : ops) {
      if (op == nullptr) {
        return InstructionError(instruction,
                                absl::StrCat("device ", args.devices[i], " has a null operand"));
      }
    }
  }
  absl::StatusOr<std::vector<std::vector<int64_t>>> groups =
      CollectiveGroups(instruction, args.num_partitions, args.replica_count);
  if (!groups.ok()) return groups.status();
  const int64_t total = args.num_partitions * args.replica_count;
  std::vector<int64_t> where(total, -1);
  for (size_t i = 0; i < args.devices.size(); ++i) {
    const int64_t d = args.devices[i];
    if (d < 0 || d >= total) {
      return InstructionError(
          instruction, absl::StrCat("executing device ", d, " is out of range [0, ", total, ")"));
    }
    if (where[d] != -1) {
      return InstructionError(instruction,
                              absl::StrCat("device ", d, " is listed twice as executing"));
    }
    where[d] = static_cast<int64_t>(i);
  }
  std::vector<Group> out;
  for (std::vector<int64_t>& ids : *groups) {
    std::vector<int64_t> present, missing;
    for (int64_t id : ids) (where[id] >= 0 ? present : missing).push_back(id);
    if (present.empty()) continue;
    if (!missing.empty()) {
      return InstructionError(instruction,
                              absl::StrCat("devices ", Ids(missing), " of group ", Ids(ids),
                                           " do not execute this collective together with devices ",
                                           Ids(present), " (a participant never arrives)"));
    }
    Group group;
    for (int64_t id : ids) group.positions.push_back(static_cast<size_t>(where[id]));
    group.ids = std::move(ids);
    out.push_back(std::move(group));
  }
  return out;
}

// The array leaves of every operand of every member of `group`, checked to be arrays with
// contents and to agree in shape across members. leaves[k] = member k's leaves.
absl::StatusOr<std::vector<std::vector<const Literal*>>> MemberLeaves(const CollectiveArgs& args,
                                                                      const Group& group) {
  const HloInstruction& instruction = *args.instruction;
  std::vector<std::vector<const Literal*>> leaves(group.positions.size());
  for (size_t k = 0; k < group.positions.size(); ++k) {
    for (const Literal* operand : (*args.operands)[group.positions[k]]) {
      CollectLeaves(*operand, &leaves[k]);
    }
    for (const Literal* leaf : leaves[k]) {
      if (!leaf->shape().IsArray()) {
        return InstructionError(instruction,
                                absl::StrCat("operand of device ", group.ids[k], " has a ",
                                             Str(leaf->shape()), " leaf; arrays expected"));
      }
      if (leaf->elided()) {
        return Unsupported(instruction, "an elided (unknown) literal operand");
      }
    }
  }
  for (size_t k = 1; k < leaves.size(); ++k) {
    bool same = leaves[k].size() == leaves[0].size();
    for (size_t j = 0; same && j < leaves[k].size(); ++j) {
      same = leaves[k][j]->shape().Compatible(leaves[0][j]->shape());
    }
    if (!same) {
      auto shapes = [](const std::vector<const Literal*>& ls) {
        std::vector<std::string> parts;
        for (const Literal* l : ls) parts.push_back(Str(l->shape()));
        return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
      };
      return InstructionError(
          instruction,
          absl::StrCat("members of group ", Ids(group.ids),
                       " disagree on the operand shape: device ", group.ids[0], " has ",
                       shapes(leaves[0]), ", device ", group.ids[k], " has ", shapes(leaves[k])));
    }
  }
  return leaves;
}

// Checks that the result leaves `written` have the shapes `expected`.
absl::Status CheckResultLeaves(const HloInstruction& instruction,
                               const std::vector<const Shape*>& written,
                               const std::vector<Shape>& expected) {
  if (written.size() != expected.size()) {
    return InstructionError(instruction,
                            absl::StrCat("result shape has ", written.size(),
                                         " array leaves but the operands give ", expected.size()));
  }
  for (size_t j = 0; j < written.size(); ++j) {
    if (!SameArray(*written[j], expected[j])) {
      return InstructionError(instruction,
                              absl::StrCat("result leaf ", j, " is ", Str(*written[j]),
                                           " but the operands give ", Str(expected[j])));
    }
  }
  return absl::OkStatus();
}

// The single dimension of `dimensions={d}`, checked against every leaf's rank.
absl::StatusOr<int64_t> OneDimension(const HloInstruction& instruction,
                                     const std::vector<const Literal*>& leaves) {
  const auto& dims = instruction.attrs().dimensions;
  if (!dims || dims->size() != 1) {
    return InstructionError(instruction, "expects exactly one dimension in dimensions={d}");
  }
  const int64_t d = (*dims)[0];
  for (const Literal* leaf : leaves) {
    if (d < 0 || d >= leaf->shape().rank()) {
      return InstructionError(
          instruction,
          absl::StrCat("dimension ", d, " is out of range for operand ", Str(leaf->shape())));
    }
  }
  return d;
}

// A fresh array literal of `shape` (checked size).
absl::StatusOr<Literal> NewArray(const Shape& shape) { return Literal::CreateChecked(shape); }

// ---- Data movement (byte level, every element type) -------------------------------------------

int64_t Product(absl::Span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

void CopyBytes(uint8_t* to, const uint8_t* from, int64_t bytes) {
  if (bytes > 0) std::memcpy(to, from, static_cast<size_t>(bytes));
}

// out = concatenation of `parts` (equal shapes) along dim d.
void ConcatAlong(absl::Span<const Literal* const> parts, int64_t d, Literal* out) {
  const std::vector<int64_t>& dims = parts[0]->shape().dimensions();
  const int64_t width = parts[0]->element_byte_width();
  const int64_t outer = Product(absl::MakeConstSpan(dims).subspan(0, d));
  const int64_t inner = Product(absl::MakeConstSpan(dims).subspan(d)) * width;
  const int64_t n = static_cast<int64_t>(parts.size());
  uint8_t* dst = out->raw_data();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      CopyBytes(dst + (o * n + k) * inner, parts[k]->raw_data() + o * inner, inner);
    }
  }
}

// out = block j of n equal blocks of `in` along dim d.
void BlockAlong(const Literal& in, int64_t d, int64_t n, int64_t j, Literal* out) {
  const std::vector<int64_t>& dims = in.shape().dimensions();
  const int64_t width = in.element_byte_width();
  const int64_t outer = Product(absl::MakeConstSpan(dims).subspan(0, d));
  const int64_t rest = Product(absl::MakeConstSpan(dims).subspan(d + 1)) * width;
  const int64_t size = dims[d];
  const int64_t block = size / n;
  uint8_t* dst = out->raw_data();
  for (int64_t o = 0; o < outer; ++o) {
    CopyBytes(dst + o * block * rest, in.raw_data() + (o * size + j * block) * rest, block * rest);
  }
}

// ---- Reduction ---------------------------------------------------------------------------------

struct Reducer {
  const HloComputation* computation = nullptr;
  ReducerKind kind = ReducerKind::kOther;
  bool swapped = false;                          // root is op(p1, p0): f(acc, x) = op(x, acc)
  PrimitiveType type = PrimitiveType::kInvalid;  // parameter/root element type
};

absl::StatusOr<Reducer> GetReducer(const HloInstruction& instruction) {
  Reducer reducer;
  reducer.computation = instruction.called_computation("to_apply");
  if (reducer.computation == nullptr) {
    return InstructionError(instruction, "missing to_apply computation");
  }
  reducer.kind = MatchBinaryReducer(*reducer.computation);
  if (reducer.kind != ReducerKind::kOther) {
    const std::vector<HloInstruction*> params = reducer.computation->parameters();
    const HloInstruction* root = reducer.computation->root();
    const PrimitiveType type = root->shape().element_type();
    if (params.size() != 2 || params[0] == nullptr || params[1] == nullptr ||
        !params[0]->shape().IsScalar() || !params[1]->shape().IsScalar() ||
        params[0]->shape().element_type() != type || params[1]->shape().element_type() != type) {
      reducer.kind = ReducerKind::kOther;
    } else {
      reducer.type = type;
      reducer.swapped = root->operand(0) == params[1];
    }
  }
  return reducer;
}

template <typename T, typename Op>
void FoldTyped(Literal* acc, const Literal& x, bool swapped, Op op) {
  absl::Span<T> a = acc->data<T>();
  absl::Span<const T> b = x.data<T>();
  const size_t n = a.size();
  if (swapped) {
    for (size_t e = 0; e < n; ++e) a[e] = op(b[e], a[e]);
  } else {
    for (size_t e = 0; e < n; ++e) a[e] = op(a[e], b[e]);
  }
}

// The evaluator's float maximum/minimum: NaN of the lhs first, then of the rhs, else std::max /
// std::min (which return the lhs on ties, e.g. max(-0, +0) = -0).
template <typename F>
F FloatMax(F l, F r) {
  if (std::isnan(l)) return l;
  if (std::isnan(r)) return r;
  return std::max(l, r);
}
template <typename F>
F FloatMin(F l, F r) {
  if (std::isnan(l)) return l;
  if (std::isnan(r)) return r;
  return std::min(l, r);
}

template <typename T>
bool FoldInteger(Literal* acc, const Literal& x, const Reducer& r) {
  auto wrap = [](uint64_t v) { return static_cast<T>(v); };
  switch (r.kind) {
    case ReducerKind::kAdd:
      FoldTyped<T>(acc, x, false, [&](T a, T b) {
        return wrap(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      });
      return true;
    case ReducerKind::kMultiply:
      FoldTyped<T>(acc, x, false, [&](T a, T b) {
        return wrap(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      });
      return true;
    case ReducerKind::kMaximum:
      FoldTyped<T>(acc, x, false, [](T a, T b) { return std::max(a, b); });
      return true;
    case ReducerKind::kMinimum:
      FoldTyped<T>(acc, x, false, [](T a, T b) { return std::min(a, b); });
      return true;
    case ReducerKind::kAnd:
      FoldTyped<T>(acc, x, false, [](T a, T b) { return static_cast<T>(a & b); });
      return true;
    case ReducerKind::kOr:
      FoldTyped<T>(acc, x, false, [](T a, T b) { return static_cast<T>(a | b); });
      return true;
    case ReducerKind::kXor:
      FoldTyped<T>(acc, x, false, [](T a, T b) { return static_cast<T>(a ^ b); });
      return true;
    default:
      return false;
  }
}

bool FoldPred(Literal* acc, const Literal& x, const Reducer& r) {
  switch (r.kind) {
    case ReducerKind::kAnd:
    case ReducerKind::kMinimum:
      FoldTyped<uint8_t>(acc, x, false, [](uint8_t a, uint8_t b) -> uint8_t { return a & b; });
      return true;
    case ReducerKind::kOr:
    case ReducerKind::kMaximum:
      FoldTyped<uint8_t>(acc, x, false, [](uint8_t a, uint8_t b) -> uint8_t { return a | b; });
      return true;
    case ReducerKind::kXor:
      FoldTyped<uint8_t>(acc, x, false, [](uint8_t a, uint8_t b) -> uint8_t { return a ^ b; });
      return true;
    default:
      return false;  // add/multiply on pred: left to the computation
  }
}

template <typename F>
bool FoldFloat(Literal* acc, const Literal& x, const Reducer& r) {
  switch (r.kind) {
    case ReducerKind::kAdd:
      FoldTyped<F>(acc, x, r.swapped, [](F a, F b) { return a + b; });
      return true;
    case ReducerKind::kMultiply:
      FoldTyped<F>(acc, x, r.swapped, [](F a, F b) { return a * b; });
      return true;
    case ReducerKind::kMaximum:
      FoldTyped<F>(acc, x, r.swapped, FloatMax<F>);
      return true;
    case ReducerKind::kMinimum:
      FoldTyped<F>(acc, x, r.swapped, FloatMin<F>);
      return true;
    default:
      return false;
  }
}

// bf16, f16, f8: each step in f32, rounded back to the narrow type (nearest even).
bool FoldNarrow(Literal* acc, const Literal& x, const Reducer& r) {
  const PrimitiveType type = acc->shape().element_type();
  float (*op)(float, float) = nullptr;
  switch (r.kind) {
    case ReducerKind::kAdd:
      op = [](float a, float b) { return a + b; };
      break;
    case ReducerKind::kMultiply:
      op = [](float a, float b) { return a * b; };
      break;
    case ReducerKind::kMaximum:
      op = [](float a, float b) { return FloatMax<float>(a, b); };
      break;
    case ReducerKind::kMinimum:
      op = [](float a, float b) { return FloatMin<float>(a, b); };
      break;
    default:
      return false;
  }
  const int64_t n = acc->element_count();
  for (int64_t e = 0; e < n; ++e) {
    const float a = NarrowBitsToFloat(type, static_cast<uint32_t>(acc->GetBits(e)));
    const float b = NarrowBitsToFloat(type, static_cast<uint32_t>(x.GetBits(e)));
    const float v = r.swapped ? op(b, a) : op(a, b);
    acc->SetBits(e, FloatToNarrowBits(type, v));
  }
  return true;
}

// acc = f(acc, x) elementwise through a fast kernel; false when there is none for the type.
bool FoldFast(Literal* acc, const Literal& x, const Reducer& r) {
  if (r.kind == ReducerKind::kOther || r.type != acc->shape().element_type()) return false;
  return DispatchElementTypeIfHandled(r.type, [&](auto tag) -> bool {
    using Tag = decltype(tag);
    if constexpr (Tag::kIsPred) {
      return FoldPred(acc, x, r);
    } else if constexpr (Tag::kIsNativeInteger) {
      return FoldInteger<typename Tag::Storage>(acc, x, r);
    } else if constexpr (Tag::kIsNativeFloat) {
      return FoldFloat<typename Tag::Storage>(acc, x, r);
    } else if constexpr (Tag::kIsNarrowFloat) {
      return FoldNarrow(acc, x, r);
    } else {
      return false;
    }
  });
}

// acc = f(acc, x) elementwise by calling the computation on scalars.
absl::Status FoldByCall(const HloInstruction& instruction, const Reducer& r, const CallFn& call,
                        Literal* acc, const Literal& x) {
  if (!call) {
    return InstructionError(instruction, "no evaluator for the to_apply computation");
  }
  const Shape scalar = Shape::Scalar(acc->shape().element_type());
  const int64_t width = acc->element_byte_width();
  Literal a(scalar), b(scalar);
  const int64_t n = acc->element_count();
  for (int64_t e = 0; e < n; ++e) {
    CopyBytes(a.raw_data(), acc->raw_data() + e * width, width);
    CopyBytes(b.raw_data(), x.raw_data() + e * width, width);
    const Literal* const call_args[] = {&a, &b};
    absl::StatusOr<Literal> v = call(*r.computation, call_args);
    if (!v.ok()) return v.status();
    if (!v->shape().IsArray() || !v->shape().Compatible(scalar) || v->elided()) {
      return InstructionError(instruction,
                              absl::StrCat("to_apply ", r.computation->name(), " returned ",
                                           Str(v->shape()), " for ", Str(scalar), " operands"));
    }
    CopyBytes(acc->raw_data() + e * width, v->raw_data(), width);
  }
  return absl::OkStatus();
}

// Left fold in rank order: acc = x_0; acc = f(acc, x_i).
absl::StatusOr<Literal> FoldMembers(const HloInstruction& instruction, const Reducer& r,
                                    const CallFn& call, absl::Span<const Literal* const> xs) {
  Literal acc = *xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    if (FoldFast(&acc, *xs[i], r)) continue;
    absl::Status status = FoldByCall(instruction, r, call, &acc, *xs[i]);
    if (!status.ok()) return status;
  }
  return acc;
}

// Per group, per leaf j: the left fold of member leaves j. reduced[j].
absl::StatusOr<std::vector<Literal>> ReduceLeaves(
    const CollectiveArgs& args, const Reducer& r,
    const std::vector<std::vector<const Literal*>>& leaves) {
  std::vector<Literal> reduced;
  const size_t num_leaves = leaves[0].size();
  std::vector<const Literal*> xs(leaves.size());
  for (size_t j = 0; j < num_leaves; ++j) {
    for (size_t k = 0; k < leaves.size(); ++k) xs[k] = leaves[k][j];
    absl::StatusOr<Literal> value = FoldMembers(*args.instruction, r, args.call, xs);
    if (!value.ok()) return value.status();
    reduced.push_back(*std::move(value));
  }
  return reduced;
}

// Gives `literal` the written shape (layout included); shapes are compatible by construction.
Literal WithShape(Literal literal, const Shape& shape) {
  if (literal.shape() == shape) return literal;
  Literal out(shape);
  CopyBytes(out.raw_data(), literal.raw_data(), std::min(out.size_bytes(), literal.size_bytes()));
  return out;
}

// ---- Handlers ----------------------------------------------------------------------------------

using Results = std::vector<Literal>;

// Runs `per_group(group, leaves, results)` for every executing group; results[k] (Literal for
// the member at rank k) is stored at its device position.
template <typename Fn>
absl::StatusOr<Results> ForEachGroup(const CollectiveArgs& args, Fn&& per_group) {
  if (args.instruction == nullptr) {
    return absl::InvalidArgumentError("collective called without an instruction");
  }
  absl::StatusOr<std::vector<Group>> groups = ExecutingGroups(args);
  if (!groups.ok()) return groups.status();
  Results out(args.devices.size());
  for (const Group& group : *groups) {
    absl::StatusOr<std::vector<std::vector<const Literal*>>> leaves = MemberLeaves(args, group);
    if (!leaves.ok()) return leaves.status();
    absl::StatusOr<std::vector<Literal>> results = per_group(group, *leaves);
    if (!results.ok()) return results.status();
    for (size_t k = 0; k < group.positions.size(); ++k) {
      out[group.positions[k]] = std::move((*results)[k]);
    }
  }
  return out;
}

// Member results from per-member leaf lists, in the tuple structure of `shape`.
absl::StatusOr<Results> Assemble(const Shape& shape, std::vector<std::vector<Literal>> per_member) {
  Results out;
  for (std::vector<Literal>& leaves : per_member) {
    size_t next = 0;
    out.push_back(BuildFromLeaves(shape, leaves, next));
  }
  return out;
}

std::vector<Shape> LeafShapes(const std::vector<const Literal*>& leaves) {
  std::vector<Shape> shapes;
  for (const Literal* leaf : leaves) shapes.push_back(leaf->shape());
  return shapes;
}

// all-reduce / all-reduce-start: every member gets the fold of all members' operands.
absl::StatusOr<Results> AllReduce(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  absl::StatusOr<Reducer> reducer = GetReducer(instruction);
  if (!reducer.ok()) return reducer.status();
  std::vector<const Shape*> written;
  CollectShapeLeaves(instruction.shape(), &written);
  return ForEachGroup(
      args,
      [&](const Group& group,
          const std::vector<std::vector<const Literal*>>& leaves) -> absl::StatusOr<Results> {
        absl::Status status = CheckResultLeaves(instruction, written, LeafShapes(leaves[0]));
        if (!status.ok()) return status;
        absl::StatusOr<std::vector<Literal>> reduced = ReduceLeaves(args, *reducer, leaves);
        if (!reduced.ok()) return reduced.status();
        std::vector<std::vector<Literal>> per_member(group.ids.size());
        for (size_t k = 0; k < group.ids.size(); ++k) {
          for (size_t j = 0; j < written.size(); ++j) {
            per_member[k].push_back(WithShape((*reduced)[j], *written[j]));
          }
        }
        return Assemble(instruction.shape(), std::move(per_member));
      });
}

// The gathered leaves of one group (one literal per leaf; identical on every member).
absl::StatusOr<std::vector<Literal>> GatherGroup(
    const HloInstruction& instruction, const std::vector<const Shape*>& written,
    const std::vector<std::vector<const Literal*>>& leaves) {
  absl::StatusOr<int64_t> d = OneDimension(instruction, leaves[0]);
  if (!d.ok()) return d.status();
  const int64_t n = static_cast<int64_t>(leaves.size());
  std::vector<Shape> expected;
  for (const Literal* leaf : leaves[0]) {
    Shape shape = leaf->shape();
    int64_t gathered = 0;
    if (__builtin_mul_overflow(shape.dimensions(*d), n, &gathered)) {
      return InstructionError(instruction, absl::StrCat("gathered dimension overflows for ",
                                                        Str(shape), " over ", n, " members"));
    }
    shape.set_dimensions(*d, gathered);
    shape.clear_layout();
    expected.push_back(std::move(shape));
  }
  absl::Status status = CheckResultLeaves(instruction, written, expected);
  if (!status.ok()) return status;
  std::vector<Literal> gathered;
  std::vector<const Literal*> parts(leaves.size());
  for (size_t j = 0; j < written.size(); ++j) {
    absl::StatusOr<Literal> out = NewArray(*written[j]);
    if (!out.ok()) return out.status();
    for (size_t k = 0; k < leaves.size(); ++k) parts[k] = leaves[k][j];
    ConcatAlong(parts, *d, &*out);
    gathered.push_back(*std::move(out));
  }
  return gathered;
}

// all-gather: concatenation along d in rank order.
absl::StatusOr<Results> AllGather(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  std::vector<const Shape*> written;
  CollectShapeLeaves(instruction.shape(), &written);
  return ForEachGroup(
      args,
      [&](const Group& group,
          const std::vector<std::vector<const Literal*>>& leaves) -> absl::StatusOr<Results> {
        absl::StatusOr<std::vector<Literal>> gathered = GatherGroup(instruction, written, leaves);
        if (!gathered.ok()) return gathered.status();
        std::vector<std::vector<Literal>> per_member(group.ids.size());
        for (size_t k = 0; k < group.ids.size(); ++k) {
          for (const Literal& leaf : *gathered) per_member[k].push_back(leaf);
        }
        return Assemble(instruction.shape(), std::move(per_member));
      });
}

// all-gather-start: (operand(s), gathered result(s)) as written.
absl::StatusOr<Results> AllGatherStart(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() != 2) {
    return InstructionError(
        instruction, absl::StrCat("shape ", Str(shape), " must be a tuple (operands, results)"));
  }
  std::vector<const Shape*> inputs, written;
  CollectShapeLeaves(shape.tuple_shapes()[0], &inputs);
  CollectShapeLeaves(shape.tuple_shapes()[1], &written);
  return ForEachGroup(
      args,
      [&](const Group& group,
          const std::vector<std::vector<const Literal*>>& leaves) -> absl::StatusOr<Results> {
        absl::Status status = CheckResultLeaves(instruction, inputs, LeafShapes(leaves[0]));
        if (!status.ok()) return status;
        absl::StatusOr<std::vector<Literal>> gathered = GatherGroup(instruction, written, leaves);
        if (!gathered.ok()) return gathered.status();
        Results out;
        for (size_t k = 0; k < group.ids.size(); ++k) {
          std::vector<Literal> in;
          for (size_t j = 0; j < inputs.size(); ++j)
            in.push_back(WithShape(*leaves[k][j], *inputs[j]));
          std::vector<Literal> res = *gathered;
          size_t next_in = 0, next_res = 0;
          std::vector<Literal> elements;
          elements.push_back(BuildFromLeaves(shape.tuple_shapes()[0], in, next_in));
          elements.push_back(BuildFromLeaves(shape.tuple_shapes()[1], res, next_res));
          out.push_back(Literal::Tuple(std::move(elements)));
        }
        return out;
      });
}

// Checks that dim d of every leaf splits into n equal blocks.
absl::Status CheckDivisible(const HloInstruction& instruction, const Group& group,
                            const std::vector<const Literal*>& leaves, int64_t d) {
  const int64_t n = static_cast<int64_t>(group.ids.size());
  for (const Literal* leaf : leaves) {
    if (leaf->shape().dimensions(d) % n != 0) {
      return InstructionError(instruction, absl::StrCat("dimension ", d, " of ", Str(leaf->shape()),
                                                        " is not divisible by the size ", n,
                                                        " of group ", Ids(group.ids)));
    }
  }
  return absl::OkStatus();
}

// reduce-scatter: reduce, then the member at rank i keeps block i along d.
absl::StatusOr<Results> ReduceScatter(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  absl::StatusOr<Reducer> reducer = GetReducer(instruction);
  if (!reducer.ok()) return reducer.status();
  std::vector<const Shape*> written;
  CollectShapeLeaves(instruction.shape(), &written);
  return ForEachGroup(
      args,
      [&](const Group& group,
          const std::vector<std::vector<const Literal*>>& leaves) -> absl::StatusOr<Results> {
        absl::StatusOr<int64_t> d = OneDimension(instruction, leaves[0]);
        if (!d.ok()) return d.status();
        absl::Status status = CheckDivisible(instruction, group, leaves[0], *d);
        if (!status.ok()) return status;
        const int64_t n = static_cast<int64_t>(group.ids.size());
        std::vector<Shape> expected;
        for (const Literal* leaf : leaves[0]) {
          Shape shape = leaf->shape();
          shape.set_dimensions(*d, shape.dimensions(*d) / n);
          shape.clear_layout();
          expected.push_back(std::move(shape));
        }
        status = CheckResultLeaves(instruction, written, expected);
        if (!status.ok()) return status;
        absl::StatusOr<std::vector<Literal>> reduced = ReduceLeaves(args, *reducer, leaves);
        if (!reduced.ok()) return reduced.status();
        std::vector<std::vector<Literal>> per_member(group.ids.size());
        for (int64_t k = 0; k < n; ++k) {
          for (size_t j = 0; j < written.size(); ++j) {
            Literal block(*written[j]);
            BlockAlong((*reduced)[j], *d, n, k, &block);
            per_member[k].push_back(std::move(block));
          }
        }
        return Assemble(instruction.shape(), std::move(per_member));
      });
}

// all-to-all. Array form (dimensions={d}): chunk j of member i's operand goes to member j, which
// concatenates the received chunks along d in sender order. Tuple form: operand j of member i
// becomes result element i of member j.
absl::StatusOr<Results> AllToAll(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  const bool array_form = instruction.attrs().dimensions.has_value();
  if (array_form && instruction.operand_count() != 1) {
    return InstructionError(instruction,
                            absl::StrCat("the array form (dimensions={d}) takes one operand, not ",
                                         instruction.operand_count()));
  }
  std::vector<const Shape*> written;
  CollectShapeLeaves(instruction.shape(), &written);
  return ForEachGroup(
      args,
      [&](const Group& group,
          const std::vector<std::vector<const Literal*>>& leaves) -> absl::StatusOr<Results> {
        const int64_t n = static_cast<int64_t>(group.ids.size());
        for (const size_t position : group.positions) {
          for (const Literal* operand : (*args.operands)[position]) {
            if (!operand->shape().IsArray()) {
              return InstructionError(instruction, absl::StrCat("operands must be arrays, not ",
                                                                Str(operand->shape())));
            }
          }
        }
        Results out;
        if (array_form) {
          if (leaves[0].size() != 1) {
            return InstructionError(instruction, "the array form needs an array operand");
          }
          absl::StatusOr<int64_t> d = OneDimension(instruction, leaves[0]);
          if (!d.ok()) return d.status();
          absl::Status status = CheckDivisible(instruction, group, leaves[0], *d);
          if (!status.ok()) return status;
          if (instruction.shape().IsTuple()) {
            return InstructionError(instruction, "the array form has an array result");
          }
          status = CheckResultLeaves(instruction, written, LeafShapes(leaves[0]));
          if (!status.ok()) return status;
          const Shape& shape = leaves[0][0]->shape();
          const int64_t width = leaves[0][0]->element_byte_width();
          const std::vector<int64_t>& dims = shape.dimensions();
          const int64_t outer = Product(absl::MakeConstSpan(dims).subspan(0, *d));
          const int64_t rest = Product(absl::MakeConstSpan(dims).subspan(*d + 1)) * width;
          const int64_t size = dims[*d];
          const int64_t block = size / n;
          for (int64_t i = 0; i < n; ++i) {
            Literal result(instruction.shape());
            for (int64_t o = 0; o < outer; ++o) {
              for (int64_t j = 0; j < n; ++j) {
                // Block i of sender j lands at block j of receiver i.
                CopyBytes(result.raw_data() + (o * size + j * block) * rest,
                          leaves[j][0]->raw_data() + (o * size + i * block) * rest, block * rest);
              }
            }
            out.push_back(std::move(result));
          }
          return out;
        }
        if (instruction.operand_count() != n) {
          return InstructionError(instruction,
                                  absl::StrCat("the tuple form needs one operand per member: ",
                                               instruction.operand_count(), " operands but group ",
                                               Ids(group.ids), " has ", n, " members"));
        }
        if (static_cast<int64_t>(leaves[0].size()) != n) {
          return InstructionError(instruction, "the tuple form needs array operands");
        }
        const Shape& shape = instruction.shape();
        if (!shape.IsTuple() || shape.tuple_size() != n) {
          return InstructionError(instruction, absl::StrCat("result ", Str(shape),
                                                            " must be a tuple of ", n, " arrays"));
        }
        for (int64_t i = 0; i < n; ++i) {
          std::vector<Literal> elements;
          for (int64_t j = 0; j < n; ++j) {
            // Result element j of member i = operand i of member j.
            const Literal& sent = *leaves[j][i];
            const Shape& element = shape.tuple_shapes()[j];
            if (!SameArray(element, sent.shape())) {
              return InstructionError(instruction,
                                      absl::StrCat("result element ", j, " is ", Str(element),
                                                   " but device ", group.ids[j], " sends ",
                                                   Str(sent.shape()), " (its operand ", i, ")"));
            }
            elements.push_back(WithShape(sent, element));
          }
          out.push_back(Literal::Tuple(std::move(elements)));
        }
        return out;
      });
}

// collective-permute: per group (every partition of a replica with a channel_id, every replica of
// a partition without), the member at rank t receives the operand of rank s for each pair (s, t);
// members that are no target get zeros. Returns the permuted leaves per member.
absl::StatusOr<std::vector<std::vector<Literal>>> PermuteGroup(
    const HloInstruction& instruction, const Group& group,
    const std::vector<std::vector<const Literal*>>& leaves,
    const std::vector<const Shape*>& written) {
  absl::Status status = CheckResultLeaves(instruction, written, LeafShapes(leaves[0]));
  if (!status.ok()) return status;
  const int64_t n = static_cast<int64_t>(group.ids.size());
  std::vector<int64_t> source_of(n, -1);
  for (const auto& [source, target] : *instruction.attrs().source_target_pairs) {
    source_of[target] = source;
  }
  std::vector<std::vector<Literal>> per_member(n);
  for (int64_t t = 0; t < n; ++t) {
    for (size_t j = 0; j < written.size(); ++j) {
      if (source_of[t] < 0) {
        per_member[t].push_back(Literal(*written[j]));
      } else {
        per_member[t].push_back(WithShape(*leaves[source_of[t]][j], *written[j]));
      }
    }
  }
  return per_member;
}

absl::Status CheckPermute(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  if (instruction.operand_count() != 1) {
    return Unsupported(instruction,
                       absl::StrCat("collective-permute with ", instruction.operand_count(),
                                    " operands (the in-place or combined form)"));
  }
  if (instruction.FindRawAttribute("slice_sizes") != nullptr) {
    return Unsupported(instruction, "collective-permute with slice_sizes (in-place form)");
  }
  const auto& pairs = instruction.attrs().source_target_pairs;
  if (!pairs) return InstructionError(instruction, "missing source_target_pairs");
  const bool channel = instruction.attrs().channel_id.has_value();
  const int64_t limit = channel ? args.num_partitions : args.replica_count;
  std::vector<char> source_seen(std::max<int64_t>(limit, 0), 0);
  std::vector<char> target_seen(std::max<int64_t>(limit, 0), 0);
  for (const auto& [source, target] : *pairs) {
    for (int64_t id : {source, target}) {
      if (id < 0 || id >= limit) {
        return InstructionError(
            instruction, absl::StrCat(channel ? "partition" : "replica", " id ", id,
                                      " in source_target_pairs is out of range [0, ", limit, ")"));
      }
    }
    if (source_seen[source]++) {
      return InstructionError(
          instruction, absl::StrCat("source ", source, " appears twice in source_target_pairs"));
    }
    if (target_seen[target]++) {
      return InstructionError(
          instruction, absl::StrCat("target ", target, " appears twice in source_target_pairs"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Results> CollectivePermute(const CollectiveArgs& args) {
  if (args.instruction == nullptr) {
    return absl::InvalidArgumentError("collective called without an instruction");
  }
  const HloInstruction& instruction = *args.instruction;
  absl::Status status = CheckPermute(args);
  if (!status.ok()) return status;
  std::vector<const Shape*> written;
  CollectShapeLeaves(instruction.shape(), &written);
  return ForEachGroup(
      args,
      [&](const Group& group,
          const std::vector<std::vector<const Literal*>>& leaves) -> absl::StatusOr<Results> {
        absl::StatusOr<std::vector<std::vector<Literal>>> permuted =
            PermuteGroup(instruction, group, leaves, written);
        if (!permuted.ok()) return permuted.status();
        return Assemble(instruction.shape(), *std::move(permuted));
      });
}

// collective-permute-start: (operand, permuted, u32[] contexts...) as written; context elements
// are zeros of their written shapes.
absl::StatusOr<Results> CollectivePermuteStart(const CollectiveArgs& args) {
  if (args.instruction == nullptr) {
    return absl::InvalidArgumentError("collective called without an instruction");
  }
  const HloInstruction& instruction = *args.instruction;
  absl::Status status = CheckPermute(args);
  if (!status.ok()) return status;
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() < 2) {
    return InstructionError(
        instruction,
        absl::StrCat("shape ", Str(shape), " must be a tuple (operand, result, contexts...)"));
  }
  std::vector<const Shape*> inputs, written;
  CollectShapeLeaves(shape.tuple_shapes()[0], &inputs);
  CollectShapeLeaves(shape.tuple_shapes()[1], &written);
  for (int64_t e = 2; e < shape.tuple_size(); ++e) {
    if (!shape.tuple_shapes()[e].IsArray()) {
      return InstructionError(instruction, absl::StrCat("context element ", e, " of ", Str(shape),
                                                        " must be an array"));
    }
  }
  return ForEachGroup(
      args,
      [&](const Group& group,
          const std::vector<std::vector<const Literal*>>& leaves) -> absl::StatusOr<Results> {
        absl::Status check = CheckResultLeaves(instruction, inputs, LeafShapes(leaves[0]));
        if (!check.ok()) return check;
        absl::StatusOr<std::vector<std::vector<Literal>>> permuted =
            PermuteGroup(instruction, group, leaves, written);
        if (!permuted.ok()) return permuted.status();
        Results out;
        for (size_t k = 0; k < group.ids.size(); ++k) {
          std::vector<Literal> in;
          for (size_t j = 0; j < inputs.size(); ++j)
            in.push_back(WithShape(*leaves[k][j], *inputs[j]));
          size_t next_in = 0, next_res = 0;
          std::vector<Literal> elements;
          elements.push_back(BuildFromLeaves(shape.tuple_shapes()[0], in, next_in));
          elements.push_back(BuildFromLeaves(shape.tuple_shapes()[1], (*permuted)[k], next_res));
          for (int64_t e = 2; e < shape.tuple_size(); ++e) {
            absl::StatusOr<Literal> zeros = NewArray(shape.tuple_shapes()[e]);
            if (!zeros.ok()) return zeros.status();
            elements.push_back(*std::move(zeros));
          }
          out.push_back(Literal::Tuple(std::move(elements)));
        }
        return out;
      });
}

// collective-broadcast: every member gets the operand of the first member of its group.
absl::StatusOr<Results> CollectiveBroadcast(const CollectiveArgs& args) {
  const HloInstruction& instruction = *args.instruction;
  std::vector<const Shape*> written;
  CollectShapeLeaves(instruction.shape(), &written);
  return ForEachGroup(
      args,
      [&](const Group& group,
          const std::vector<std::vector<const Literal*>>& leaves) -> absl::StatusOr<Results> {
        absl::Status status = CheckResultLeaves(instruction, written, LeafShapes(leaves[0]));
        if (!status.ok()) return status;
        std::vector<std::vector<Literal>> per_member(group.ids.size());
        for (size_t k = 0; k < group.ids.size(); ++k) {
          for (size_t j = 0; j < written.size(); ++j) {
            per_member[k].push_back(WithShape(*leaves[0][j], *written[j]));
          }
        }
        return Assemble(instruction.shape(), std::move(per_member));
      });
}

// Guards the instruction pointer for the handlers that do not check it themselves.
template <absl::StatusOr<Results> (*Fn)(const CollectiveArgs&)>
absl::StatusOr<Results> Guarded(const CollectiveArgs& args) {
  if (args.instruction == nullptr) {
    return absl::InvalidArgumentError("collective called without an instruction");
  }
  return Fn(args);
}

// ---- -done ops (per device) -------------------------------------------------------------------

// Copies `value` as the instruction's written shape, which must match.
absl::StatusOr<Literal> AsWritten(const HloInstruction& instruction, const Literal& value) {
  if (!value.shape().Compatible(instruction.shape())) {
    return InstructionError(
        instruction, absl::StrCat("operand value ", Str(value.shape()),
                                  " does not match the result shape ", Str(instruction.shape())));
  }
  return value;
}

absl::StatusOr<Literal> TupleElement1(const HloInstruction& instruction,
                                      absl::Span<const Literal* const> operands) {
  if (operands.size() != 1 || operands[0] == nullptr) {
    return InstructionError(instruction, "expects one operand");
  }
  const Literal& start = *operands[0];
  if (!start.shape().IsTuple() || start.tuple_size() < 2) {
    return InstructionError(instruction, absl::StrCat("operand ", Str(start.shape()),
                                                      " is not the tuple of an async start"));
  }
  return AsWritten(instruction, start.tuple_elements()[1]);
}

absl::StatusOr<Literal> AllGatherDone(const HloInstruction& instruction,
                                      absl::Span<const Literal* const> operands,
                                      const EvalEnv& /*env*/) {
  if (operands.size() == 1 && operands[0] != nullptr && operands[0]->shape().IsTuple() &&
      operands[0]->tuple_size() != 2) {
    return InstructionError(instruction, absl::StrCat("operand ", Str(operands[0]->shape()),
                                                      " is not an all-gather-start tuple"));
  }
  return TupleElement1(instruction, operands);
}

absl::StatusOr<Literal> CollectivePermuteDone(const HloInstruction& instruction,
                                              absl::Span<const Literal* const> operands,
                                              const EvalEnv& /*env*/) {
  return TupleElement1(instruction, operands);
}

absl::StatusOr<Literal> AllReduceDone(const HloInstruction& instruction,
                                      absl::Span<const Literal* const> operands,
                                      const EvalEnv& /*env*/) {
  if (operands.size() != 1 || operands[0] == nullptr) {
    return InstructionError(instruction, "expects one operand");
  }
  return AsWritten(instruction, *operands[0]);
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& registry) {
  registry.RegisterCollective(HloOpcode::kAllReduce, Guarded<AllReduce>);
  registry.RegisterCollective(HloOpcode::kAllReduceStart, Guarded<AllReduce>);
  registry.RegisterCollective(HloOpcode::kAllGather, Guarded<AllGather>);
  registry.RegisterCollective(HloOpcode::kAllGatherStart, Guarded<AllGatherStart>);
  registry.RegisterCollective(HloOpcode::kReduceScatter, Guarded<ReduceScatter>);
  registry.RegisterCollective(HloOpcode::kAllToAll, Guarded<AllToAll>);
  registry.RegisterCollective(HloOpcode::kCollectivePermute, CollectivePermute);
  registry.RegisterCollective(HloOpcode::kCollectivePermuteStart, CollectivePermuteStart);
  registry.RegisterCollective(HloOpcode::kCollectiveBroadcast, Guarded<CollectiveBroadcast>);
  registry.Register(HloOpcode::kAllGatherDone, AllGatherDone);
  registry.Register(HloOpcode::kAllReduceDone, AllReduceDone);
  registry.Register(HloOpcode::kCollectivePermuteDone, CollectivePermuteDone);
}

}  // namespace spmdcheck::oracle
