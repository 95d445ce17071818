#include "fuzz/reducer.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/hlo_printer.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace spmdcheck::fuzz {
namespace {

// ---- Copying and dead-code removal ----------------------------------------------------------
// Copies `module`; with `keep` only those instructions / computations (operands
// of kept instructions must be kept), entry parameters renumbered 0..k-1 and
// header attributes that name parameters or layouts dropped.
std::unique_ptr<HloModule> CopyModule(const HloModule& module,
                                      const absl::flat_hash_set<const HloInstruction*>* keep,
                                      const absl::flat_hash_set<const HloComputation*>* comps) {
  auto out = std::make_unique<HloModule>(module.name());
  if (module.has_num_partitions()) out->set_num_partitions(module.num_partitions());
  if (module.has_replica_count()) out->set_replica_count(module.replica_count());
  for (const RawAttribute& raw : module.raw_header_attributes()) {
    if (keep != nullptr && (raw.name == "entry_computation_layout" ||
                            raw.name == "input_output_alias" || raw.name == "buffer_donor")) {
      continue;
    }
    out->mutable_raw_header_attributes().push_back(raw);
  }
  out->set_source_path(module.source_path());
  absl::flat_hash_map<const HloComputation*, HloComputation*> cmap;
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> imap;
  for (const auto& c : module.computations()) {
    if (comps != nullptr && !comps->contains(c.get())) continue;
    HloComputation* nc = out->AddComputation(std::make_unique<HloComputation>(c->name()));
    if (!c->execution_thread().empty()) nc->set_execution_thread(c->execution_thread());
    nc->set_opaque(c->is_opaque());
    cmap[c.get()] = nc;
    for (const auto& instr : c->instructions()) {
      if (keep != nullptr && !keep->contains(instr.get())) continue;
      imap[instr.get()] = nc->AddInstruction(std::make_unique<HloInstruction>(*instr));
    }
  }
  for (const auto& c : module.computations()) {
    auto cit = cmap.find(c.get());
    if (cit == cmap.end()) continue;
    for (const auto& instr : cit->second->instructions()) {
      for (int64_t i = 0; i < instr->operand_count(); ++i) {
        auto it = imap.find(instr->operand(i));
        instr->ReplaceOperand(i, it == imap.end() ? nullptr : it->second);
      }
      if (!instr->called().empty()) {
        for (CalledComputations& called : instr->mutable_called()) {
          for (HloComputation*& callee : called.computations) {
            auto it = cmap.find(callee);
            callee = it == cmap.end() ? nullptr : it->second;
          }
        }
      }
    }
    if (c->root() != nullptr) {
      auto it = imap.find(c->root());
      cit->second->set_root(it == imap.end() ? nullptr : it->second);
    }
  }
  if (module.entry() != nullptr) {
    auto it = cmap.find(module.entry());
    out->set_entry(it == cmap.end() ? nullptr : it->second);
  }
  if (keep != nullptr && out->entry() != nullptr) {
    std::vector<HloInstruction*> params;
    for (const auto& instr : out->entry()->instructions()) {
      if (instr->opcode() == HloOpcode::kParameter) params.push_back(instr.get());
    }
    std::stable_sort(params.begin(), params.end(), [](HloInstruction* a, HloInstruction* b) {
      return a->parameter_number() < b->parameter_number();
    });
    for (size_t i = 0; i < params.size(); ++i) params[i]->set_parameter_number(i);
  }
  return out;
}

// Drops what the entry root does not need: dead instructions, unused entry
// parameters, uncalled computations (parameters of called computations stay:
// they are their signature).
std::unique_ptr<HloModule> Compact(const HloModule& module) {
  absl::flat_hash_set<const HloInstruction*> keep;
  absl::flat_hash_set<const HloComputation*> comps;
  std::vector<const HloComputation*> work;
  if (module.entry() == nullptr) return CloneModule(module);
  work.push_back(module.entry());
  comps.insert(module.entry());
  while (!work.empty()) {
    const HloComputation* c = work.back();
    work.pop_back();
    std::vector<const HloInstruction*> stack;
    if (c->root() != nullptr) stack.push_back(c->root());
    if (c != module.entry()) {
      for (const auto& instr : c->instructions()) {
        if (instr->opcode() == HloOpcode::kParameter) stack.push_back(instr.get());
      }
    }
    while (!stack.empty()) {
      const HloInstruction* instr = stack.back();
      stack.pop_back();
      if (instr == nullptr || !keep.insert(instr).second) continue;
      for (const HloInstruction* o : instr->operands()) stack.push_back(o);
      for (const HloComputation* callee : instr->AllCalledComputations()) {
        if (callee != nullptr && comps.insert(callee).second) work.push_back(callee);
      }
    }
  }
  return CopyModule(module, &keep, &comps);
}

// ---- Size measure ---------------------------------------------------------------------------
int64_t ElementsOf(const Shape& shape) {
  if (shape.IsTuple()) {
    int64_t n = 0;
    for (const Shape& s : shape.tuple_shapes()) n += ElementsOf(s);
    return n;
  }
  return shape.IsArray() ? std::min<int64_t>(shape.ElementCount(), int64_t{1} << 40) : 0;
}

int64_t ShardingCost(const HloSharding& s) {
  switch (s.kind()) {
    case HloSharding::Kind::kReplicated:
      return 1;
    case HloSharding::Kind::kTuple: {
      int64_t n = 1;
      for (const HloSharding& e : s.tuple_elements()) n += ShardingCost(e);
      return n;
    }
    case HloSharding::Kind::kTiled: {
      int64_t n = 3 + s.SubgroupDimCount();
      for (int64_t i = 0; i < s.TiledDataRank(); ++i) {
        if (s.tile_assignment().dim(i) > 1) n += 2;
      }
      return n;
    }
    default:
      return 2;
  }
}

int64_t LiteralCost(const Literal& literal) {
  if (literal.shape().IsTuple()) {
    int64_t n = 0;
    for (const Literal& e : literal.tuple_elements()) n += LiteralCost(e);
    return n;
  }
  if (literal.elided() || !literal.shape().IsArray()) return 0;
  int64_t n = 0;
  for (int64_t i = 0; i < literal.element_count(); ++i) n += literal.GetBits(i) != 0;
  return n;
}

// ---- Helpers --------------------------------------------------------------------------------
void ReplaceUses(HloComputation& c,
                 const absl::flat_hash_map<HloInstruction*, HloInstruction*>& m) {
  auto resolve = [&m](HloInstruction* x) {
    for (int guard = 0; guard < 1000; ++guard) {
      auto it = m.find(x);
      if (it == m.end()) break;
      x = it->second;
    }
    return x;
  };
  for (const auto& instr : c.instructions()) {
    if (m.contains(instr.get())) continue;
    for (int64_t i = 0; i < instr->operand_count(); ++i) {
      instr->ReplaceOperand(i, resolve(instr->operand(i)));
    }
  }
  if (c.root() != nullptr) c.set_root(resolve(c.root()));
}

std::string UniqueName(const HloComputation& c, absl::string_view stem) {
  for (int64_t k = 0;; ++k) {
    std::string name = absl::StrCat(stem, ".", k);
    if (c.FindInstruction(name) == nullptr) return name;
  }
}

int64_t NextParameterNumber(const HloComputation& c) {
  int64_t n = 0;
  for (const auto& instr : c.instructions()) {
    if (instr->opcode() == HloOpcode::kParameter) n = std::max(n, instr->parameter_number() + 1);
  }
  return n;
}

// Computations applied element by element (reducers, scatter combiners, comparators): changing
// them breaks what partitioners may assume (associativity, commutativity, an identity), so the
// reducer leaves them alone.
absl::flat_hash_set<const HloComputation*> FrozenComputations(const HloModule& m) {
  absl::flat_hash_set<const HloComputation*> out;
  for (const auto& c : m.computations()) {
    for (const auto& instr : c->instructions()) {
      for (const CalledComputations& called : instr->called()) {
        if (called.role == "to_apply" || called.role == "scatter" || called.role == "select") {
          out.insert(called.computations.begin(), called.computations.end());
        }
      }
    }
  }
  return out;
}

// Init values of reductions: they must stay the identity of the reducer (partitioners apply them
// once per shard), so no pass replaces or changes them.
absl::flat_hash_set<const HloInstruction*> ProtectedValues(const HloModule& m) {
  absl::flat_hash_set<const HloInstruction*> out;
  for (const auto& c : m.computations()) {
    for (const auto& instr : c->instructions()) {
      const int64_t n = instr->operand_count();
      switch (instr->opcode()) {
        case HloOpcode::kReduce:
        case HloOpcode::kReduceWindow:
          for (int64_t i = n / 2; i < n; ++i) out.insert(instr->operand(i));
          break;
        case HloOpcode::kSelectAndScatter:
          if (n == 3) out.insert(instr->operand(2));
          break;
        default:
          break;
      }
    }
  }
  return out;
}

// Instructions of the module (of the entry only with `entry_only`) for which `pred` holds,
// outside frozen computations and protected values.
template <typename Pred>
std::vector<HloInstruction*> Collect(const HloModule& m, bool entry_only, Pred pred,
                                     bool skip_protected = true) {
  std::vector<HloInstruction*> out;
  const absl::flat_hash_set<const HloComputation*> frozen = FrozenComputations(m);
  const absl::flat_hash_set<const HloInstruction*> protect = ProtectedValues(m);
  for (const auto& c : m.computations()) {
    if (entry_only && c.get() != m.entry()) continue;
    if (frozen.contains(c.get())) continue;
    for (const auto& instr : c->instructions()) {
      if (!(skip_protected && protect.contains(instr.get())) && pred(*c, *instr))
        out.push_back(instr.get());
    }
  }
  return out;
}

// ---- Shape propagation after a dimension shrank ---------------------------------------------
void FixAttributes(HloInstruction& instr) {
  if (instr.operand_count() == 0) return;
  const Shape& op = instr.operand(0)->shape();
  if (!op.IsArray()) return;
  const HloAttributes& attrs = instr.attrs();
  switch (instr.opcode()) {
    case HloOpcode::kSlice:
      if (attrs.slice && static_cast<int64_t>(attrs.slice->size()) == op.rank()) {
        std::vector<SliceDim> s = *attrs.slice;
        for (int64_t i = 0; i < op.rank(); ++i) {
          s[i].limit = std::min(s[i].limit, op.dimensions(i));
          s[i].start = std::min(s[i].start, std::max<int64_t>(s[i].limit - 1, 0));
        }
        if (s != *attrs.slice) instr.mutable_attrs().slice = s;
      }
      return;
    case HloOpcode::kDynamicSlice:
      if (attrs.dynamic_slice_sizes &&
          static_cast<int64_t>(attrs.dynamic_slice_sizes->size()) == op.rank()) {
        std::vector<int64_t> s = *attrs.dynamic_slice_sizes;
        for (int64_t i = 0; i < op.rank(); ++i) s[i] = std::min(s[i], op.dimensions(i));
        if (s != *attrs.dynamic_slice_sizes) instr.mutable_attrs().dynamic_slice_sizes = s;
      }
      return;
    case HloOpcode::kGather:
      if (attrs.gather_slice_sizes &&
          static_cast<int64_t>(attrs.gather_slice_sizes->size()) == op.rank()) {
        std::vector<int64_t> s = *attrs.gather_slice_sizes;
        for (int64_t i = 0; i < op.rank(); ++i) s[i] = std::min(s[i], op.dimensions(i));
        if (s != *attrs.gather_slice_sizes) instr.mutable_attrs().gather_slice_sizes = s;
      }
      return;
    default:
      return;
  }
}

bool IsEntryParameter(const HloModule& m, const HloInstruction* instr) {
  return instr->opcode() == HloOpcode::kParameter && instr->parent() == m.entry();
}

// Elementwise ops and dots whose operands disagree after a shrink: entry
// parameters among the operands follow the smaller size. True when a parameter
// changed.
bool UnifyParameters(const HloModule& m, HloInstruction& instr) {
  const HloOpcode op = instr.opcode();
  bool changed = false;
  auto set_dim = [&](HloInstruction* p, int64_t d, int64_t size) {
    if (!IsEntryParameter(m, p) || !p->shape().IsArray() || p->shape().dimensions(d) == size) {
      return;
    }
    Shape s = p->shape();
    s.set_dimensions(d, size);
    p->set_shape(s);
    changed = true;
  };
  if (ElementwiseArity(op) >= 2 || op == HloOpcode::kCompare) {
    int64_t rank = -1;
    for (const HloInstruction* o : instr.operands()) {
      if (!o->shape().IsArray()) return false;
      if (o->shape().rank() == 0) continue;
      if (rank >= 0 && o->shape().rank() != rank) return false;
      rank = o->shape().rank();
    }
    for (int64_t d = 0; d < rank; ++d) {
      int64_t min = -1;
      for (const HloInstruction* o : instr.operands()) {
        if (o->shape().rank() == 0) continue;
        min = min < 0 ? o->shape().dimensions(d) : std::min(min, o->shape().dimensions(d));
      }
      for (HloInstruction* o : instr.operands()) {
        if (o->shape().rank() != 0) set_dim(o, d, min);
      }
    }
  } else if (op == HloOpcode::kDot && instr.attrs().dot_dimension_numbers) {
    const DotDimensionNumbers& dn = *instr.attrs().dot_dimension_numbers;
    HloInstruction* lhs = instr.operand(0);
    HloInstruction* rhs = instr.operand(1);
    auto pair = [&](const std::vector<int64_t>& l, const std::vector<int64_t>& r) {
      for (size_t i = 0; i < l.size() && i < r.size(); ++i) {
        if (l[i] >= lhs->shape().rank() || r[i] >= rhs->shape().rank()) continue;
        const int64_t a = lhs->shape().dimensions(l[i]);
        const int64_t b = rhs->shape().dimensions(r[i]);
        set_dim(lhs, l[i], std::min(a, b));
        set_dim(rhs, r[i], std::min(a, b));
      }
    };
    pair(dn.lhs_batch, dn.rhs_batch);
    pair(dn.lhs_contracting, dn.rhs_contracting);
  }
  return changed;
}

bool Repropagate(HloModule& m, HloComputation& c, int depth, bool* params_changed);

// Shapes of ops shape inference leaves to the writer.
std::optional<Shape> DeriveShape(HloModule& m, HloInstruction& instr, int depth,
                                 bool* params_changed) {
  const Shape& old = instr.shape();
  auto operand = [&](int64_t i) -> const Shape& { return instr.operand(i)->shape(); };
  const HloAttributes& attrs = instr.attrs();
  switch (instr.opcode()) {
    case HloOpcode::kBroadcast: {
      if (!attrs.dimensions || !old.IsArray()) return std::nullopt;
      Shape s = old;
      const std::vector<int64_t>& map = *attrs.dimensions;
      if (static_cast<int64_t>(map.size()) != operand(0).rank()) return std::nullopt;
      for (size_t i = 0; i < map.size(); ++i) {
        if (map[i] < 0 || map[i] >= s.rank()) return std::nullopt;
        s.set_dimensions(map[i], operand(0).dimensions(i));
      }
      return s;
    }
    case HloOpcode::kConvert:
    case HloOpcode::kCopy:
    case HloOpcode::kReverse: {
      Shape s = operand(0);
      s.set_element_type(old.element_type());
      return s;
    }
    case HloOpcode::kReshape: {
      if (operand(0).ElementCount() == old.ElementCount()) return old;
      if (operand(0).rank() == old.rank()) {
        Shape s = operand(0);
        s.set_element_type(old.element_type());
        return s;
      }
      if (old.rank() == 1) return Shape::Array(old.element_type(), {operand(0).ElementCount()});
      return std::nullopt;
    }
    case HloOpcode::kTranspose: {
      if (!attrs.dimensions) return std::nullopt;
      std::vector<int64_t> dims;
      for (int64_t p : *attrs.dimensions) {
        if (p < 0 || p >= operand(0).rank()) return std::nullopt;
        dims.push_back(operand(0).dimensions(p));
      }
      return Shape::Array(old.element_type(), dims);
    }
    case HloOpcode::kSlice: {
      if (!attrs.slice) return std::nullopt;
      std::vector<int64_t> dims;
      for (const SliceDim& d : *attrs.slice) {
        if (d.stride < 1 || d.limit < d.start) return std::nullopt;
        dims.push_back((d.limit - d.start + d.stride - 1) / d.stride);
      }
      return Shape::Array(old.element_type(), dims);
    }
    case HloOpcode::kGetTupleElement: {
      if (!attrs.tuple_index || !operand(0).IsTuple() || *attrs.tuple_index < 0 ||
          *attrs.tuple_index >= operand(0).tuple_size()) {
        return std::nullopt;
      }
      return operand(0).tuple_shapes()[*attrs.tuple_index];
    }
    case HloOpcode::kWhile: {
      if (depth > 8) return std::nullopt;
      HloComputation* body = instr.called_computation("body");
      HloComputation* cond = instr.called_computation("condition");
      if (body == nullptr || cond == nullptr) return std::nullopt;
      // A copy, not a reference: the loop below re-propagates the called computations, and
      // through a call cycle (the verifier rejects only direct self-calls) that can reset this
      // operand's shape, which a reference would then follow (or outlive).
      const Shape state = operand(0);  // NOLINT(performance-unnecessary-copy-initialization)
      for (HloComputation* c : {body, cond}) {
        std::vector<HloInstruction*> params = c->parameters();
        if (params.size() != 1 || params[0] == nullptr) return std::nullopt;
        if (!params[0]->shape().Compatible(state)) params[0]->set_shape(state);
        if (!Repropagate(m, *c, depth + 1, params_changed)) return std::nullopt;
      }
      if (body->root() == nullptr || !body->root()->shape().Compatible(state)) {
        return std::nullopt;
      }
      return state;
    }
    default:
      return std::nullopt;
  }
}

bool Repropagate(HloModule& m, HloComputation& c, int depth, bool* params_changed) {
  for (HloInstruction* instr : c.PostOrder()) {
    switch (instr->opcode()) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kIota:
      case HloOpcode::kPartitionId:
      case HloOpcode::kReplicaId:
        continue;
      default:
        break;
    }
    if (UnifyParameters(m, *instr)) {
      *params_changed = true;
      return true;  // Start over: earlier users of the parameter need new shapes
                    // too.
    }
    FixAttributes(*instr);
    std::optional<Shape> next;
    absl::StatusOr<Shape> inferred = InferShape(*instr, m.num_partitions(), m.replica_count());
    if (inferred.ok()) {
      next = *std::move(inferred);
    } else if (absl::IsUnimplemented(inferred.status())) {
      next = DeriveShape(m, *instr, depth, params_changed);
      if (*params_changed) return true;
    }
    if (!next) return false;
    if (!instr->shape().Compatible(*next)) instr->set_shape(*std::move(next));
  }
  return true;
}

