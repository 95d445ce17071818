#include "smt/chain_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_opcode.h"
#include "ir/primitive_type.h"
#include "ir/replica_groups.h"
#include "smt/device_algebra.h"

namespace spmdcheck::smt {
namespace {

absl::Status Unsupported(const HloInstruction& h, absl::string_view why) {
  return absl::UnimplementedError(
      absl::StrCat(h.name(), " (", HloOpcodeString(h.opcode()), "): ", why));
}

int64_t Product(absl::Span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

bool IsSharedOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kConstant:
    case HloOpcode::kIota:
    case HloOpcode::kCopy:
    case HloOpcode::kConvert:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
    case HloOpcode::kBroadcast:
    case HloOpcode::kSlice:
    case HloOpcode::kPad:
    case HloOpcode::kConcatenate:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kSelect:
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kNegate:
      return true;
    default:
      return false;
  }
}

bool IsIntegerOnlyOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kPartitionId:
    case HloOpcode::kReplicaId:
    case HloOpcode::kCompare:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kAbs:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kNot:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
    case HloOpcode::kClamp:
      return true;
    default:
      return false;
  }
}

DeviceGroups IotaGroups(int64_t num_groups, int64_t group_size) {
  DeviceGroups g;
  g.num_groups = num_groups;
  g.group_size = group_size;
  g.iota = IotaTileAssignment::Plain({num_groups, group_size});
  return g;
}

absl::StatusOr<DeviceGroups> GroupsFromList(const HloInstruction& h, const ReplicaGroups& list,
                                            int64_t p, bool require_uniform) {
  if (list.is_iota()) {
    const IotaTileAssignment& iota = *list.iota();
    if (iota.num_elements() != p) {
      return Unsupported(h, absl::StrCat("replica groups ", list.ToString(), " cover ",
                                         iota.num_elements(), " devices, not ", p));
    }
    DeviceGroups g;
    g.num_groups = iota.dims()[0];
    g.group_size = iota.dims()[1];
    g.iota = iota;
    return g;
  }
  DeviceGroups g;
  g.num_groups = list.num_groups();
  g.group_of.assign(p, -1);
  g.position_of.assign(p, -1);
  for (int64_t i = 0; i < g.num_groups; ++i) {
    g.group_size = std::max<int64_t>(g.group_size, static_cast<int64_t>(list.group(i).size()));
  }
  g.members.assign(g.num_groups * g.group_size, 0);
  for (int64_t i = 0; i < g.num_groups; ++i) {
    const std::vector<int64_t> members = list.group(i);
    if (members.empty()) return Unsupported(h, "empty replica group");
    if (static_cast<int64_t>(members.size()) != g.group_size) g.uniform = false;
    g.sizes.push_back(static_cast<int64_t>(members.size()));
    for (size_t k = 0; k < members.size(); ++k) {
      const int64_t d = members[k];
      if (d < 0 || d >= p) {
        return Unsupported(h,
                           absl::StrCat("device ", d, " in replica groups is outside [0,", p, ")"));
      }
      if (g.group_of[d] >= 0) {
        return Unsupported(h, absl::StrCat("device ", d, " is in two replica groups"));
      }
      g.group_of[d] = i;
      g.position_of[d] = static_cast<int64_t>(k);
      g.members[i * g.group_size + static_cast<int64_t>(k)] = d;
    }
    for (int64_t k = static_cast<int64_t>(members.size()); k < g.group_size; ++k) {
      g.members[i * g.group_size + k] = members[0];
    }
  }
  for (int64_t d = 0; d < p; ++d) {
    if (g.group_of[d] < 0) {
      return Unsupported(h, absl::StrCat("device ", d, " is in no replica group"));
    }
  }
  if (require_uniform && !g.uniform) return Unsupported(h, "replica groups of different sizes");
  return g;
}

