#include "lint/patterns.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "analysis/cost_model.h"
#include "ir/hlo_printer.h"
#include "ir/sharding_algebra.h"
#include "smt/chain_encoding.h"
#include "smt/chain_model.h"
#include "smt/chain_prover.h"

namespace spmdcheck::lint {
namespace {

bool IsLocalPlumbing(HloOpcode op) {
  return op == HloOpcode::kCopy || op == HloOpcode::kBitcast || op == HloOpcode::kReshape;
}

// The data operand of a chain member (the one operand that is a member or the source).
const HloInstruction* DataOperand(const HloInstruction* h,
                                  const absl::flat_hash_set<const HloInstruction*>& in_chain) {
  for (const HloInstruction* operand : h->operands()) {
    if (in_chain.contains(operand)) return operand;
  }
  return nullptr;
}

// Follows copies, bitcasts and reshapes back from `h`.
const HloInstruction* ThroughPlumbing(const HloInstruction* h,
                                      const absl::flat_hash_set<const HloInstruction*>& in_chain) {
  while (h != nullptr && IsLocalPlumbing(h->opcode()) && in_chain.contains(h)) {
    h = DataOperand(h, in_chain);
  }
  return h;
}

bool IdentityPairs(const HloInstruction& h) {
  if (!h.attrs().source_target_pairs.has_value()) return false;
  for (const auto& [source, target] : *h.attrs().source_target_pairs) {
    if (source != target) return false;
  }
  return true;
}

bool SingletonGroups(const HloInstruction& h) {
  if (!h.attrs().replica_groups.has_value() || h.attrs().replica_groups->empty()) return false;
  for (const auto& group : h.attrs().replica_groups->groups()) {
    if (group.size() != 1) return false;
  }
  return true;
}

int64_t Count(const HloModule& module, HloOpcode op) {
  int64_t n = 0;
  for (const auto& h : module.entry()->instructions()) n += h->opcode() == op ? 1 : 0;
  return n;
}

// `NAME = SHAPE copy(OPERAND)` keeping h's sharding.
HloInstruction CopyOf(const HloInstruction& h, const HloInstruction& operand) {
  HloInstruction copy(HloOpcode::kCopy, h.name(), h.shared_shape());
  copy.AppendOperand(const_cast<HloInstruction*>(&operand));
  copy.set_shared_sharding(h.shared_sharding());
  return copy;
}

// The groups of a masked all-reduce rotated so that each starts at the one member whose mask
// keeps its value (evaluated per device through the chain model); nullopt unless every group has
// exactly one such member.
std::optional<ReplicaGroups> KeptMemberFirst(const HloInstruction& select,
                                             const HloInstruction* source,
                                             const ReplicaGroups& groups, int64_t num_partitions) {
  if (groups.empty() || select.operand_count() != 3) return std::nullopt;
  absl::StatusOr<smt::ChainModel> model = smt::ChainModel::Build(
      &select, source->opcode() == HloOpcode::kParameter ? nullptr : source, num_partitions);
  if (!model.ok()) return std::nullopt;
  const HloInstruction* mask = select.operand(0);
  if (model->facts(mask).domain != smt::ValueDomain::kInteger) return std::nullopt;
  smt::ConcreteDomain dom;
  std::vector<int64_t> ids;
  for (const smt::ChainInput& input : model->inputs()) ids.push_back(dom.InputId(input.key));
  smt::ChainEvaluator<smt::ConcreteDomain> eval(*model, dom, ids);
  const std::vector<int64_t> origin(static_cast<size_t>(mask->shape().rank()), 0);
  std::vector<std::vector<int64_t>> rotated;
  for (const std::vector<int64_t>& group : groups.groups()) {
    int64_t kept = -1;
    for (size_t k = 0; k < group.size(); ++k) {
      if (group[k] < 0 || group[k] >= num_partitions) return std::nullopt;
      eval.set_budget(100000);
      const bool keeps = eval.EvalInt(mask, group[k], origin) != 0;
      if (eval.exhausted()) return std::nullopt;
      if (!keeps) continue;
      if (kept >= 0) return std::nullopt;
      kept = static_cast<int64_t>(k);
    }
    if (kept < 0) return std::nullopt;
    std::vector<int64_t> r(group.begin() + kept, group.end());
    r.insert(r.end(), group.begin(), group.begin() + kept);
    rotated.push_back(std::move(r));
  }
  return ReplicaGroups(std::move(rotated));
}

}  // namespace

std::optional<PatternRewrite> SubgroupAllGather(const Chain& chain, int64_t num_partitions) {
  const HloInstruction* source = chain.source;
  const HloInstruction* end = chain.end;
  if (!source->sharding().has_value() || !end->sharding().has_value() ||
      !source->shape().IsArray() || !end->shape().IsArray() ||
      source->shape().rank() != end->shape().rank() ||
      source->shape().element_type() != end->shape().element_type()) {
    return std::nullopt;
  }
  const HloSharding& from = *source->sharding();
  const HloSharding& to = *end->sharding();
  if (!IsPlannable(from) || !IsPlannable(to)) return std::nullopt;
  const int64_t rank = source->shape().rank();
  const TileIndex t1 = TileCounts(from, rank);
  const TileIndex t2 = TileCounts(to, rank);
  int64_t dim = -1;
  for (int64_t k = 0; k < rank; ++k) {
    if (source->shape().dimensions(k) * t1[k] != end->shape().dimensions(k) * t2[k]) {
      return std::nullopt;  // Not the same global value.
    }
    if (t1[k] == t2[k]) continue;
    if (dim >= 0 || t1[k] % t2[k] != 0) return std::nullopt;
    dim = k;
  }
  if (dim < 0) return std::nullopt;
  const int64_t n = t1[dim] / t2[dim];
  // Devices that must end up with the same tile of `to`, bucketed by which of its n parts they
  // hold under `from`; group r takes the r-th device of every bucket, in part order.
  std::map<std::vector<int64_t>, std::vector<std::vector<int64_t>>> classes;
  for (int64_t d = 0; d < num_partitions; ++d) {
    const DevicePlace a = PlaceOf(from, rank, d);
    const DevicePlace b = PlaceOf(to, rank, d);
    for (int64_t k = 0; k < rank; ++k) {
      if (k != dim && a.data_index[k] != b.data_index[k]) return std::nullopt;
    }
    if (a.data_index[dim] / n != b.data_index[dim]) return std::nullopt;
    std::vector<std::vector<int64_t>>& buckets =
        classes[std::vector<int64_t>(b.data_index.begin(), b.data_index.end())];
    buckets.resize(static_cast<size_t>(n));
    buckets[a.data_index[dim] % n].push_back(d);
  }
  std::vector<std::vector<int64_t>> groups;
  for (const auto& [place, buckets] : classes) {
    for (const std::vector<int64_t>& bucket : buckets) {
      if (bucket.size() != buckets[0].size()) return std::nullopt;
    }
    for (size_t r = 0; r < buckets[0].size(); ++r) {
      std::vector<int64_t> group;
      for (const std::vector<int64_t>& bucket : buckets) group.push_back(bucket[r]);
      groups.push_back(std::move(group));
    }
  }
  if (groups.empty() || groups[0].size() < 2) return std::nullopt;
  std::sort(groups.begin(), groups.end());
  auto module = std::make_unique<HloModule>(absl::StrCat("subgroup_all_gather_", end->name()));
  module->set_num_partitions(num_partitions);
  auto entry = std::make_unique<HloComputation>("proposed");
  Shape in_shape = source->shape();
  in_shape.clear_layout();
  auto parameter =
      std::make_unique<HloInstruction>(HloOpcode::kParameter, source->name(), in_shape);
  parameter->set_parameter_number(0);
  parameter->set_sharding(from);
  HloInstruction* x = entry->AddInstruction(std::move(parameter));
  Shape out_shape = end->shape();
  out_shape.clear_layout();
  auto gather = std::make_unique<HloInstruction>(HloOpcode::kAllGather, end->name(), out_shape);
  gather->AppendOperand(x);
  HloAttributes& attrs = gather->mutable_attrs();
  attrs.channel_id = 1;
  attrs.replica_groups = ReplicaGroups(groups).Canonical();
  attrs.use_global_device_ids = true;
  attrs.dimensions = std::vector<int64_t>{dim};
  gather->set_sharding(to);
  entry->set_root(entry->AddInstruction(std::move(gather)));
  module->set_entry(module->AddComputation(std::move(entry)));
  PatternRewrite rewrite;
  rewrite.match = {"subgroup-all-gather", "ag-partial-groups",
                   absl::StrCat("one all-gather along dim ", dim, " over groups of ", n,
                                " (devices that hold the parts of the same tile) moves only the ",
                                "missing parts")};
  rewrite.module = std::move(module);
  return rewrite;
}

std::vector<PatternRewrite> PatternRewrites(const HloModule& module, const Chain& chain,
                                            int64_t num_partitions) {
  std::vector<PatternRewrite> rewrites;
  absl::flat_hash_set<const HloInstruction*> in_chain(chain.members.begin(), chain.members.end());
  in_chain.insert(chain.source);
  const auto add = [&](PatternMatch match, const InstructionOverrides& overrides) {
    absl::StatusOr<std::unique_ptr<HloModule>> rewritten =
        ChainModule(module, chain, num_partitions, overrides);
    if (rewritten.ok()) rewrites.push_back({std::move(match), *std::move(rewritten)});
  };
  for (const HloInstruction* h : chain.members) {
    const HloInstruction* operand = DataOperand(h, in_chain);
    if (operand == nullptr) continue;
    if (h->opcode() == HloOpcode::kCollectivePermute && IdentityPairs(*h)) {
      add({"identity-permute", "cp-identity",
           absl::StrCat(h->name(), " permutes every device to itself")},
          {{h, CopyOf(*h, *operand)}});
    }
    if (IsCollective(h->opcode()) && SingletonGroups(*h) && h->shape() == operand->shape()) {
      add({"singleton-groups", "singleton-groups",
           absl::StrCat(h->name(), " runs over groups of one device")},
          {{h, CopyOf(*h, *operand)}});
    }
    const HloInstruction* before = ThroughPlumbing(operand, in_chain);
    if (before == nullptr) continue;
    // Permutes commute with the local copies and reshapes between them: the composed permute
    // runs where the second one did, on the first one's operand moved through the same plumbing.
    if (h->opcode() == HloOpcode::kCollectivePermute &&
        before->opcode() == HloOpcode::kCollectivePermute &&
        before->attrs().source_target_pairs.has_value() &&
        h->attrs().source_target_pairs.has_value()) {
      // Compose: s -> t (first) and t -> u (second) give s -> u.
      absl::flat_hash_map<int64_t, int64_t> second;
      for (const auto& [t, u] : *h->attrs().source_target_pairs) second[t] = u;
      SourceTargetPairs composed;
      for (const auto& [s, t] : *before->attrs().source_target_pairs) {
        auto it = second.find(t);
        if (it != second.end()) composed.push_back({s, it->second});
      }
      // Every device sending to itself: the two permutes undo each other.
      absl::flat_hash_set<int64_t> kept;
      for (const auto& [s, u] : composed) {
        if (s == u) kept.insert(s);
      }
      const bool identity = static_cast<int64_t>(kept.size()) == num_partitions &&
                            static_cast<int64_t>(composed.size()) == num_partitions;
      HloInstruction fused(*h);
      fused.mutable_attrs().source_target_pairs = composed;
      add({"consecutive-permutes", "cp-cp-compose",
           identity
               ? absl::StrCat(before->name(), " and ", h->name(),
                              " compose into the identity: neither is needed")
               : absl::StrCat(before->name(), " and ", h->name(), " compose into one permute")},
          {{before, CopyOf(*before, *DataOperand(before, in_chain))},
           {h, identity ? CopyOf(*h, *operand) : fused}});
    }
    if (h->opcode() == HloOpcode::kAllReduce && before == operand &&
        before->opcode() == HloOpcode::kSelect) {
      // all-reduce(select(mask, x, zeros)) where one device per group keeps x: a broadcast
      // from that device. Collective-broadcast sends from the first device of each group, so each
      // group is rotated to start at the device its mask keeps.
      const HloInstruction* x = DataOperand(before, in_chain);
      if (x != nullptr && h->attrs().replica_groups.has_value()) {
        std::optional<ReplicaGroups> groups =
            KeptMemberFirst(*before, chain.source, *h->attrs().replica_groups, num_partitions);
        HloInstruction broadcast(HloOpcode::kCollectiveBroadcast, h->name(), h->shape());
        broadcast.AppendOperand(const_cast<HloInstruction*>(x));
        broadcast.mutable_attrs().channel_id = h->attrs().channel_id;
        broadcast.mutable_attrs().replica_groups = groups.value_or(*h->attrs().replica_groups);
        if (h->sharding().has_value()) broadcast.set_sharding(*h->sharding());
        const bool rotated = groups.has_value() && !(*groups == *h->attrs().replica_groups);
        add({"masked-all-reduce-broadcast", "masked-ar-to-cbcast",
             absl::StrCat(h->name(),
                          " sums a value masked to one device per group: it only "
                          "broadcasts that device's value",
                          rotated ? " (each group rotated to start at the kept device)" : "")},
            {{h, broadcast}});
      }
    }
    if (h->opcode() == HloOpcode::kDynamicSlice && before->opcode() == HloOpcode::kAllGather) {
      const HloInstruction* x = DataOperand(before, in_chain);
      if (x != nullptr && x->shape().dimensions() == h->shape().dimensions()) {
        add({"all-gather-then-own-slice", "ag-ds-own-part",
             absl::StrCat(h->name(), " slices out of ", before->name(),
                          " the part the device already held")},
            {{h, CopyOf(*h, *x)}});
      }
    }
    if (h->opcode() == HloOpcode::kDynamicSlice && before->opcode() == HloOpcode::kAllReduce &&
        before == operand && before->attrs().replica_groups.has_value()) {
      // all-reduce then keeping one slice along a dim: a reduce-scatter along that dim.
      const HloInstruction* x = before->operand(0);
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < h->shape().rank(); ++d) {
        if (h->shape().dimensions(d) != before->shape().dimensions(d)) dims.push_back(d);
      }
      if (dims.size() == 1 && before->called_computation("to_apply") != nullptr) {
        HloInstruction scatter(HloOpcode::kReduceScatter, h->name(), h->shared_shape());
        scatter.AppendOperand(const_cast<HloInstruction*>(x));
        HloAttributes& attrs = scatter.mutable_attrs();
        attrs.channel_id = before->attrs().channel_id;
        attrs.replica_groups = before->attrs().replica_groups;
        attrs.use_global_device_ids = true;
        attrs.dimensions = std::vector<int64_t>{dims[0]};
        scatter.mutable_called().push_back(
            {"to_apply", {before->called_computation("to_apply")}, false});
        scatter.set_shared_sharding(h->shared_sharding());
        add({"all-reduce-then-slice", "ar-ds-to-rs",
             absl::StrCat(before->name(), " followed by ", h->name(),
                          " keeps only part of the sum: a reduce-scatter")},
            {{h, scatter}});
      }
    }
    if (h->opcode() == HloOpcode::kDynamicSlice && before->opcode() == HloOpcode::kAllReduce &&
        before != operand && before->attrs().replica_groups.has_value() &&
        before->called_computation("to_apply") != nullptr && before->operand_count() == 1) {
      // all-reduce, then copies and at most one reshape, then a dynamic-slice: a reduce-scatter
      // of the all-reduce's operand along some dim, reshaped (the proof picks the dim).
      std::vector<const HloInstruction*> plumbing;
      int reshapes = 0;
      for (const HloInstruction* p = operand; p != before; p = DataOperand(p, in_chain)) {
        plumbing.push_back(p);
        reshapes += p->opcode() == HloOpcode::kReshape ? 1 : 0;
      }
      const ReplicaGroups& groups = *before->attrs().replica_groups;
      const int64_t n = groups.empty() ? num_partitions : groups.first_group_size();
      const HloInstruction* x = before->operand(0);
      int64_t elements = 1;
      for (int64_t d : h->shape().dimensions()) elements *= d;
      for (int64_t d = 0; reshapes <= 1 && n > 1 && d < x->shape().rank(); ++d) {
        if (x->shape().dimensions(d) % n != 0) continue;
        std::vector<int64_t> scattered = x->shape().dimensions();
        scattered[d] /= n;
        int64_t scattered_elements = 1;
        for (int64_t e : scattered) scattered_elements *= e;
        if (scattered_elements != elements) continue;
        InstructionOverrides overrides;
        HloInstruction scatter(HloOpcode::kReduceScatter, before->name(),
                               Shape::Array(x->shape().element_type(), scattered));
        scatter.AppendOperand(const_cast<HloInstruction*>(x));
        HloAttributes& attrs = scatter.mutable_attrs();
        attrs.channel_id = before->attrs().channel_id;
        attrs.replica_groups = groups;
        attrs.use_global_device_ids = true;
        attrs.dimensions = std::vector<int64_t>{d};
        scatter.mutable_called().push_back(
            {"to_apply", {before->called_computation("to_apply")}, false});
        overrides.emplace(before, scatter);
        // The plumbing keeps its ops on the smaller value: copies keep the scattered shape, the
        // reshape goes to the slice's shape.
        Shape current = Shape::Array(x->shape().element_type(), scattered);
        for (auto it = plumbing.rbegin(); it != plumbing.rend(); ++it) {
          const HloInstruction* p = *it;
          if (p->opcode() == HloOpcode::kReshape) current = h->shape();
          HloInstruction replaced(p->opcode(), p->name(), current);
          replaced.AppendOperand(const_cast<HloInstruction*>(DataOperand(p, in_chain)));
          overrides.emplace(p, replaced);
        }
        if (current.dimensions() != h->shape().dimensions()) continue;
        overrides.emplace(h, CopyOf(*h, *operand));
        add({"all-reduce-then-slice", "ar-ds-to-rs",
             absl::StrCat(before->name(), " followed by ", h->name(), " (through ", plumbing.size(),
                          " copy/reshape) keeps only part of the sum: a "
                          "reduce-scatter along dim ",
                          d, ", then the same plumbing")},
            overrides);
      }
    }
  }
  if (std::optional<PatternRewrite> gather = SubgroupAllGather(chain, num_partitions)) {
    rewrites.push_back(*std::move(gather));
  }
  return rewrites;
}