bool RepropagateModule(HloModule& m) {
  for (int round = 0; round < 16; ++round) {
    bool params_changed = false;
    if (!Repropagate(m, *m.entry(), 0, &params_changed)) return false;
    if (!params_changed) return true;
  }
  return false;
}

// ---- Sharding rewrites ----------------------------------------------------------------------
// `s` with data dim `dim` untiled (its devices join the replication group).
std::optional<HloSharding> Untile(const HloSharding& s, int64_t dim) {
  if (!s.IsTiled() || !s.subgroup_types().empty()) return std::nullopt;
  const TileAssignment& ta = s.tile_assignment();
  const int64_t data_rank = s.TiledDataRank();
  if (dim < 0 || dim >= data_rank || ta.dim(dim) == 1) return std::nullopt;
  const bool has_rep = s.ReplicateOnLastTileDim();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < data_rank; ++i) {
    if (i != dim) perm.push_back(i);
  }
  perm.push_back(dim);
  if (has_rep) perm.push_back(ta.num_dimensions() - 1);
  std::vector<int64_t> dims(ta.dims().begin(), ta.dims().begin() + data_rank);
  dims[dim] = 1;
  dims.push_back(ta.dim(dim) * (has_rep ? ta.dims().back() : 1));
  return HloSharding::PartialTile(ta.Transpose(perm).Reshape(dims));
}

