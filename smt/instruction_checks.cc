#include "smt/instruction_checks.h"

#include <z3++.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ir/hlo_opcode.h"
#include "ir/hlo_parser.h"
#include "ir/replica_groups.h"
#include "smt/chain_model.h"
#include "smt/tile_encoding.h"
#include "smt/z3_guard.h"

namespace spmdcheck::smt {
namespace {

std::string Brackets(absl::Span<const int64_t> v) {
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}

std::string Braces(absl::Span<const int64_t> v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

bool IsCheckedCollective(HloOpcode op) {
  return IsChainCollective(op) || op == HloOpcode::kAllGatherStart ||
         op == HloOpcode::kAllReduceStart || op == HloOpcode::kCollectivePermuteStart;
}

// Data tile counts per array dim: tiled -> the leading tile dims; replicated ->
// all ones.
std::optional<std::vector<int64_t>> DataTileDims(const HloSharding& s, int64_t rank) {
  if (s.IsReplicated()) return std::vector<int64_t>(static_cast<size_t>(rank), 1);
  if (!s.IsTiled() || s.TiledDataRank() != rank) return std::nullopt;
  const absl::Span<const int64_t> dims = s.tile_assignment().dims();
  return std::vector<int64_t>(dims.begin(), dims.begin() + rank);
}

// The groups of partition ids a collective uses (replica_count 1), per spec
// §3.2.
absl::StatusOr<std::vector<std::vector<int64_t>>> PartitionGroups(const HloInstruction& instr,
                                                                  int64_t partitions) {
  const HloAttributes& attrs = instr.attrs();
  const bool channel = attrs.channel_id.has_value();
  const bool global = attrs.use_global_device_ids.value_or(false);
  std::vector<std::vector<int64_t>> given;
  if (attrs.replica_groups.has_value()) given = attrs.replica_groups->groups();
  std::vector<int64_t> all(static_cast<size_t>(partitions));
  for (int64_t p = 0; p < partitions; ++p) all[p] = p;
  if (!channel) {
    // Cross-replica: with one replica every partition is alone.
    std::vector<std::vector<int64_t>> singletons;
    for (int64_t p = 0; p < partitions; ++p) singletons.push_back({p});
    return singletons;
  }
  const bool has_flag =
      instr.opcode() == HloOpcode::kAllGather || instr.opcode() == HloOpcode::kAllReduce ||
      instr.opcode() == HloOpcode::kReduceScatter || instr.opcode() == HloOpcode::kAllGatherStart ||
      instr.opcode() == HloOpcode::kAllReduceStart;
  if (has_flag && !global) {
    // Cross-replica-and-partition: each group of replica ids (only replica 0
    // here) spans all partitions.
    return std::vector<std::vector<int64_t>>{all};
  }
  if (given.empty()) {
    if (has_flag) return absl::InvalidArgumentError("empty replica_groups with flattened ids");
    return std::vector<std::vector<int64_t>>{all};
  }
  for (const auto& g : given) {
    for (int64_t d : g) {
      if (d < 0 || d >= partitions) {
        return absl::InvalidArgumentError(
            absl::StrCat("group member ", d, " is outside [0,", partitions, ")"));
      }
    }
  }
  return given;
}

std::vector<std::vector<int64_t>> Normalised(std::vector<std::vector<int64_t>> groups) {
  for (auto& g : groups) std::sort(g.begin(), g.end());
  std::sort(groups.begin(), groups.end());
  return groups;
}

ProofResult WithPrefix(ProofResult r, absl::string_view prefix) {
  if (r.verdict == Verdict::kFails) r.counterexample = absl::StrCat(prefix, r.counterexample);
  if (r.verdict == Verdict::kUnknown) r.reason = absl::StrCat(prefix, r.reason);
  return r;
}

std::string Reason(z3::solver& solver) { return Z3UnknownReason(solver.reason_unknown()); }

// How much of a group list's order matters.
enum class GroupOrder {
  kMembers,  // Member order (positions) matters, the order of the groups in the list does not.
  kSets,     // Neither (a sum over the integers).
};

// Groups check: ProveGroups (same groups, same list order, same member order); when that
// refutes, the list compared without the order that does not matter for the op.
ProofResult CheckGroups(const HloSharding& sharding, const std::vector<int64_t>& dims,
                        const std::vector<std::vector<int64_t>>& groups, GroupOrder order,
                        const FactOptions& options) {
  // Iota forms keep the Z3 encodings small (no tables).
  ProofResult r = ProveGroups(sharding, dims, ReplicaGroups(groups).Canonical(), options);
  if (r.verdict != Verdict::kFails) return r;
  std::vector<std::vector<int64_t>> expected = sharding.GroupsAlongDims(dims);
  std::vector<std::vector<int64_t>> given = groups;
  if (order == GroupOrder::kSets) {
    expected = Normalised(std::move(expected));
    given = Normalised(std::move(given));
  } else {
    std::sort(expected.begin(), expected.end());
    std::sort(given.begin(), given.end());
  }
  return expected == given ? ProofResult::Proved() : r;
}

// The sharding with tile dim `dim` (size outer * inner) split into [outer, inner], the device
// order unchanged; fully tiled (only its tile assignment is used, for groups).
std::optional<HloSharding> SplitTileDim(const HloSharding& s, int64_t dim, int64_t outer) {
  const absl::Span<const int64_t> dims = s.tile_assignment().dims();
  if (outer <= 0 || dims[dim] % outer != 0) return std::nullopt;
  std::vector<int64_t> split(dims.begin(), dims.end());
  split[dim] = dims[dim] / outer;
  split.insert(split.begin() + dim, outer);
  HloSharding result = HloSharding::Tile(s.tile_assignment().Reshape(split));
  if (!result.IsTiled()) return std::nullopt;
  return result;
}

ProofResult Z3Placement(const HloSharding& from, const HloSharding& to,
                        const std::vector<int64_t>& dropped, int64_t timeout_ms) {
  const int64_t rank = from.TiledDataRank();
  auto is_dropped = [&](int64_t k) {
    return std::find(dropped.begin(), dropped.end(), k) != dropped.end();
  };
  z3::context ctx;
  z3::solver solver(ctx);
  z3::params params(ctx);
  params.set("timeout", Z3TimeoutParam(timeout_ms));
  solver.set(params);
  TileEncoding f = EncodeTileAssignment(ctx, from.tile_assignment(), "f", true);
  for (unsigned i = 0; i < f.constraints.size(); ++i) solver.add(f.constraints[i]);
  z3::expr_vector differs(ctx);
  std::optional<TileEncoding> t;
  if (to.IsTiled()) {
    t = EncodeTileAssignment(ctx, to.tile_assignment(), "t", true);
    for (unsigned i = 0; i < t->constraints.size(); ++i) solver.add(t->constraints[i]);
    // Every device holding a tile under `to` holds one under `from`.
    {
      z3::solver s2(ctx);
      s2.set(params);
      for (unsigned i = 0; i < t->constraints.size(); ++i) s2.add(t->constraints[i]);
      s2.add(!DeviceOccurs(ctx, from.tile_assignment(), t->device));
      switch (s2.check()) {
        case z3::sat:
          return ProofResult::Refuted(
              absl::StrCat("device ", ModelInt(s2.get_model(), t->device),
                           " holds a tile under the result sharding but nothing "
                           "under the operand sharding"));
        case z3::unknown:
          return ProofResult::Unknown(Reason(s2));
        case z3::unsat:
          break;
      }
    }
    solver.add(f.device == t->device);
    for (int64_t k = 0; k < rank; ++k) {
      // A dropped dim keeps T_to of its T_from tiles: index / (T_from / T_to).
      const int64_t factor = from.tile_assignment().dim(k) / to.tile_assignment().dim(k);
      differs.push_back(is_dropped(k) ? t->index[k] != f.index[k] / ctx.int_val(factor)
                                      : t->index[k] != f.index[k]);
    }
  } else {
    for (int64_t k = 0; k < rank; ++k) {
      if (!is_dropped(k)) differs.push_back(f.index[k] != 0);
    }
  }
  if (differs.empty()) return ProofResult::Proved();
  solver.add(z3::mk_or(differs));
  switch (solver.check()) {
    case z3::sat: {
      const z3::model model = solver.get_model();
      std::vector<int64_t> fi, ti, expected;
      for (int64_t k = 0; k < rank; ++k) {
        fi.push_back(ModelInt(model, f.index[k]));
        const int64_t factor =
            t.has_value() ? from.tile_assignment().dim(k) / to.tile_assignment().dim(k) : 0;
        expected.push_back(is_dropped(k) ? (factor > 0 ? fi.back() / factor : 0) : fi.back());
        ti.push_back(t.has_value() ? ModelInt(model, t->index[k]) : 0);
      }
      return ProofResult::Refuted(
          absl::StrCat("device ", ModelInt(model, f.device), " holds tile ", Brackets(ti),
                       " under the result sharding but tile ", Brackets(fi),
                       " under the operand sharding (expected ", Brackets(expected), ")"));
    }
    case z3::unknown:
      return ProofResult::Unknown(Reason(solver));
    case z3::unsat:
      break;
  }
  return ProofResult::Proved();
}

// The placement check by enumeration: every tile position of `to` (or of `from` when `to` is
// replicated), smallest first.
ProofResult EnumeratePlacement(const HloSharding& from, const HloSharding& to,
                               const std::vector<int64_t>& dropped) {
  const int64_t rank = from.TiledDataRank();
  const TileAssignment& tf = from.tile_assignment();
  auto is_dropped = [&](int64_t k) {
    return std::find(dropped.begin(), dropped.end(), k) != dropped.end();
  };
  if (!to.IsTiled()) {
    for (int64_t linear = 0; linear < tf.num_elements(); ++linear) {
      const std::vector<int64_t> fi = MultiIndex(tf.dims(), linear);
      for (int64_t k = 0; k < rank; ++k) {
        if (is_dropped(k) || fi[k] == 0) continue;
        std::vector<int64_t> expected(fi.begin(), fi.begin() + rank);
        for (int64_t j = 0; j < rank; ++j) {
          if (is_dropped(j)) expected[j] = 0;
        }
        return ProofResult::Refuted(
            absl::StrCat("device ", tf.DeviceAtLinear(linear), " holds tile ",
                         Brackets(std::vector<int64_t>(static_cast<size_t>(rank), 0)),
                         " under the result sharding but tile ",
                         Brackets(std::vector<int64_t>(fi.begin(), fi.begin() + rank)),
                         " under the operand sharding (expected ", Brackets(expected), ")"));
      }
    }
    return ProofResult::Proved();
  }
  const TileAssignment& tt = to.tile_assignment();
  for (int64_t linear = 0; linear < tt.num_elements(); ++linear) {
    const int64_t device = tt.DeviceAtLinear(linear);
    if (!tf.LinearIndexOf(device).has_value()) {
      return ProofResult::Refuted(absl::StrCat(
          "device ", device,
          " holds a tile under the result sharding but nothing under the operand sharding"));
    }
  }
  for (int64_t linear = 0; linear < tt.num_elements(); ++linear) {
    const int64_t device = tt.DeviceAtLinear(linear);
    const std::vector<int64_t> ti = MultiIndex(tt.dims(), linear);
    const std::vector<int64_t> fi = *tf.TileIndexOf(device);
    std::vector<int64_t> expected;
    bool differs = false;
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t factor = tf.dim(k) / tt.dim(k);
      expected.push_back(is_dropped(k) ? (factor > 0 ? fi[k] / factor : 0) : fi[k]);
      differs |= expected.back() != ti[k];
    }
    if (differs) {
      return ProofResult::Refuted(
          absl::StrCat("device ", device, " holds tile ",
                       Brackets(std::vector<int64_t>(ti.begin(), ti.begin() + rank)),
                       " under the result sharding but tile ",
                       Brackets(std::vector<int64_t>(fi.begin(), fi.begin() + rank)),
                       " under the operand sharding (expected ", Brackets(expected), ")"));
    }
  }
  return ProofResult::Proved();
}

struct Annotated {
  const HloSharding* operand = nullptr;
  const HloSharding* result = nullptr;
};

class Checker {
 public:
  Checker(const InstructionCheckOptions& options, int64_t partitions)
      : options_(options), partitions_(partitions) {}