PatternMatch MatchPattern(const Chain& chain, const HloModule& proposed) {
  absl::flat_hash_set<const HloInstruction*> in_chain(chain.members.begin(), chain.members.end());
  in_chain.insert(chain.source);
  for (const HloInstruction* h : chain.members) {
    if (h->opcode() == HloOpcode::kCollectivePermute && IdentityPairs(*h)) {
      return {"identity-permute", "cp-identity",
              absl::StrCat(h->name(), " permutes every device to itself")};
    }
    if (IsCollective(h->opcode()) && SingletonGroups(*h)) {
      return {"singleton-groups", "singleton-groups",
              absl::StrCat(h->name(), " runs over groups of one device")};
    }
  }
  for (const HloInstruction* h : chain.members) {
    const HloInstruction* before = ThroughPlumbing(DataOperand(h, in_chain), in_chain);
    if (before == nullptr) continue;
    if (h->opcode() == HloOpcode::kCollectivePermute &&
        before->opcode() == HloOpcode::kCollectivePermute) {
      return {"consecutive-permutes", "cp-cp-compose",
              absl::StrCat(before->name(), " and ", h->name(), " compose into one permute")};
    }
    if (h->opcode() == HloOpcode::kDynamicSlice && before->opcode() == HloOpcode::kAllReduce &&
        Count(proposed, HloOpcode::kReduceScatter) > 0) {
      return {
          "all-reduce-then-slice", "ar-ds-to-rs",
          absl::StrCat(before->name(), " followed by ", h->name(), " keeps only part of the sum")};
    }
    if (h->opcode() == HloOpcode::kDynamicSlice && before->opcode() == HloOpcode::kAllGather) {
      const int64_t proposed_collectives =
          Count(proposed, HloOpcode::kAllGather) + Count(proposed, HloOpcode::kAllToAll) +
          Count(proposed, HloOpcode::kCollectivePermute) + Count(proposed, HloOpcode::kAllReduce);
      if (proposed_collectives == 0) {
        return {"all-gather-then-own-slice", "ag-ds-own-part",
                absl::StrCat(h->name(), " slices out of ", before->name(),
                             " the part the device already held")};
      }
      return {"rematerialisation", "",
              absl::StrCat(before->name(), " gathers the whole value and ", h->name(),
                           " keeps one tile: a cheaper collective moves just that tile")};
    }
    if (h->opcode() == HloOpcode::kAllReduce && before->opcode() == HloOpcode::kSelect &&
        Count(proposed, HloOpcode::kAllReduce) == 0) {
      return {"masked-all-reduce-broadcast", "masked-ar-to-cbcast",
              absl::StrCat(h->name(), " sums a masked value: it only broadcasts")};
    }
  }
  return {};
}