// New tile dims, each at most the old one, whose product is `n`; the last dims
// (replication first) shrink first. nullopt when there are none.
bool ShrinkDimsFrom(absl::Span<const int64_t> dims, int64_t i, int64_t n,
                    std::vector<int64_t>& out) {
  if (i < 0) return n == 1;
  // The largest factor of n that fits dims[i], then smaller ones.
  for (int64_t d = std::min(dims[i], n); d >= 1; --d) {
    if (n % d != 0) continue;
    out[i] = d;
    if (ShrinkDimsFrom(dims, i - 1, n / d, out)) return true;
  }
  return false;
}

std::optional<std::vector<int64_t>> ShrinkDimsTo(absl::Span<const int64_t> dims, int64_t n) {
  std::vector<int64_t> out(dims.size(), 1);
  // Prefer keeping the leading (data) dims: fill from the front.
  int64_t rest = n;
  bool ok = true;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = std::min(dims[i], rest);
    while (d > 1 && rest % d != 0) --d;
    out[i] = d;
    rest /= d;
  }
  if (rest != 1) ok = ShrinkDimsFrom(dims, static_cast<int64_t>(dims.size()) - 1, n, out);
  if (!ok) return std::nullopt;
  return out;
}

// `s` on `n` devices instead of `old_n`: tile dims divided down (replication
// first), keeping the sub-block of the device array with the relative order of
// its devices.
std::optional<HloSharding> ShrinkSharding(const HloSharding& s, int64_t old_n, int64_t n) {
  switch (s.kind()) {
    case HloSharding::Kind::kTuple: {
      std::vector<HloSharding> elements;
      for (const HloSharding& e : s.tuple_elements()) {
        std::optional<HloSharding> x = ShrinkSharding(e, old_n, n);
        if (!x) return std::nullopt;
        elements.push_back(*std::move(x));
      }
      return HloSharding::Tuple(std::move(elements));
    }
    case HloSharding::Kind::kMaximal:
      return HloSharding::AssignDevice(s.MaximalDevice() % n);
    case HloSharding::Kind::kTiled: {
      const TileAssignment& ta = s.tile_assignment();
      if (ta.num_elements() != old_n) return std::nullopt;
      std::optional<std::vector<int64_t>> shrunk = ShrinkDimsTo(ta.dims(), n);
      if (!shrunk) return std::nullopt;
      const std::vector<int64_t>& dims = *shrunk;
      std::vector<int64_t> devices;
      std::vector<int64_t> index(dims.size(), 0);
      for (int64_t k = 0; k < n; ++k) {
        devices.push_back(ta.DeviceAt(index));
        for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
          if (++index[d] < dims[d]) break;
          index[d] = 0;
        }
      }
      std::vector<int64_t> sorted = devices;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t& d : devices) {
        d = std::lower_bound(sorted.begin(), sorted.end(), d) - sorted.begin();
      }
      absl::StatusOr<TileAssignment> t = TileAssignment::Explicit(dims, std::move(devices));
      if (!t.ok()) return std::nullopt;
      const TileAssignment canonical = t->Canonical();
      HloSharding out = s.ReplicateOnLastTileDim() ? HloSharding::PartialTile(canonical)
                        : s.subgroup_types().empty()
                            ? HloSharding::Tile(canonical)
                            : HloSharding::Subgroup(canonical, s.subgroup_types());
      return out;
    }
    default:
      return s;
  }
}