  InstructionCheck Check(const HloInstruction& instr) {
    InstructionCheck check;
    check.name = instr.name();
    check.opcode = std::string(HloOpcodeString(instr.opcode()));
    check.line = instr.location().line;
    switch (instr.opcode()) {
      case HloOpcode::kAllGatherStart:
      case HloOpcode::kAllReduceStart:
      case HloOpcode::kCollectivePermuteStart:
        check.result =
            ProofResult::Unknown("async collectives are not checked (use the sync form)");
        return check;
      default:
        break;
    }
    if (instr.operand_count() != 1) {
      check.result = ProofResult::Unknown(absl::StrCat(
          "only single-operand collectives are checked (", instr.operand_count(), " operands)"));
      return check;
    }
    const HloInstruction& operand = *instr.operand(0);
    std::optional<HloSharding> in = AnnotatedSharding(operand, options_.source_text);
    std::optional<HloSharding> out = AnnotatedSharding(instr, options_.source_text);
    // Explicit device lists that are iotas are proved in iota form (no tables).
    if (in.has_value()) in = in->Canonical();
    if (out.has_value()) out = out->Canonical();
    if (!in.has_value() || !out.has_value()) {
      check.result = ProofResult::Unknown(absl::StrCat(
          !in.has_value() ? absl::StrCat("operand ", operand.name(), " has no sharding annotation")
                          : "the result has no sharding annotation"));
      return check;
    }
    if (in->IsTuple() || out->IsTuple() || !instr.shape().IsArray() || !operand.shape().IsArray()) {
      check.result = ProofResult::Unknown("tuple-shaped collectives are not checked");
      return check;
    }
    absl::StatusOr<std::vector<std::vector<int64_t>>> groups = PartitionGroups(instr, partitions_);
    if (!groups.ok()) {
      check.result = ProofResult::Unknown(std::string(groups.status().message()));
      return check;
    }
    switch (instr.opcode()) {
      case HloOpcode::kCollectivePermute:
        CheckPermute(instr, *in, *out, check);
        break;
      case HloOpcode::kAllGather:
        CheckGatherLike(instr, operand, *in, *out, *groups, /*scatter=*/false, check);
        break;
      case HloOpcode::kReduceScatter:
        CheckGatherLike(instr, operand, *in, *out, *groups, /*scatter=*/true, check);
        break;
      case HloOpcode::kAllReduce:
        CheckAllReduce(operand, *in, *out, *groups, check);
        break;
      case HloOpcode::kAllToAll:
        CheckAllToAll(instr, operand, *in, *out, *groups, check);
        break;
      case HloOpcode::kCollectiveBroadcast:
        CheckBroadcast(*in, *out, *groups, check);
        break;
      default:
        check.result = ProofResult::Unknown("not a supported collective");
    }
    return check;
  }