std::vector<Finding> RepeatedCollectives(const HloModule& module, int64_t num_partitions,
                                         const std::optional<Topology>& topology,
                                         int64_t timeout_ms) {
  std::vector<Finding> findings;
  if (module.entry() == nullptr) return findings;
  PrintOptions print;
  print.print_metadata = false;
  absl::flat_hash_map<std::string, const HloInstruction*> first;
  for (const auto& instruction : module.entry()->instructions()) {
    const HloInstruction* h = instruction.get();
    if (!IsCollective(h->opcode()) || !h->shape().IsArray() || h->operand_count() != 1) continue;
    HloInstruction key(*h);
    key.set_name("collective");
    key.mutable_attrs().channel_id.reset();
    key.clear_sharding();
    std::string text = absl::StrCat(PrintInstruction(key, print), "|", h->operand(0)->name());
    auto [it, inserted] = first.emplace(std::move(text), h);
    if (inserted) continue;
    const HloInstruction* original = it->second;
    // The two collectives as chains from their common operand.
    const auto chain_module = [&](const HloInstruction* c) {
      Chain chain;
      chain.source = c->operand(0);
      chain.end = c;
      chain.members = {c};
      chain.closure = {c};
      return ChainModule(module, chain, num_partitions);
    };
    absl::StatusOr<std::unique_ptr<HloModule>> a = chain_module(original);
    absl::StatusOr<std::unique_ptr<HloModule>> b = chain_module(h);
    Finding f;
    f.rule = "repeated-collective";
    f.instructions = {original->name(), h->name()};
    f.first_line = original->location().line;
    f.last_line = h->location().line;
    f.current.flat = analysis::CostOfInstruction(*original, num_partitions);
    f.current.flat += analysis::CostOfInstruction(*h, num_partitions);
    f.proposed.flat = analysis::CostOfInstruction(*original, num_partitions);
    if (topology.has_value() && a.ok() && b.ok()) {
      const analysis::DomainWeights weights = topology->Weights();
      const auto one = analysis::CostOfModule(**a, num_partitions, &weights).total;
      f.proposed.topology = one;
      f.current.topology = one;
      *f.current.topology += one;
    }
    smt::ProofResult proof = smt::ProofResult::Unknown("the two chains could not be extracted");
    if (a.ok() && b.ok()) {
      smt::ChainProofOptions proof_options;
      proof_options.num_partitions = num_partitions;
      proof_options.timeout_ms = timeout_ms;
      proof = smt::ProveEquivChain(**a, **b, proof_options);
    }
    f.proof = smt::FormatProofResult(proof);
    f.status = proof.verdict == Verdict::kHolds ? FindingStatus::kProved : FindingStatus::kUnproven;
    f.proposed_hlo = absl::StrCat("// use ", original->name(), " wherever ", h->name(),
                                  " is used, and drop ", h->name());
    f.message = absl::StrCat(h->name(), " repeats ", original->name(),
                             " on the same operand: reuse the first result");
    findings.push_back(std::move(f));
  }
  return findings;
}