HloSharding ReplicatedLike(const HloSharding& s) {
  if (!s.IsTuple()) return HloSharding::Replicate();
  std::vector<HloSharding> elements;
  for (const HloSharding& e : s.tuple_elements()) elements.push_back(ReplicatedLike(e));
  return HloSharding::Tuple(std::move(elements));
}

// ---- Passes ---------------------------------------------------------------------------------
struct Pass {
  const char* name;
  std::function<int64_t(const HloModule&)> count;
  // Applies the pass to targets [begin, end) of `m` (a private copy); false if
  // nothing changed.
  std::function<bool(HloModule&, int64_t, int64_t)> apply;
};

bool IsRootTuple(const HloModule& m) {
  const HloInstruction* root = m.entry()->root();
  return root != nullptr && root->opcode() == HloOpcode::kTuple && root->operand_count() >= 2;
}

Pass RootTupleElements() {
  return {"root-tuple-elements",
          [](const HloModule& m) -> int64_t {
            return IsRootTuple(m) ? m.entry()->root()->operand_count() : 0;
          },
          [](HloModule& m, int64_t begin, int64_t end) {
            if (!IsRootTuple(m)) return false;
            HloInstruction* root = m.entry()->root();
            const int64_t n = root->operand_count();
            if (end - begin >= n) return false;
            std::vector<HloInstruction*> operands;
            std::vector<Shape> shapes;
            std::vector<HloSharding> shardings;
            const std::optional<HloSharding>& s = root->sharding();
            const bool flat =
                s && s->IsTuple() && static_cast<int64_t>(s->tuple_elements().size()) == n;
            for (int64_t i = 0; i < n; ++i) {
              if (i >= begin && i < end) continue;
              operands.push_back(root->operand(i));
              shapes.push_back(root->operand(i)->shape());
              if (flat) shardings.push_back(s->tuple_elements()[i]);
            }
            if (operands.size() == 1) {
              m.entry()->set_root(operands[0]);
              return true;
            }
            root->set_operands(operands);
            root->set_shape(Shape::Tuple(shapes));
            bool all_arrays = true;
            for (const Shape& e : shapes) all_arrays &= e.IsArray();
            if (flat && all_arrays) {
              root->set_sharding(HloSharding::Tuple(std::move(shardings)));
            } else {
              root->clear_sharding();
            }
            return true;
          }};
}

