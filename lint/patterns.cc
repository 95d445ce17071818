#include "lint/patterns.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/hlo_printer.h"
#include "partitioner/cost_model.h"
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

}  // namespace

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
    if (h->opcode() == HloOpcode::kCollectivePermute && operand == before &&
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
      HloInstruction fused(*h);
      fused.mutable_attrs().source_target_pairs = composed;
      add({"consecutive-permutes", "cp-cp-compose",
           absl::StrCat(before->name(), " and ", h->name(), " compose into one permute")},
          {{before, CopyOf(*before, *DataOperand(before, in_chain))}, {h, fused}});
    }
    if (h->opcode() == HloOpcode::kAllReduce && before == operand &&
        before->opcode() == HloOpcode::kSelect) {
      // all-reduce(select(mask, x, zeros)) where one device per group keeps x: a broadcast
      // from that device. Collective-broadcast sends from the first device of each group.
      const HloInstruction* x = DataOperand(before, in_chain);
      if (x != nullptr && h->attrs().replica_groups.has_value()) {
        HloInstruction broadcast(HloOpcode::kCollectiveBroadcast, h->name(), h->shape());
        broadcast.AppendOperand(const_cast<HloInstruction*>(x));
        broadcast.mutable_attrs().channel_id = h->attrs().channel_id;
        broadcast.mutable_attrs().replica_groups = h->attrs().replica_groups;
        if (h->sharding().has_value()) broadcast.set_sharding(*h->sharding());
        add({"masked-all-reduce-broadcast", "masked-ar-to-cbcast",
             absl::StrCat(h->name(),
                          " sums a value masked to one device per group: it only "
                          "broadcasts that device's value")},
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
    f.current.flat = partitioner::CostOfInstruction(*original, num_partitions);
    f.current.flat += partitioner::CostOfInstruction(*h, num_partitions);
    f.proposed.flat = partitioner::CostOfInstruction(*original, num_partitions);
    if (topology.has_value() && a.ok() && b.ok()) {
      const partitioner::DomainWeights weights = topology->Weights();
      const auto one = partitioner::CostOfModule(**a, num_partitions, &weights).total;
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

}  // namespace spmdcheck::lint