namespace {

// The collective with its channel id and sharding dropped, printed: equal keys are the same
// collective but for the operand.
std::string CollectiveKey(const HloInstruction& h) {
  HloInstruction key(h);
  key.set_name("collective");
  key.mutable_attrs().channel_id.reset();
  key.clear_sharding();
  key.set_operands({});
  key.set_shape(Shape());
  PrintOptions print;
  print.print_metadata = false;
  return PrintInstruction(key, print);
}

// A module with one parameter per source (named and sharded like it), built by `body` from them.
std::unique_ptr<HloModule> SourcesModule(
    const std::string& name, const HloModule& module,
    const std::vector<const HloInstruction*>& sources,
    const std::function<HloInstruction*(HloComputation&, HloCloner&,
                                        const std::vector<HloInstruction*>&)>& body,
    int64_t num_partitions) {
  auto out = std::make_unique<HloModule>(name);
  out->set_num_partitions(num_partitions);
  HloCloner cloner;
  CloneCalledComputations(module, *out, cloner);
  auto entry = std::make_unique<HloComputation>("proposed");
  std::vector<HloInstruction*> parameters;
  for (size_t i = 0; i < sources.size(); ++i) {
    Shape shape = sources[i]->shape();
    shape.clear_layout();
    auto parameter =
        std::make_unique<HloInstruction>(HloOpcode::kParameter, sources[i]->name(), shape);
    parameter->set_parameter_number(static_cast<int64_t>(i));
    parameter->set_shared_sharding(sources[i]->shared_sharding());
    parameters.push_back(entry->AddInstruction(std::move(parameter)));
    cloner.MapInstruction(sources[i], parameters.back());
  }
  entry->set_root(body(*entry, cloner, parameters));
  out->set_entry(out->AddComputation(std::move(entry)));
  return out;
}

}  // namespace