 private:
  void CheckPermute(const HloInstruction& instr, const HloSharding& in, const HloSharding& out,
                    InstructionCheck& check) {
    if (!instr.attrs().channel_id.has_value()) {
      check.result = ProofResult::Unknown("collective-permute without channel_id uses replica ids");
      return;
    }
    const SourceTargetPairs pairs = instr.attrs().source_target_pairs.value_or(SourceTargetPairs{});
    check.result = ProvePairs(in, out, pairs, Facts());
    check.detail = absl::StrCat(pairs.size(), " pairs move every tile to its holder");
  }

  // Data dims whose tile count differs.
  static std::vector<int64_t> ChangedDims(const std::vector<int64_t>& a,
                                          const std::vector<int64_t>& b) {
    std::vector<int64_t> changed;
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] != b[k]) changed.push_back(static_cast<int64_t>(k));
    }
    return changed;
  }

  void CheckGatherLike(const HloInstruction& instr, const HloInstruction& operand,
                       const HloSharding& in, const HloSharding& out,
                       const std::vector<std::vector<int64_t>>& groups, bool scatter,
                       InstructionCheck& check) {
    const std::vector<int64_t> dims = instr.attrs().dimensions.value_or(std::vector<int64_t>{});
    const int64_t rank = instr.shape().rank();
    if (dims.size() != 1 || dims[0] < 0 || dims[0] >= rank || operand.shape().rank() != rank) {
      check.result = ProofResult::Unknown("needs one dimension and equal ranks");
      return;
    }
    const int64_t dim = dims[0];
    // `split` is the sharding that splits `dim`, `whole` the one that does not.
    const HloSharding& split = scatter ? out : in;
    const HloSharding& whole = scatter ? in : out;
    std::optional<std::vector<int64_t>> ts = DataTileDims(split, rank);
    std::optional<std::vector<int64_t>> tw = DataTileDims(whole, rank);
    if (!ts.has_value() || !split.IsTiled() || !tw.has_value()) {
      check.result = ProofResult::Unknown(
          absl::StrCat("needs a tiled ", scatter ? "result" : "operand", " sharding of rank ", rank,
                       " and a tiled or replicated ", scatter ? "operand" : "result", " sharding"));
      return;
    }
    const std::vector<int64_t> changed = ChangedDims(*ts, *tw);
    if (changed != std::vector<int64_t>{dim}) {
      check.result = ProofResult::Refuted(
          absl::StrCat("dimension: ", scatter ? "reduce-scatter" : "all-gather", " along dim ", dim,
                       " but the shardings differ in data tile dims ", Braces(changed), " (",
                       Brackets(*ts), " vs ", Brackets(*tw), ")"));
      return;
    }
    const int64_t n = groups.empty() ? 0 : static_cast<int64_t>(groups[0].size());
    const int64_t kept = (*tw)[dim];  // Tiles of `dim` left after the gather (1: full gather).
    if ((*ts)[dim] % kept != 0 || (*ts)[dim] / kept != n) {
      check.result = ProofResult::Refuted(absl::StrCat(
          "dimension: the split of dim ", dim, " goes ", (*ts)[dim], " -> ", kept,
          " ways, which needs groups of ", (*ts)[dim] % kept == 0 ? (*ts)[dim] / kept : 0,
          ", but the groups have ", n, " members"));
      return;
    }
    const int64_t small = scatter ? instr.shape().dimensions(dim) : operand.shape().dimensions(dim);
    const int64_t big = scatter ? operand.shape().dimensions(dim) : instr.shape().dimensions(dim);
    if (big != n * small) {
      check.result = ProofResult::Refuted(absl::StrCat(
          "dimension: dim ", dim, " goes ", scatter ? big : small, " -> ", scatter ? small : big,
          " over groups of ", n, " (expected a factor ", n, ")"));
      return;
    }
    // A partial gather (the result still splits `dim` kept ways) groups the devices along the
    // minor factor n of the operand's tile dim.
    std::optional<HloSharding> grouping =
        kept == 1 ? std::optional<HloSharding>(split) : SplitTileDim(split, dim, kept);
    if (!grouping.has_value()) {
      check.result = ProofResult::Unknown("cannot split the tile dim for a partial gather");
      return;
    }
    const int64_t group_dim = kept == 1 ? dim : dim + 1;
    ProofResult g = CheckGroups(*grouping, {group_dim}, groups, GroupOrder::kMembers, Facts());
    if (g.verdict != Verdict::kHolds) {
      check.result = WithPrefix(g, "groups: ");
      return;
    }
    ProofResult p = ProvePlacement(split, whole, {dim}, Facts());
    if (p.verdict != Verdict::kHolds) {
      check.result = WithPrefix(p, "placement: ");
      return;
    }
    check.result = ProofResult::Proved();
    check.detail =
        absl::StrCat("groups = ", scatter ? "result" : "operand", " groups along tile dim ", dim,
                     " (", groups.size(), " groups of ", n, "), dimension ", dim);
  }

  void CheckAllReduce(const HloInstruction& operand, const HloSharding& in, const HloSharding& out,
                      const std::vector<std::vector<int64_t>>& groups, InstructionCheck& check) {
    const int64_t rank = operand.shape().rank();
    std::optional<std::vector<int64_t>> ti = DataTileDims(in, rank);
    std::optional<std::vector<int64_t>> to = DataTileDims(out, rank);
    if (!ti.has_value() || !in.IsTiled() || !to.has_value()) {
      check.result = ProofResult::Unknown(
          "needs a tiled operand sharding and a tiled or "
          "replicated result sharding");
      return;
    }
    const std::vector<int64_t> changed = ChangedDims(*ti, *to);
    if (changed.empty()) {
      check.result = ProofResult::Unknown(
          "the shardings split the same dims: partial "
          "sums (e.g. of a dot) are not described "
          "by sharding annotations");
      return;
    }
    for (int64_t k : changed) {
      if ((*to)[k] != 1) {
        check.result = ProofResult::Unknown(
            absl::StrCat("the result still splits dim ", k, " (partial reduction not checked)"));
        return;
      }
    }
    ProofResult g = CheckGroups(in, changed, groups, GroupOrder::kSets, Facts());
    if (g.verdict != Verdict::kHolds) {
      check.result = WithPrefix(g, "groups: ");
      return;
    }
    ProofResult p = ProvePlacement(in, out, changed, Facts());
    if (p.verdict != Verdict::kHolds) {
      check.result = WithPrefix(p, "placement: ");
      return;
    }
    check.result = ProofResult::Proved();
    check.detail = absl::StrCat("groups = operand groups along tile dims ", Braces(changed), " (",
                                groups.size(), " groups of ", groups.empty() ? 0 : groups[0].size(),
                                "); non-owner shards must be zero (masking not visible here)");
  }

  void CheckAllToAll(const HloInstruction& instr, const HloInstruction& operand,
                     const HloSharding& in, const HloSharding& out,
                     const std::vector<std::vector<int64_t>>& groups, InstructionCheck& check) {
    const int64_t rank = operand.shape().rank();
    std::optional<std::vector<int64_t>> ti = DataTileDims(in, rank);
    std::optional<std::vector<int64_t>> to = DataTileDims(out, rank);
    const std::vector<int64_t> dims = instr.attrs().dimensions.value_or(std::vector<int64_t>{});
    if (!ti.has_value() || !to.has_value() || !in.IsTiled() || !out.IsTiled() || dims.size() != 1) {
      check.result = ProofResult::Unknown(
          "needs the array form (one dimension) and tiled "
          "shardings of the operand's rank");
      return;
    }
    const int64_t n = groups.empty() ? 0 : static_cast<int64_t>(groups[0].size());
    const std::vector<int64_t> changed = ChangedDims(*ti, *to);
    int64_t source = -1, target = -1;
    for (int64_t k : changed) {
      if ((*ti)[k] == n * (*to)[k]) source = k;
      if ((*to)[k] == n * (*ti)[k]) target = k;
    }
    if (changed.size() != 2 || source < 0 || target < 0) {
      check.result = ProofResult::Refuted(
          absl::StrCat("dimension: an all-to-all over groups of ", n, " moves a factor ", n,
                       " of the split from one dim to another, but the data tile dims go ",
                       Brackets(*ti), " -> ", Brackets(*to)));
      return;
    }
    if (dims[0] != target) {
      check.result = ProofResult::Refuted(absl::StrCat("dimension: all-to-all along dim ", dims[0],
                                                       " but the split moves from dim ", source,
                                                       " to dim ", target));
      return;
    }
    ProofResult g = CheckGroups(in, {source}, groups, GroupOrder::kMembers, Facts());
    if (g.verdict != Verdict::kHolds) {
      check.result = WithPrefix(g, "groups (operand): ");
      return;
    }
    ProofResult g2 = CheckGroups(out, {target}, groups, GroupOrder::kMembers, Facts());
    if (g2.verdict != Verdict::kHolds) {
      check.result = WithPrefix(g2, "groups (result): ");
      return;
    }
    check.result = ProofResult::Proved();
    check.detail =
        absl::StrCat("groups = operand groups along dim ", source, " = result groups along dim ",
                     target, " (", groups.size(), " groups of ", n, ")");
  }

  void CheckBroadcast(const HloSharding& in, const HloSharding& out,
                      const std::vector<std::vector<int64_t>>& groups, InstructionCheck& check) {
    std::map<int64_t, int64_t> first_of;
    for (const auto& g : groups) {
      for (int64_t d : g) first_of[d] = g.empty() ? d : g[0];
    }
    for (int64_t d = 0; d < partitions_; ++d) {
      auto f = first_of.find(d);
      if (f == first_of.end()) {
        check.result = ProofResult::Refuted(absl::StrCat("device ", d, " is in no group"));
        return;
      }
      std::optional<std::vector<int64_t>> want = out.DataTileIndexOf(d);
      if (!want.has_value()) continue;
      if (in.IsMaximal()) {
        if (f->second != in.MaximalDevice()) {
          check.result = ProofResult::Refuted(
              absl::StrCat("device ", d, " receives from device ", f->second,
                           ", but the operand lives on device ", in.MaximalDevice()));
          return;
        }
        continue;
      }
      std::optional<std::vector<int64_t>> got = in.DataTileIndexOf(f->second);
      if (!got.has_value() || *got != *want) {
        check.result = ProofResult::Refuted(absl::StrCat(
            "device ", d, " holds tile ", Brackets(*want),
            " under the result sharding but its "
            "group's first member ",
            f->second, " holds ",
            got.has_value() ? absl::StrCat("tile ", Brackets(*got)) : std::string("nothing"),
            " under the operand sharding"));
        return;
      }
    }
    check.result = ProofResult::Proved();
    check.detail = absl::StrCat(
        "every device receives its result tile from its group's first "
        "member (",
        partitions_, " devices checked)");
  }

  FactOptions Facts() const { return FactOptions{options_.timeout_ms, options_.procedure}; }

  const InstructionCheckOptions& options_;
  int64_t partitions_;
};

}  // namespace