// The groups a collective forms over partitions (replica_count 1), per the group mode.
absl::StatusOr<DeviceGroups> ResolveGroups(const HloInstruction& h, int64_t p) {
  const HloAttributes& attrs = h.attrs();
  const bool channel = attrs.channel_id.has_value();
  const bool global = attrs.use_global_device_ids.value_or(false);
  const bool has_flag = h.opcode() == HloOpcode::kAllGather ||
                        h.opcode() == HloOpcode::kAllReduce ||
                        h.opcode() == HloOpcode::kReduceScatter;
  const ReplicaGroups list = attrs.replica_groups.value_or(ReplicaGroups());
  const bool require_uniform = h.opcode() != HloOpcode::kAllReduce;
  auto only_replica_zero = [&]() {
    return list.empty() || (list.num_groups() == 1 && list.group(0) == std::vector<int64_t>{0});
  };
  if (channel && (!has_flag || global)) {
    // Partition ids (kCrossPartition, or kFlattenedId with one replica).
    if (list.empty()) {
      if (has_flag) return Unsupported(h, "use_global_device_ids with empty replica_groups");
      return IotaGroups(1, p);
    }
    return GroupsFromList(h, list, p, require_uniform);
  }
  if (!only_replica_zero()) {
    return Unsupported(h, absl::StrCat("replica groups ", list.ToString(),
                                       " name replicas; only replica_count=1 is covered"));
  }
  if (channel) return IotaGroups(1, p);  // kCrossReplicaAndPartition: all partitions.
  return IotaGroups(p, 1);               // kCrossReplica with one replica: each device alone.
}

bool IsAddComputation(const HloComputation* c) {
  if (c == nullptr || c->root() == nullptr) return false;
  const HloInstruction* root = c->root();
  if (root->opcode() != HloOpcode::kAdd || root->operand_count() != 2) return false;
  return root->operand(0)->opcode() == HloOpcode::kParameter &&
         root->operand(1)->opcode() == HloOpcode::kParameter &&
         root->operand(0) != root->operand(1);
}

std::optional<std::vector<int64_t>> TryMatchDims(absl::Span<const int64_t> lo,
                                                 absl::Span<const int64_t> go,
                                                 absl::Span<const int64_t> lr,
                                                 absl::Span<const int64_t> gr) {
  // map[j] = result dim of operand dim j, or -1 (dropped, read at 0).
  std::vector<int64_t> map(lo.size(), -1);
  std::function<bool(size_t, size_t)> match = [&](size_t i, size_t j) -> bool {
    if (i == lr.size()) {
      for (size_t k = j; k < lo.size(); ++k) {
        if (lo[k] != 1) return false;
        map[k] = -1;
      }
      return true;
    }
    const bool can_pair = j < lo.size() && lo[j] == lr[i] && gr[i] <= go[j];
    if (can_pair && gr[i] == go[j]) {
      map[j] = static_cast<int64_t>(i);
      if (match(i + 1, j + 1)) return true;
    }
    if (j < lo.size() && lo[j] == 1) {
      map[j] = -1;
      if (match(i, j + 1)) return true;
    }
    if (lr[i] == 1 && gr[i] == 1 && match(i + 1, j)) return true;
    if (can_pair && gr[i] != go[j]) {
      map[j] = static_cast<int64_t>(i);
      if (match(i + 1, j + 1)) return true;
    }
    return false;
  };
  if (!match(0, 0)) return std::nullopt;
  return map;
}

// Global dims of a reshape's result when it only inserts or removes size-1 local dims and that
// reading is unique: every way of pairing the operand's dims with the result's (equal local
// sizes, in order; dropped operand dims must be size 1 locally and globally) gives the same
// global dims. nullopt otherwise (e.g. [8,1] -> [8,1,1] with the size-1 dim sharded 8 ways could
// keep it at result dim 1 or 2).
std::optional<std::vector<int64_t>> DegenerateReshapeGlobalDims(absl::Span<const int64_t> lo,
                                                                absl::Span<const int64_t> go,
                                                                absl::Span<const int64_t> lr) {
  std::vector<std::vector<int64_t>> readings;
  std::vector<int64_t> gr(lr.size(), 1);
  std::function<void(size_t, size_t)> match = [&](size_t i, size_t j) {
    if (readings.size() > 1) return;
    if (i == lr.size() && j == lo.size()) {
      if (std::find(readings.begin(), readings.end(), gr) == readings.end()) {
        readings.push_back(gr);
      }
      return;
    }
    if (j < lo.size() && lo[j] == 1 && go[j] == 1) match(i, j + 1);  // Drop operand dim j.
    if (i < lr.size() && lr[i] == 1) {                               // New result dim i.
      gr[i] = 1;
      match(i + 1, j);
    }
    if (i < lr.size() && j < lo.size() && lo[j] == lr[i]) {  // Pair them.
      gr[i] = go[j];
      match(i + 1, j + 1);
      gr[i] = 1;
    }
  };
  match(0, 0);
  if (readings.size() != 1) return std::nullopt;
  return readings[0];
}