// The entry root becomes one of its operands (any shape): what feeds the
// interesting part without what consumes it.
Pass Reroot() {
  return {"reroot",
          [](const HloModule& m) -> int64_t {
            const HloInstruction* root = m.entry()->root();
            return root == nullptr || root->opcode() == HloOpcode::kTuple ? 0
                                                                          : root->operand_count();
          },
          [](HloModule& m, int64_t begin, int64_t) {
            HloInstruction* root = m.entry()->root();
            if (root == nullptr || begin >= root->operand_count()) return false;
            m.entry()->set_root(root->operand(begin));
            return true;
          }};
}

std::vector<HloInstruction*> OperandTargets(const HloModule& m) {
  return Collect(m, false, [](const HloComputation&, const HloInstruction& i) {
    if (i.opcode() == HloOpcode::kParameter) return false;
    for (const HloInstruction* o : i.operands()) {
      if (o->shape().Compatible(i.shape())) return true;
    }
    return false;
  });
}

Pass ReplaceWithOperand() {
  return {
      "replace-with-operand",
      [](const HloModule& m) { return static_cast<int64_t>(OperandTargets(m).size()); },
      [](HloModule& m, int64_t begin, int64_t end) {
        const std::vector<HloInstruction*> targets = OperandTargets(m);
        absl::flat_hash_map<HloComputation*, absl::flat_hash_map<HloInstruction*, HloInstruction*>>
            by_comp;
        for (int64_t t = begin; t < end && t < static_cast<int64_t>(targets.size()); ++t) {
          HloInstruction* i = targets[t];
          for (HloInstruction* o : i->operands()) {
            if (o->shape().Compatible(i->shape())) {
              by_comp[i->parent()][i] = o;
              break;
            }
          }
        }
        for (auto& [c, map] : by_comp) ReplaceUses(*c, map);
        return !by_comp.empty();
      }};
}

// For each instruction that is not a parameter: the first value before it in
// post order (so not one of its users) with a compatible shape, when that is
// not already one of its operands.
std::vector<std::pair<HloInstruction*, HloInstruction*>> EarlierValueTargets(const HloModule& m) {
  std::vector<std::pair<HloInstruction*, HloInstruction*>> out;
  const absl::flat_hash_set<const HloComputation*> frozen = FrozenComputations(m);
  const absl::flat_hash_set<const HloInstruction*> protect = ProtectedValues(m);
  for (const auto& c : m.computations()) {
    if (frozen.contains(c.get())) continue;
    const std::vector<HloInstruction*> order = c->PostOrder();
    for (size_t k = 0; k < order.size(); ++k) {
      HloInstruction* i = order[k];
      // Entry parameters may go (the module's signature is the reducer's to change); those of
      // called computations may not.
      if ((i->opcode() == HloOpcode::kParameter && c.get() != m.entry()) || protect.contains(i)) {
        continue;
      }
      for (size_t j = 0; j < k; ++j) {
        HloInstruction* v = order[j];
        if (!v->shape().Compatible(i->shape())) continue;
        const auto& ops = i->operands();
        if (std::find(ops.begin(), ops.end(), v) == ops.end()) out.push_back({i, v});
        break;
      }
    }
  }
  return out;
}

Pass ReplaceWithEarlierValue() {
  return {
      "replace-with-earlier-value",
      [](const HloModule& m) { return static_cast<int64_t>(EarlierValueTargets(m).size()); },
      [](HloModule& m, int64_t begin, int64_t end) {
        const auto targets = EarlierValueTargets(m);
        absl::flat_hash_map<HloComputation*, absl::flat_hash_map<HloInstruction*, HloInstruction*>>
            by_comp;
        for (int64_t t = begin; t < end && t < static_cast<int64_t>(targets.size()); ++t) {
          by_comp[targets[t].first->parent()][targets[t].first] = targets[t].second;
        }
        for (auto& [c, map] : by_comp) ReplaceUses(*c, map);
        return !by_comp.empty();
      }};
}

std::vector<HloInstruction*> ParameterTargets(const HloModule& m) {
  return Collect(m, true, [](const HloComputation&, const HloInstruction& i) {
    return i.opcode() != HloOpcode::kParameter && i.operand_count() > 0 && i.shape().IsArray();
  });
}

Pass ReplaceWithParameter() {
  return {"replace-with-parameter",
          [](const HloModule& m) { return static_cast<int64_t>(ParameterTargets(m).size()); },
          [](HloModule& m, int64_t begin, int64_t end) {
            const std::vector<HloInstruction*> targets = ParameterTargets(m);
            HloComputation* entry = m.entry();
            absl::flat_hash_map<HloInstruction*, HloInstruction*> map;
            int64_t number = NextParameterNumber(*entry);
            for (int64_t t = begin; t < end && t < static_cast<int64_t>(targets.size()); ++t) {
              HloInstruction* i = targets[t];
              auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter,
                                                        UniqueName(*entry, "param"), i->shape());
              p->set_parameter_number(number++);
              if (i->sharding()) p->set_sharding(*i->sharding());
              map[i] = entry->AddInstruction(std::move(p));
            }
            ReplaceUses(*entry, map);
            return !map.empty();
          }};
}

std::vector<std::pair<HloInstruction*, int64_t>> DimTargets(const HloModule& m) {
  std::vector<std::pair<HloInstruction*, int64_t>> out;
  for (HloInstruction* p : Collect(m, true, [](const HloComputation&, const HloInstruction& i) {
         return i.opcode() == HloOpcode::kParameter && i.shape().IsArray();
       })) {
    for (int64_t d = 0; d < p->shape().rank(); ++d) {
      if (p->shape().dimensions(d) > 1) out.push_back({p, d});
    }
  }
  return out;
}