std::optional<HloSharding> AnnotatedSharding(const HloInstruction& instruction,
                                             absl::string_view source_text) {
  if (instruction.sharding().has_value()) return *instruction.sharding();
  if (source_text.empty() || instruction.location().line <= 0) return std::nullopt;
  std::vector<absl::string_view> lines = absl::StrSplit(source_text, '\n');
  int64_t first = instruction.location().line;
  int64_t last = first;
  if (const HloComputation* parent = instruction.parent(); parent != nullptr) {
    const auto& all = parent->instructions();
    const int64_t k = instruction.index_in_parent();
    if (k >= 0 && k + 1 < static_cast<int64_t>(all.size())) {
      last = std::max(first, all[k + 1]->location().line - 1);
    }
  }
  for (int64_t line = first; line <= last && line <= static_cast<int64_t>(lines.size()); ++line) {
    absl::string_view text = lines[line - 1];
    const size_t comment = text.find("//");
    if (comment == absl::string_view::npos) continue;
    absl::string_view note = text.substr(comment + 2);
    const size_t at = note.find("sharding=");
    if (at == absl::string_view::npos) continue;
    absl::string_view value = note.substr(at + 9);
    int depth = 0;
    size_t stop = 0;
    for (; stop < value.size(); ++stop) {
      if (value[stop] == '{') ++depth;
      if (value[stop] == '}' && --depth == 0) break;
    }
    if (stop >= value.size()) continue;
    absl::StatusOr<HloSharding> parsed = ParseSharding(value.substr(0, stop + 1));
    if (parsed.ok()) return *std::move(parsed);
  }
  return std::nullopt;
}