std::vector<Finding> ConcatenatedCollectives(const HloModule& module, int64_t num_partitions,
                                             const std::optional<Topology>& topology,
                                             int64_t timeout_ms) {
  std::vector<Finding> findings;
  if (module.entry() == nullptr) return findings;
  absl::flat_hash_map<const HloInstruction*, int64_t> uses;
  for (const auto& h : module.entry()->instructions()) {
    for (const HloInstruction* operand : h->operands()) ++uses[operand];
  }
  PrintOptions print;
  print.print_metadata = false;
  for (const auto& instruction : module.entry()->instructions()) {
    const HloInstruction* concat = instruction.get();
    if (concat->opcode() != HloOpcode::kConcatenate || concat->operand_count() < 2 ||
        !concat->attrs().dimensions.has_value() || concat->attrs().dimensions->size() != 1) {
      continue;
    }
    const int64_t cdim = (*concat->attrs().dimensions)[0];
    const HloInstruction* first = concat->operand(0);
    if (first->opcode() != HloOpcode::kAllGather &&
        first->opcode() != HloOpcode::kCollectivePermute) {
      continue;
    }
    bool same = true;
    std::vector<const HloInstruction*> sources;
    for (const HloInstruction* c : concat->operands()) {
      same &= c->opcode() == first->opcode() && c->operand_count() == 1 && uses[c] == 1 &&
              c->shape().IsArray() && CollectiveKey(*c) == CollectiveKey(*first);
      if (same) sources.push_back(c->operand(0));
    }
    if (!same) continue;
    if (first->opcode() == HloOpcode::kAllGather &&
        (!first->attrs().dimensions.has_value() || first->attrs().dimensions->size() != 1 ||
         (*first->attrs().dimensions)[0] == cdim)) {
      continue;
    }
    // Now: the collectives, then the concatenate.
    std::unique_ptr<HloModule> now = SourcesModule(
        absl::StrCat("chain_", concat->name()), module, sources,
        [&](HloComputation& entry, HloCloner& cloner, const std::vector<HloInstruction*>&) {
          for (const HloInstruction* c : concat->operands()) {
            cloner.MapInstruction(c, entry.AddInstruction(cloner.CloneInstruction(*c)));
          }
          return entry.AddInstruction(cloner.CloneInstruction(*concat));
        },
        num_partitions);
    // Proposed: the concatenate of the sources, then one collective.
    std::unique_ptr<HloModule> proposed = SourcesModule(
        absl::StrCat("proposed_", concat->name()), module, sources,
        [&](HloComputation& entry, HloCloner& cloner,
            const std::vector<HloInstruction*>& parameters) {
          std::vector<int64_t> dims = sources[0]->shape().dimensions();
          dims[cdim] = 0;
          for (const HloInstruction* x : sources) dims[cdim] += x->shape().dimensions(cdim);
          auto local = std::make_unique<HloInstruction>(
              HloOpcode::kConcatenate, absl::StrCat(concat->name(), ".local"),
              Shape::Array(concat->shape().element_type(), dims));
          local->set_operands(std::vector<HloInstruction*>(parameters.begin(), parameters.end()));
          local->mutable_attrs().dimensions = std::vector<int64_t>{cdim};
          HloInstruction* joined = entry.AddInstruction(std::move(local));
          std::unique_ptr<HloInstruction> one = cloner.CloneInstruction(*first);
          one->set_name(concat->name());
          Shape shape = concat->shape();
          shape.clear_layout();
          one->set_shape(shape);
          one->set_operands({joined});
          one->set_shared_sharding(concat->shared_sharding());
          return entry.AddInstruction(std::move(one));
        },
        num_partitions);
    Finding f;
    f.rule = "concatenated-collectives";
    f.catalog_rule = first->opcode() == HloOpcode::kAllGather ? "ag-concat-fuse" : "cp-concat-fuse";
    for (const HloInstruction* c : concat->operands()) f.instructions.push_back(c->name());
    f.instructions.push_back(concat->name());
    f.first_line = first->location().line;
    f.last_line = concat->location().line;
    f.current.flat = analysis::CostOfModule(*now, num_partitions).total;
    f.proposed.flat = analysis::CostOfModule(*proposed, num_partitions).total;
    if (topology.has_value()) {
      const analysis::DomainWeights weights = topology->Weights();
      f.current.topology = analysis::CostOfModule(*now, num_partitions, &weights).total;
      f.proposed.topology = analysis::CostOfModule(*proposed, num_partitions, &weights).total;
    }
    const auto score = [](const ChainCost& c) {
      return c.topology.has_value() ? c.topology->Score() : c.flat.Score();
    };
    if (score(f.proposed) >= score(f.current)) continue;
    smt::ChainProofOptions proof_options;
    proof_options.num_partitions = num_partitions;
    proof_options.timeout_ms = timeout_ms;
    const smt::ProofResult proof = smt::ProveEquivChain(*now, *proposed, proof_options);
    f.proof = smt::FormatProofResult(proof);
    f.status = proof.verdict == Verdict::kHolds ? FindingStatus::kProved : FindingStatus::kUnproven;
    f.proposed_hlo = PrintModule(*proposed, print);
    f.message = absl::StrCat(concat->name(), " concatenates ", concat->operand_count(), " ",
                             HloOpcodeString(first->opcode()), "s of ", sources.size(),
                             " sources: concatenating the sources first needs one ",
                             HloOpcodeString(first->opcode()), " (", f.proposed.flat.collectives,
                             " collective(s) instead of ", f.current.flat.collectives,
                             "; max bytes received per device ", f.proposed.flat.max_recv_bytes,
                             " instead of ", f.current.flat.max_recv_bytes, ")");
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace spmdcheck::lint