Pass ShrinkDims(bool to_one) {
  return {to_one ? "dims-to-1" : "halve-dims",
          [](const HloModule& m) { return static_cast<int64_t>(DimTargets(m).size()); },
          [to_one](HloModule& m, int64_t begin, int64_t end) {
            const auto targets = DimTargets(m);
            bool changed = false;
            for (int64_t t = begin; t < end && t < static_cast<int64_t>(targets.size()); ++t) {
              auto [p, d] = targets[t];
              Shape s = p->shape();
              s.set_dimensions(d, to_one ? 1 : s.dimensions(d) / 2);
              p->set_shape(s);
              changed = true;
            }
            return changed && RepropagateModule(m);
          }};
}

Pass RemoveShardings() {
  auto targets = [](const HloModule& m) {
    return Collect(
        m, false,
        [](const HloComputation&, const HloInstruction& i) { return i.sharding().has_value(); },
        /*skip_protected=*/false);
  };
  return {"remove-shardings",
          [targets](const HloModule& m) { return static_cast<int64_t>(targets(m).size()); },
          [targets](HloModule& m, int64_t begin, int64_t end) {
            const auto t = targets(m);
            for (int64_t k = begin; k < end && k < static_cast<int64_t>(t.size()); ++k) {
              t[k]->clear_sharding();
            }
            return begin < end;
          }};
}

Pass ReplicateShardings() {
  auto targets = [](const HloModule& m) {
    return Collect(
        m, false,
        [](const HloComputation&, const HloInstruction& i) {
          return i.sharding().has_value() && !(*i.sharding() == ReplicatedLike(*i.sharding()));
        },
        /*skip_protected=*/false);
  };
  return {"replicate-shardings",
          [targets](const HloModule& m) { return static_cast<int64_t>(targets(m).size()); },
          [targets](HloModule& m, int64_t begin, int64_t end) {
            const auto t = targets(m);
            for (int64_t k = begin; k < end && k < static_cast<int64_t>(t.size()); ++k) {
              t[k]->set_sharding(ReplicatedLike(*t[k]->sharding()));
            }
            return begin < end;
          }};
}

std::vector<std::pair<HloInstruction*, int64_t>> TileDimTargets(const HloModule& m) {
  std::vector<std::pair<HloInstruction*, int64_t>> out;
  for (HloInstruction* i : Collect(
           m, false,
           [](const HloComputation&, const HloInstruction& x) {
             return x.sharding().has_value() && x.sharding()->IsTiled() &&
                    x.sharding()->subgroup_types().empty();
           },
           /*skip_protected=*/false)) {
    for (int64_t d = 0; d < i->sharding()->TiledDataRank(); ++d) {
      if (i->sharding()->tile_assignment().dim(d) > 1) out.push_back({i, d});
    }
  }
  return out;
}

Pass UntileDims() {
  return {"untile-dims",
          [](const HloModule& m) { return static_cast<int64_t>(TileDimTargets(m).size()); },
          [](HloModule& m, int64_t begin, int64_t end) {
            const auto targets = TileDimTargets(m);
            bool changed = false;
            for (int64_t t = begin; t < end && t < static_cast<int64_t>(targets.size()); ++t) {
              auto [i, d] = targets[t];
              std::optional<HloSharding> s = Untile(*i->sharding(), d);
              if (!s) continue;
              i->set_sharding(*std::move(s));
              changed = true;
            }
            return changed;
          }};
}

// Candidate partition counts, ascending: every divisor of the current count and
// every count up to 16.
std::vector<int64_t> SmallerDeviceCounts(const HloModule& m) {
  std::vector<int64_t> out;
  const int64_t n = m.num_partitions();
  for (int64_t d = 1; d < n; ++d) {
    if (n % d == 0 || d <= 16) out.push_back(d);
  }
  return out;
}

Pass ShrinkMesh() {
  return {"shrink-mesh",
          [](const HloModule& m) { return static_cast<int64_t>(SmallerDeviceCounts(m).size()); },
          [](HloModule& m, int64_t begin, int64_t) {
            const std::vector<int64_t> counts = SmallerDeviceCounts(m);
            if (begin >= static_cast<int64_t>(counts.size())) return false;
            const int64_t old_n = m.num_partitions();
            const int64_t n = counts[begin];
            for (const auto& c : m.computations()) {
              for (const auto& instr : c->instructions()) {
                if (!instr->sharding()) continue;
                std::optional<HloSharding> s = ShrinkSharding(*instr->sharding(), old_n, n);
                if (!s) return false;
                instr->set_sharding(*std::move(s));
              }
            }
            m.set_num_partitions(n);
            return true;
          }};
}

Pass ZeroConstants() {
  auto targets = [](const HloModule& m) {
    return Collect(m, false, [](const HloComputation&, const HloInstruction& i) {
      return i.opcode() == HloOpcode::kConstant && i.literal() && i.literal()->shape().IsArray() &&
             !i.literal()->elided() && LiteralCost(*i.literal()) > 0;
    });
  };
  return {"zero-constants",
          [targets](const HloModule& m) { return static_cast<int64_t>(targets(m).size()); },
          [targets](HloModule& m, int64_t begin, int64_t end) {
            const auto t = targets(m);
            for (int64_t k = begin; k < end && k < static_cast<int64_t>(t.size()); ++k) {
              t[k]->set_literal(Literal(t[k]->literal()->shape()));
            }
            return begin < end;
          }};
}

// ---- Driver ---------------------------------------------------------------------------------
class Reducer {
 public:
  Reducer(const InterestingnessFn& interesting, const ReduceOptions& options)
      : interesting_(interesting), options_(options), start_(std::chrono::steady_clock::now()) {}