ProofResult ProvePlacement(const HloSharding& from, const HloSharding& to,
                           const std::vector<int64_t>& dropped, const FactOptions& options) {
  if (!from.IsTiled() || !(to.IsTiled() || to.IsReplicated())) {
    return ProofResult::Unknown("placement needs a tiled `from` and a tiled or replicated `to`");
  }
  const int64_t rank = from.TiledDataRank();
  if (to.IsTiled() && to.TiledDataRank() != rank) {
    return ProofResult::Unknown("the shardings have different data ranks");
  }
  return DecideFact(
      options,
      from.tile_assignment().num_elements() +
          (to.IsTiled() ? to.tile_assignment().num_elements() : 0),
      absl::StrCat(from.tile_assignment().num_elements(), " tile positions"), "placement",
      [&] { return EnumeratePlacement(from, to, dropped); },
      [&] { return Z3Placement(from, to, dropped, options.timeout_ms); });
}

ProofResult ProvePlacement(const HloSharding& from, const HloSharding& to,
                           const std::vector<int64_t>& dropped, int64_t timeout_ms) {
  return ProvePlacement(from, to, dropped, FactOptions{timeout_ms, Procedure::kAuto});
}

absl::StatusOr<std::vector<InstructionCheck>> CheckCollectiveInstructions(
    const HloModule& module, const InstructionCheckOptions& options) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  if (module.replica_count() > 1) {
    return absl::UnimplementedError(
        absl::StrCat("replica_count=", module.replica_count(), " is not supported (only 1)"));
  }
  const int64_t partitions =
      options.num_partitions > 0 ? options.num_partitions : module.num_partitions();
  Checker checker(options, partitions);
  std::vector<InstructionCheck> checks;
  for (const auto& computation : module.computations()) {
    for (const auto& instr : computation->instructions()) {
      if (!IsCheckedCollective(instr->opcode())) continue;
      checks.push_back(checker.Check(*instr));
    }
  }
  return checks;
}

}  // namespace spmdcheck::smt