bool SameMeaning(const GlobalMeaning& a, const GlobalMeaning& b) {
  if (a.input != b.input || a.global_dims != b.global_dims || a.steps.size() != b.steps.size() ||
      a.opaque_since != b.opaque_since) {
    return false;
  }
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const GlobalStep& x = a.steps[i];
    const GlobalStep& y = b.steps[i];
    if (x.kind != y.kind || x.operand_dims != y.operand_dims || x.result_dims != y.result_dims ||
        x.map != y.map) {
      return false;
    }
  }
  return true;
}

GlobalMeaning Lift(const HloInstruction& h,
                   const absl::flat_hash_map<const HloInstruction*, InstructionFacts>& facts) {
  GlobalMeaning result;
  const GlobalMeaning* base = nullptr;
  for (int64_t i = 0; i < h.operand_count(); ++i) {
    const InstructionFacts& f = facts.at(h.operand(i));
    if (f.domain != ValueDomain::kData || !f.depends_on_input) continue;
    if (!f.meaning.error.empty()) return f.meaning;
    if (base == nullptr) {
      base = &f.meaning;
    } else if (!SameMeaning(*base, f.meaning)) {
      result.error = absl::StrCat("the operands of ", h.name(), " (", f.meaning.text, " and ",
                                  base->text, ") are different global values");
      return result;
    }
  }
  if (base == nullptr) {
    result.error = absl::StrCat(h.name(), " does not depend on a chain input");
    return result;
  }
  result = *base;
  auto guess = [&](std::string why) {
    if (result.guess.empty()) result.guess = std::move(why);
  };
  switch (h.opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kNegate:
      result.error = absl::StrCat(h.name(), " (", HloOpcodeString(h.opcode()),
                                  ") computes on the data; the chain is not a data movement");
      return result;
    case HloOpcode::kSlice:
    case HloOpcode::kPad:
    case HloOpcode::kConcatenate:
      guess(absl::StrCat("the local ", HloOpcodeString(h.opcode()), " ", h.name(),
                         " was read as moving data only, but it may be a global ",
                         HloOpcodeString(h.opcode())));
      break;
    case HloOpcode::kDynamicUpdateSlice:
      if (facts.at(h.operand(0)).depends_on_input) {
        guess(absl::StrCat("the dynamic-update-slice ", h.name(),
                           " into the data was read as moving data only"));
      }
      break;
    case HloOpcode::kSelect:
      if (facts.at(h.operand(0)).depends_on_index) {
        guess(absl::StrCat("select ", h.name(),
                           " masks by element index (padding, or a global select?)"));
      }
      break;
    default:
      break;
  }
  const std::vector<int64_t>& local = h.shape().dimensions();
  const std::vector<int64_t> local_operand =
      h.operand_count() > 0 ? h.operand(0)->shape().dimensions() : std::vector<int64_t>();
  const std::optional<std::vector<int64_t>> annotated = AnnotatedGlobalDims(h);
  switch (base->opaque_since.empty() ? h.opcode() : HloOpcode::kCopy) {
    case HloOpcode::kTranspose: {
      const std::vector<int64_t>& perm = *h.attrs().dimensions;
      GlobalStep step{GlobalStep::Kind::kTranspose, base->global_dims, {}, perm};
      for (int64_t p : perm) step.result_dims.push_back(base->global_dims[p]);
      result.global_dims = step.result_dims;
      result.steps.push_back(step);
      result.text = absl::StrCat("transpose(", base->text, ")");
      break;
    }
    case HloOpcode::kBroadcast: {
      const std::vector<int64_t>& dims = *h.attrs().dimensions;
      std::vector<int64_t> global = annotated.value_or(local);
      for (size_t j = 0; j < dims.size(); ++j) global[dims[j]] = base->global_dims[j];
      GlobalStep step{GlobalStep::Kind::kBroadcast, base->global_dims, global, dims};
      result.global_dims = global;
      result.steps.push_back(step);
      result.text = absl::StrCat("broadcast(", base->text, ")");
      break;
    }
    case HloOpcode::kReshape: {
      std::vector<int64_t> global;
      if (annotated.has_value()) {
        global = *annotated;
      } else if (std::optional<std::vector<int64_t>> g =
                     DegenerateReshapeGlobalDims(local_operand, base->global_dims, local)) {
        global = *g;
      } else if (base->global_dims == local_operand) {
        global = local;
      } else {
        result.opaque_since = h.name();
        break;
      }
      if (Product(global) == Product(base->global_dims)) {
        if (global != base->global_dims) {
          result.steps.push_back(
              GlobalStep{GlobalStep::Kind::kReshape, base->global_dims, global, {}});
          result.text = absl::StrCat("reshape(", base->text, ")");
        }
      } else {
        std::optional<std::vector<int64_t>> map =
            TryMatchDims(local_operand, base->global_dims, local, global);
        if (!map.has_value()) {
          result.error = absl::StrCat("reshape ", h.name(), " from global ",
                                      DimsText(base->global_dims), " to ", DimsText(global),
                                      " is neither a reshape nor a slice of size-1 local dims");
          return result;
        }
        result.steps.push_back(
            GlobalStep{GlobalStep::Kind::kDropDims, base->global_dims, global, *map});
        for (size_t j = 0; j < map->size(); ++j) {
          if ((*map)[j] < 0 && base->global_dims[j] > 1) {
            guess(absl::StrCat("reshape ", h.name(), " drops global dim ", j, " (size ",
                               base->global_dims[j], "), read as its index 0"));
          }
        }
        result.text = absl::StrCat("reshape(slice(", base->text, "))");
      }
      result.global_dims = global;
      break;
    }
    case HloOpcode::kAllToAll:
      // The global value stays, but the local layout of the result is chunks in sender order
      // until the reshape/transpose plumbing after it and the next annotation.
      result.opaque_since = h.name();
      break;
    default:
      break;  // Data movement between devices, masks, copies: the same global value.
  }
  if (annotated.has_value() && !result.opaque_since.empty()) {
    if (Product(*annotated) != Product(result.global_dims)) {
      result.error = absl::StrCat("the local reshape ", result.opaque_since,
                                  " splits or merges sharded dims and the next "
                                  "annotation (",
                                  h.name(), ", global ", DimsText(*annotated),
                                  ") has a different number "
                                  "of elements than ",
                                  DimsText(result.global_dims));
      return result;
    }
    if (*annotated != result.global_dims) {
      result.steps.push_back(
          GlobalStep{GlobalStep::Kind::kReshape, result.global_dims, *annotated, {}});
      result.text = absl::StrCat("reshape(", result.text, ")");
      result.global_dims = *annotated;
    }
    result.opaque_since.clear();
    return result;
  }
  if (annotated.has_value()) {
    if (annotated->size() != result.global_dims.size()) {
      result.error =
          absl::StrCat("the sharding of ", h.name(), " implies global ", DimsText(*annotated),
                       " but the chain gives ", DimsText(result.global_dims));
      return result;
    }
    bool sliced = false;
    for (size_t k = 0; k < annotated->size(); ++k) {
      if ((*annotated)[k] < result.global_dims[k]) {
        result.global_dims[k] = (*annotated)[k];
        sliced = true;
      }
    }
    if (sliced) {
      result.text = absl::StrCat("slice(", result.text, ")");
      guess(absl::StrCat("the sharding of ", h.name(), " implies global ", DimsText(*annotated),
                         ", read as the leading slice"));
    }
  }
  return result;
}

}  // namespace