  absl::Status Run(std::unique_ptr<HloModule> module, ReduceReport& report) {
    current_ = std::move(module);
    current_size_ = ReductionSize(*current_);
    seen_.insert(PrintModule(*current_));
    const std::vector<Pass> passes = {
        RootTupleElements(),    Reroot(),         ReplaceWithOperand(), ReplaceWithEarlierValue(),
        ReplaceWithParameter(), ShrinkMesh(),     RemoveShardings(),    ReplicateShardings(),
        UntileDims(),           ShrinkDims(true), ShrinkDims(false),    ZeroConstants()};
    for (const Pass& p : passes) report.passes.push_back({p.name, 0, 0});
    bool progress = true;
    while (progress && status_.ok() && !Limited()) {
      progress = false;
      for (size_t i = 0; i < passes.size() && status_.ok() && !Limited(); ++i) {
        progress |= RunPass(passes[i], report.passes[i]);
      }
    }
    report.predicate_calls = calls_;
    report.rejected_by_verifier = rejected_;
    report.stopped_by_limit = Limited();
    return status_;
  }

  std::unique_ptr<HloModule> TakeResult() { return std::move(current_); }

 private:
  bool Limited() const {
    if (calls_ >= options_.max_predicate_calls) return true;
    if (options_.max_seconds > 0) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (s >= options_.max_seconds) return true;
    }
    return false;
  }

  // llvm-reduce's chunked delta loop: try the targets in chunks, halving the
  // chunk size; after an accepted change the targets are recounted and the same
  // position is tried again.
  bool RunPass(const Pass& pass, ReducePassStats& stats) {
    bool progress = false;
    int64_t n = pass.count(*current_);
    int64_t chunk = n;
    while (chunk >= 1 && n > 0 && status_.ok() && !Limited()) {
      for (int64_t start = 0; start < n && status_.ok() && !Limited();) {
        std::unique_ptr<HloModule> candidate = CloneModule(*current_);
        if (pass.apply(*candidate, start, std::min(start + chunk, n)) &&
            TryAccept(Compact(*candidate), pass.name, stats)) {
          progress = true;
          n = pass.count(*current_);
          chunk = std::min(chunk, n);
          continue;
        }
        start += chunk;
      }
      if (chunk <= 1) break;
      chunk = (chunk + 1) / 2;
    }
    return progress;
  }

  bool TryAccept(std::unique_ptr<HloModule> candidate, const char* pass_name,
                 ReducePassStats& stats) {
    if (candidate->entry() == nullptr || candidate->entry()->root() == nullptr) return false;
    const int64_t size = ReductionSize(*candidate);
    if (size >= current_size_) return false;
    std::string text = PrintModule(*candidate);
    if (!seen_.insert(text).second) return false;
    if (!VerifyModule(*candidate).ok()) {
      ++rejected_;
      return false;
    }
    ++calls_;
    ++stats.attempts;
    absl::StatusOr<bool> interesting = interesting_(*candidate);
    if (!interesting.ok()) {
      status_ = interesting.status();
      return false;
    }
    if (!*interesting) return false;
    ++stats.accepted;
    if (options_.log) {
      options_.log(absl::StrFormat("%s: %d -> %d instructions, size %d -> %d", pass_name,
                                   CountInstructions(*current_), CountInstructions(*candidate),
                                   current_size_, size));
    }
    current_ = std::move(candidate);
    current_size_ = size;
    return true;
  }

 public:
  static int64_t CountInstructions(const HloModule& m) {
    int64_t n = 0;
    for (const auto& c : m.computations()) n += c->instruction_count();
    return n;
  }

 private:
  const InterestingnessFn& interesting_;
  const ReduceOptions& options_;
  const std::chrono::steady_clock::time_point start_;
  std::unique_ptr<HloModule> current_;
  int64_t current_size_ = 0;
  absl::flat_hash_set<std::string> seen_;
  int64_t calls_ = 0;
  int64_t rejected_ = 0;
  absl::Status status_;
};

}  // namespace

const char* RootShardingSourceName(RootShardingSource source) {
  switch (source) {
    case RootShardingSource::kOwn:
      return "own";
    case RootShardingSource::kPropagated:
      return "propagated";
    case RootShardingSource::kConsumer:
      return "consumer's";
    case RootShardingSource::kNone:
      return "no";
  }
  return "no";
}

namespace {

// Whether operand `k` of `consumer` has the consumer's dims at the same positions. `same_dims`:
// of the same sizes too (an elementwise op's operands, not a slice's).
bool MapsDimsOneToOne(const HloInstruction& consumer, int64_t k, bool* same_dims) {
  *same_dims = false;
  switch (consumer.opcode()) {
    case HloOpcode::kSlice:
    case HloOpcode::kPad:
    case HloOpcode::kReverse:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
      return k == 0;
    case HloOpcode::kConvert:
    case HloOpcode::kBitcastConvert:
      *same_dims = true;
      return true;
    default:
      *same_dims = true;
      return ElementwiseArity(consumer.opcode()) > 0;
  }
}

}  // namespace

std::optional<HloSharding> ConsumerDerivedSharding(const HloInstruction& consumer, int64_t k,
                                                   const HloSharding& s) {
  const Shape& shape = consumer.operand(k)->shape();
  std::optional<HloSharding> derived;
  bool same_dims = false;
  if (consumer.opcode() == HloOpcode::kTuple) {
    // A tuple sharding holds one sharding a leaf: element k's when every element is an array.
    bool arrays = true;
    for (const HloInstruction* o : consumer.operands()) arrays = arrays && o->shape().IsArray();
    if (arrays && s.IsTuple() && static_cast<int64_t>(s.tuple_elements().size()) > k) {
      derived = s.tuple_elements()[k];
    }
  } else if (s.IsTuple() || !shape.IsArray() || !consumer.shape().IsArray() ||
             shape.rank() != consumer.shape().rank()) {
    return std::nullopt;
  } else if (consumer.opcode() == HloOpcode::kConcatenate) {
    const std::optional<std::vector<int64_t>>& dims = consumer.attrs().dimensions;
    if (!dims.has_value() || dims->size() != 1) return std::nullopt;
    const int64_t dim = dims->front();
    derived = s.IsTiled() && dim < s.TiledDataRank() && s.tile_assignment().dim(dim) > 1
                  ? Untile(s, dim)
                  : std::optional<HloSharding>(s);
  } else if (MapsDimsOneToOne(consumer, k, &same_dims) &&
             (!same_dims || shape.dimensions() == consumer.shape().dimensions())) {
    derived = s;
  }
  if (!derived.has_value() || !derived->Validate(shape, 0).ok()) return std::nullopt;
  return derived;
}