bool IsChainCollective(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllReduce:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectiveBroadcast:
      return true;
    default:
      return false;
  }
}

bool IsIndexOperand(const HloInstruction& h, int64_t i) {
  switch (h.opcode()) {
    case HloOpcode::kDynamicSlice:
      return i >= 1;
    case HloOpcode::kDynamicUpdateSlice:
      return i >= 2;
    case HloOpcode::kSelect:
      return i == 0;
    default:
      return false;
  }
}

std::string DimsText(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

std::optional<std::vector<int64_t>> AnnotatedGlobalDims(const HloInstruction& instruction) {
  const std::optional<HloSharding>& sharding = instruction.sharding();
  if (!sharding.has_value() || !instruction.shape().IsArray()) return std::nullopt;
  std::vector<int64_t> dims = instruction.shape().dimensions();
  if (sharding->IsReplicated()) return dims;
  if (!sharding->IsTiled() || sharding->HasManualSubgroup()) return std::nullopt;
  if (sharding->TiledDataRank() != static_cast<int64_t>(dims.size())) return std::nullopt;
  for (size_t k = 0; k < dims.size(); ++k) dims[k] *= sharding->tile_assignment().dim(k);
  return dims;
}

absl::StatusOr<ShardingLayout> MakeShardingLayout(const HloSharding& sharding,
                                                  int64_t num_partitions, int64_t data_rank) {
  ShardingLayout layout;
  layout.data_rank = data_rank;
  if (sharding.IsReplicated()) return layout;
  if (!sharding.IsTiled()) {
    return absl::UnimplementedError(
        absl::StrCat("sharding ", sharding.ToString(false), " is not tiled or replicated"));
  }
  if (sharding.HasManualSubgroup()) {
    return absl::UnimplementedError(
        absl::StrCat("sharding ", sharding.ToString(false), " has manual subgroups"));
  }
  for (SubgroupType t : sharding.subgroup_types()) {
    if (t != SubgroupType::kReplicated) {
      return absl::UnimplementedError(
          absl::StrCat("sharding ", sharding.ToString(false), " has non-replicated subgroup dims"));
    }
  }
  if (sharding.TiledDataRank() != data_rank) {
    return absl::InvalidArgumentError(absl::StrCat("sharding ", sharding.ToString(false),
                                                   " does not have data rank ", data_rank));
  }
  ProofResult bijection = ProveSharding(sharding, num_partitions);
  if (bijection.verdict != Verdict::kHolds) {
    return absl::InvalidArgumentError(absl::StrCat("sharding ", sharding.ToString(false), " over ",
                                                   num_partitions,
                                                   " partitions: ", FormatProofResult(bijection)));
  }
  layout.replicated = false;
  layout.tiles = sharding.tile_assignment();
  if (!layout.tiles.is_iota()) {
    layout.tile_index_tables.assign(data_rank, std::vector<int64_t>(num_partitions, 0));
    for (int64_t d = 0; d < num_partitions; ++d) {
      std::optional<std::vector<int64_t>> index = layout.tiles.TileIndexOf(d);
      if (!index.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("device ", d, " holds no tile"));
      }
      for (int64_t k = 0; k < data_rank; ++k) layout.tile_index_tables[k][d] = (*index)[k];
    }
  }
  return layout;
}

namespace {

using FactsMap = absl::flat_hash_map<const HloInstruction*, InstructionFacts>;

// Post-order of everything `end` depends on, stopping at the cut.
std::vector<const HloInstruction*> PostOrderUpTo(const HloInstruction* end,
                                                 const HloInstruction* cut) {
  std::vector<const HloInstruction*> order;
  absl::flat_hash_map<const HloInstruction*, bool> visited;
  std::vector<std::pair<const HloInstruction*, size_t>> stack = {{end, 0}};
  visited[end] = true;
  while (!stack.empty()) {
    auto& [h, next] = stack.back();
    const bool stop = h == cut;
    if (!stop && next < static_cast<size_t>(h->operand_count())) {
      const HloInstruction* operand = h->operand(next++);
      if (!visited[operand]) {
        visited[operand] = true;
        stack.push_back({operand, 0});
      }
      continue;
    }
    order.push_back(h);
    stack.pop_back();
  }
  return order;
}

// The domain of a computed instruction (data when floating or fed by data), whether it depends
// on an input and on the index; an error when an index operand is data, the op is not covered
// in its domain or an attribute is missing.
absl::Status ClassifyComputed(const HloInstruction* h, const FactsMap& facts_map,
                              InstructionFacts* facts) {
  const HloOpcode op = h->opcode();
  bool data = IsFloatingType(h->shape().element_type());
  for (int64_t i = 0; i < h->operand_count(); ++i) {
    const InstructionFacts& f = facts_map.at(h->operand(i));
    if (f.depends_on_input) facts->depends_on_input = true;
    if (IsIndexOperand(*h, i)) {
      if (f.domain == ValueDomain::kData) {
        return Unsupported(*h, absl::StrCat("operand ", i, " (", h->operand(i)->name(),
                                            ") must be computed from partition ids and "
                                            "constants, not from data"));
      }
      continue;
    }
    if (f.domain == ValueDomain::kData) data = true;
  }
  if (IsComplexType(h->shape().element_type())) return Unsupported(*h, "complex values");
  facts->domain = data ? ValueDomain::kData : ValueDomain::kInteger;
  if (h->shape().rank() > 0) {
    if (op == HloOpcode::kIota) facts->depends_on_index = true;
    for (int64_t i = 0; i < h->operand_count(); ++i) {
      if (!IsIndexOperand(*h, i) || op == HloOpcode::kSelect) {
        facts->depends_on_index |= facts_map.at(h->operand(i)).depends_on_index;
      }
    }
  }
  if (data) {
    if (!IsChainCollective(op) && !IsSharedOpcode(op)) {
      return Unsupported(*h, "not covered for data values");
    }
  } else if (!IsIntegerOnlyOpcode(op) && !IsSharedOpcode(op)) {
    return Unsupported(
        *h, IsChainCollective(op) ? "collectives on integer index values" : "not covered");
  }
  const HloAttributes& attrs = h->attrs();
  const bool has_attributes = ((op != HloOpcode::kTranspose && op != HloOpcode::kBroadcast &&
                                op != HloOpcode::kConcatenate) ||
                               attrs.dimensions.has_value()) &&
                              (op != HloOpcode::kSlice || attrs.slice.has_value()) &&
                              (op != HloOpcode::kPad || attrs.padding.has_value()) &&
                              (op != HloOpcode::kIota || attrs.iota_dimension.has_value()) &&
                              (op != HloOpcode::kCompare || attrs.direction.has_value());
  if (!has_attributes) return Unsupported(*h, "missing attribute (module not verified?)");
  return absl::OkStatus();
}

// A constant's values as a table (data or integer); whether they vary with the index.
absl::Status ConstantFacts(const HloInstruction* h, bool data, InstructionFacts* facts) {
  const std::optional<Literal>& literal = h->literal();
  if (!literal.has_value() || literal->elided()) {
    return Unsupported(*h, "constant without its values");
  }
  const int64_t n = literal->element_count();
  for (int64_t i = 0; i < n; ++i) {
    if (data) {
      const double v = literal->GetDouble(i);
      if (!std::isfinite(v)) return Unsupported(*h, "non-finite constant");
      facts->data_table.push_back(v);
    } else {
      facts->int_table.push_back(literal->GetInt64(i));
    }
  }
  facts->depends_on_index = h->shape().rank() > 0 &&
                            (std::adjacent_find(facts->int_table.begin(), facts->int_table.end(),
                                                std::not_equal_to<>()) != facts->int_table.end() ||
                             std::adjacent_find(facts->data_table.begin(), facts->data_table.end(),
                                                std::not_equal_to<>()) != facts->data_table.end());
  return absl::OkStatus();
}

// Integer division and remainder: the divisor must be a non-zero constant (through broadcasts,
// copies and reshapes).
absl::Status CheckDivisor(const HloInstruction* h, const FactsMap& facts_map) {
  const HloInstruction* divisor = h->operand(1);
  while (divisor->opcode() == HloOpcode::kBroadcast || divisor->opcode() == HloOpcode::kCopy ||
         divisor->opcode() == HloOpcode::kReshape) {
    divisor = divisor->operand(0);
  }
  const InstructionFacts& f = facts_map.at(divisor);
  if (divisor->opcode() != HloOpcode::kConstant ||
      std::find(f.int_table.begin(), f.int_table.end(), 0) != f.int_table.end()) {
    return Unsupported(*h, "divisor must be a non-zero constant");
  }
  return absl::OkStatus();
}

// The device groups of all-reduce, reduce-scatter, all-gather, all-to-all and
// collective-broadcast.
absl::Status GroupCollectiveFacts(const HloInstruction* h, int64_t num_partitions,
                                  InstructionFacts* facts) {
  const HloOpcode op = h->opcode();
  const HloAttributes& attrs = h->attrs();
  if ((op == HloOpcode::kAllReduce || op == HloOpcode::kReduceScatter) &&
      !IsAddComputation(h->called_computation("to_apply"))) {
    return Unsupported(*h, "only add reductions are covered");
  }
  if (h->operand_count() != 1) return Unsupported(*h, "variadic/tuple collectives");
  if ((op == HloOpcode::kAllGather || op == HloOpcode::kReduceScatter ||
       op == HloOpcode::kAllToAll) &&
      (!attrs.dimensions.has_value() || attrs.dimensions->size() != 1)) {
    return Unsupported(*h, "needs dimensions={d}");
  }
  absl::StatusOr<DeviceGroups> groups = ResolveGroups(*h, num_partitions);
  if (!groups.ok()) return groups.status();
  if (op == HloOpcode::kAllToAll) {
    const int64_t d = (*attrs.dimensions)[0];
    if (h->shape().dimensions(d) % groups->group_size != 0) {
      return Unsupported(*h, "split dimension not divisible by the group size");
    }
  }
  facts->groups = *std::move(groups);
  return absl::OkStatus();
}

// The source of every device of a collective-permute (-1: none).
absl::Status PermuteFacts(const HloInstruction* h, int64_t num_partitions,
                          InstructionFacts* facts) {
  const HloAttributes& attrs = h->attrs();
  if (h->operand_count() != 1) return Unsupported(*h, "in-place collective-permute");
  facts->permute_source.assign(num_partitions, -1);
  const SourceTargetPairs pairs = attrs.source_target_pairs.value_or(SourceTargetPairs());
  if (attrs.channel_id.has_value()) {
    for (const auto& [s, t] : pairs) {
      if (s < 0 || s >= num_partitions || t < 0 || t >= num_partitions) {
        return Unsupported(*h,
                           absl::StrCat("pair {", s, ",", t, "} outside [0,", num_partitions, ")"));
      }
      if (facts->permute_source[t] >= 0) {
        return Unsupported(*h, absl::StrCat("device ", t, " is the target of two pairs"));
      }
      facts->permute_source[t] = s;
    }
  } else {
    // Replica ids with one replica: only {0,0} means anything (every partition keeps its
    // own value).
    for (const auto& [s, t] : pairs) {
      if (s == 0 && t == 0) {
        for (int64_t d = 0; d < num_partitions; ++d) facts->permute_source[d] = d;
      }
    }
  }
  return absl::OkStatus();
}

// What one opcode needs beyond its domain: constant tables, covered conversions, products and
// divisors, pred logic, scalar start indices, predicate shapes, collective groups and sources.
absl::Status OpFacts(const HloInstruction* h, const FactsMap& facts_map, int64_t num_partitions,
                     InstructionFacts* facts) {
  const HloOpcode op = h->opcode();
  const bool data = facts->domain == ValueDomain::kData;
  switch (op) {
    case HloOpcode::kConstant:
      return ConstantFacts(h, data, facts);
    case HloOpcode::kConvert: {
      const PrimitiveType from = h->operand(0)->shape().element_type();
      const PrimitiveType to = h->shape().element_type();
      if (data && facts_map.at(h->operand(0)).domain == ValueDomain::kData &&
          IsFloatingType(from) != IsFloatingType(to)) {
        return Unsupported(*h, "conversion of data between integer and floating types");
      }
      return absl::OkStatus();
    }
    case HloOpcode::kMultiply: {
      int64_t dependent = 0;
      for (int64_t i = 0; i < 2; ++i) {
        if (facts_map.at(h->operand(i)).depends_on_input) ++dependent;
      }
      if (dependent > 1) return Unsupported(*h, "product of two data values");
      return absl::OkStatus();
    }
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
      return CheckDivisor(h, facts_map);
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kNot:
      if (h->shape().element_type() != PrimitiveType::kPred) {
        return Unsupported(*h, "bitwise logic on non-pred integers");
      }
      return absl::OkStatus();
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice: {
      const int64_t first = op == HloOpcode::kDynamicSlice ? 1 : 2;
      if (h->operand_count() != first + h->shape().rank()) {
        return Unsupported(*h, "start indices must be scalar operands, one per dim");
      }
      return absl::OkStatus();
    }
    case HloOpcode::kSelect:
      if (h->operand(0)->shape().rank() != 0 &&
          h->operand(0)->shape().dimensions() != h->shape().dimensions()) {
        return Unsupported(*h, "predicate shape differs from the result");
      }
      return absl::OkStatus();
    case HloOpcode::kAllReduce:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast:
      return GroupCollectiveFacts(h, num_partitions, facts);
    case HloOpcode::kCollectivePermute:
      return PermuteFacts(h, num_partitions, facts);
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::Status ChainModel::AddInput(const HloInstruction* h) {
  InstructionFacts facts;
  ChainInput input;
  input.instruction = h;
  input.key = h->opcode() == HloOpcode::kParameter
                  ? absl::StrCat("parameter ", h->parameter_number())
                  : h->name();
  input.sharding = h->sharding().value_or(HloSharding::Replicate());
  input.local_dims = h->shape().dimensions();
  absl::StatusOr<ShardingLayout> layout =
      MakeShardingLayout(input.sharding, num_partitions_, h->shape().rank());
  if (!layout.ok()) {
    return Unsupported(*h, absl::StrCat("chain input: ", layout.status().message()));
  }
  input.global_dims = AnnotatedGlobalDims(*h).value_or(input.local_dims);
  if (input.sharding.IsReplicated()) input.global_dims = input.local_dims;
  facts.domain = ValueDomain::kData;
  facts.depends_on_input = true;
  facts.input = static_cast<int64_t>(inputs_.size());
  facts.meaning.input = facts.input;
  facts.meaning.global_dims = input.global_dims;
  facts.meaning.text = h->name();
  inputs_.push_back(std::move(input));
  input_layouts_.push_back(*std::move(layout));
  facts_[h] = std::move(facts);
  return absl::OkStatus();
}

absl::Status ChainModel::AddComputed(const HloInstruction* h) {
  InstructionFacts facts;
  if (absl::Status s = ClassifyComputed(h, facts_, &facts); !s.ok()) return s;
  if (absl::Status s = OpFacts(h, facts_, num_partitions_, &facts); !s.ok()) return s;
  if (facts.domain == ValueDomain::kData && facts.depends_on_input)
    facts.meaning = Lift(*h, facts_);
  facts_[h] = std::move(facts);
  return absl::OkStatus();
}

absl::StatusOr<ChainModel> ChainModel::Build(const HloInstruction* end, const HloInstruction* cut,
                                             int64_t num_partitions) {
  ChainModel model;
  model.num_partitions_ = num_partitions;
  model.end_ = end;
  for (const HloInstruction* h : PostOrderUpTo(end, cut)) {
    if (!h->shape().IsArray()) return Unsupported(*h, "only array values are covered");
    const bool is_input = h == cut || h->opcode() == HloOpcode::kParameter;
    absl::Status added = is_input ? model.AddInput(h) : model.AddComputed(h);
    if (!added.ok()) return added;
  }
  return model;
}

}  // namespace spmdcheck::smt