namespace {

struct RootCandidate {
  std::optional<HloSharding> sharding;
  RootShardingSource source;
};

// The shardings operand `k` of `root` is tried with as the new root, best first, distinct.
std::vector<RootCandidate> NewRootShardings(const HloInstruction& root, int64_t k,
                                            const DescendOptions& options) {
  const HloInstruction& operand = *root.operand(k);
  if (operand.sharding().has_value()) return {{operand.sharding(), RootShardingSource::kOwn}};
  std::vector<RootCandidate> out;
  auto add = [&out](std::optional<HloSharding> s, RootShardingSource source) {
    for (const RootCandidate& c : out) {
      if (c.sharding == s) return;
    }
    out.push_back({std::move(s), source});
  };
  auto propagated = options.propagated.find(operand.name());
  if (propagated != options.propagated.end() &&
      propagated->second.Validate(operand.shape(), 0).ok()) {
    add(propagated->second, RootShardingSource::kPropagated);
  }
  // The consumer's sharding in the program's context: its own, else the propagated one.
  std::optional<HloSharding> consumer = root.sharding();
  if (auto it = options.propagated.find(root.name());
      !consumer.has_value() && it != options.propagated.end()) {
    consumer = it->second;
  }
  if (consumer.has_value()) {
    std::optional<HloSharding> derived = ConsumerDerivedSharding(root, k, *consumer);
    if (derived.has_value()) add(*std::move(derived), RootShardingSource::kConsumer);
  }
  add(std::nullopt, RootShardingSource::kNone);
  return out;
}

// One step of DescendRoot: true when the root moved.
absl::StatusOr<bool> DescendOneStep(DescendResult& result, const InterestingnessFn& interesting,
                                    std::chrono::steady_clock::time_point deadline,
                                    const DescendOptions& options) {
  const HloInstruction* root = result.module->entry()->root();
  if (root == nullptr) return false;
  for (int64_t k = 0; k < root->operand_count(); ++k) {
    const HloInstruction* operand = root->operand(k);
    if (operand->opcode() == HloOpcode::kParameter || operand->opcode() == HloOpcode::kConstant ||
        std::find(root->operands().begin(), root->operands().begin() + k, operand) !=
            root->operands().begin() + k) {
      continue;
    }
    for (const RootCandidate& c : NewRootShardings(*root, k, options)) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::unique_ptr<HloModule> candidate = CloneModule(*result.module);
      HloComputation* entry = candidate->entry();
      HloInstruction* new_root = entry->root()->operand(k);
      if (c.sharding.has_value()) {
        new_root->set_sharding(*c.sharding);
      } else {
        new_root->clear_sharding();
      }
      entry->set_root(new_root);
      candidate = Compact(*candidate);
      ++result.candidates_tried;
      absl::StatusOr<bool> still = interesting(*candidate);
      if (!still.ok()) return still.status();
      if (!*still) continue;
      result.step_notes.push_back(absl::StrCat(
          root->name(), " -> ", operand->name(), " (", RootShardingSourceName(c.source),
          " sharding", c.sharding.has_value() ? " " + c.sharding->ToString(false) : "", ")"));
      result.module = std::move(candidate);
      ++result.steps;
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<DescendResult> DescendRoot(const HloModule& module,
                                          const InterestingnessFn& interesting,
                                          std::chrono::steady_clock::time_point deadline,
                                          const DescendOptions& options) {
  DescendResult result;
  result.module = CloneModule(module);
  bool moved = true;
  while (moved && result.steps < options.max_steps) {
    absl::StatusOr<bool> step = DescendOneStep(result, interesting, deadline, options);
    if (!step.ok()) return step.status();
    moved = *step;
  }
  return result;
}

std::unique_ptr<HloModule> CloneModule(const HloModule& module) {
  return CopyModule(module, nullptr, nullptr);
}

int64_t ReductionSize(const HloModule& module) {
  int64_t size = module.num_partitions() * module.replica_count() * 50;
  for (const auto& c : module.computations()) {
    for (const auto& instr : c->instructions()) {
      size += 100 + 10 * instr->operand_count() + ElementsOf(instr->shape());
      if (instr->sharding()) size += ShardingCost(*instr->sharding());
      if (instr->literal()) size += LiteralCost(*instr->literal());
    }
  }
  return size;
}

std::string ReduceReport::ToString() const {
  return absl::StrFormat(
      "%d -> %d instructions (entry %d -> %d), %d -> %d devices, %d predicate "
      "calls, %.2fs%s",
      instructions_before, instructions_after, entry_instructions_before, entry_instructions_after,
      devices_before, devices_after, predicate_calls, seconds,
      stopped_by_limit ? " (stopped by a limit)" : "");
}

absl::StatusOr<ReduceResult> ReduceModule(const HloModule& module,
                                          const InterestingnessFn& interesting,
                                          const ReduceOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  absl::Status verified = VerifyModule(module);
  if (!verified.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the module does not verify:\n", verified.message()));
  }
  absl::StatusOr<bool> original = interesting(module);
  if (!original.ok()) return original.status();
  if (!*original) return absl::FailedPreconditionError("the original module is not interesting");

  ReduceReport report;
  report.instructions_before = Reducer::CountInstructions(module);
  report.entry_instructions_before = module.entry()->instruction_count();
  report.devices_before = module.num_partitions() * module.replica_count();
  Reducer reducer(interesting, options);
  // Dead code first: the compacted original is the starting point when it is
  // still interesting.
  std::unique_ptr<HloModule> begin = Compact(module);
  int64_t extra_calls = 1;
  if (VerifyModule(*begin).ok() && PrintModule(*begin) != PrintModule(module)) {
    ++extra_calls;
    absl::StatusOr<bool> still = interesting(*begin);
    if (!still.ok()) return still.status();
    if (!*still) begin = CloneModule(module);
  } else {
    begin = CloneModule(module);
  }
  absl::Status status = reducer.Run(std::move(begin), report);
  if (!status.ok()) return status;
  ReduceResult result;
  result.module = reducer.TakeResult();
  result.hlo_text = PrintModule(*result.module);
  report.predicate_calls += extra_calls;
  report.instructions_after = Reducer::CountInstructions(*result.module);
  report.entry_instructions_after = result.module->entry()->instruction_count();
  report.devices_after = result.module->num_partitions() * result.module->replica_count();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.report = std::move(report);
  return result;
}

}  // namespace spmdcheck::fuzz
