#include "check/metadata_claims.h"

#include <set>
#include <string>
#include <vector>

#include "check/check_pipeline.h"

namespace spmdcheck::check {
namespace {

// A collective-permute that some partition receives nothing from (it gets zeros) shifts parts
// between neighbours: GSPMD's halo exchange for a window op. It holds a neighbour's edge, not
// the value of the op it is named after under that op's sharding, so it claims nothing.
bool IsPartialShift(const HloInstruction& i, int64_t num_partitions) {
  if (i.opcode() != HloOpcode::kCollectivePermute) return false;
  const auto& pairs = i.attrs().source_target_pairs;
  if (!pairs.has_value()) return false;
  std::set<int64_t> targets;
  for (const auto& [source, target] : *pairs) targets.insert(target);
  return static_cast<int64_t>(targets.size()) < num_partitions;
}

}  // namespace

std::map<std::string, oracle::EquivOptions::HeldValue> ClaimsFromMetadata(
    const HloModule& judged, const HloModule* propagated, const HloModule& partitioned) {
  std::map<std::string, oracle::EquivOptions::HeldValue> claims;
  if (propagated == nullptr) return claims;
  // op_name -> (name in the judged module, sharding from propagation, opcode).
  struct Global {
    std::string name;
    HloSharding sharding;
    HloOpcode opcode;
    Shape shape;
  };
  // Shardy's propagation renames instructions (pad.1 received is pad.0 propagated); its
  // metadata keeps the op_name. The last of an op_name with that opcode and shape.
  std::map<std::string, const HloInstruction*> propagated_by_op_name;
  for (const auto& p : propagated->entry()->instructions()) {
    const std::string op_name = MetadataOpName(*p);
    if (!op_name.empty()) propagated_by_op_name[op_name] = p.get();
  }
  std::map<std::string, Global> by_op_name;
  for (const auto& g : judged.entry()->instructions()) {
    const std::string op_name = MetadataOpName(*g);
    // A parameter's value is the input itself: what XLA names after it (jaxlib 0.12 labels the
    // collective-permute that reshards a parameter `param.0`) holds it resharded.
    if (op_name.empty() || !g->shape().IsArray() || g->opcode() == HloOpcode::kParameter) continue;
    const HloInstruction* p = propagated->entry()->FindInstruction(g->name());
    if (p == nullptr || p->opcode() != g->opcode() ||
        (!MetadataOpName(*p).empty() && MetadataOpName(*p) != op_name)) {
      auto it = propagated_by_op_name.find(op_name);
      p = it != propagated_by_op_name.end() && it->second->opcode() == g->opcode() &&
                  it->second->shape().Compatible(g->shape())
              ? it->second
              : nullptr;
    }
    if (p == nullptr || !p->sharding().has_value() || p->sharding()->IsTuple()) continue;
    by_op_name.insert_or_assign(op_name,
                                Global{g->name(), *p->sharding(), g->opcode(), g->shape()});
  }
  std::map<std::string, std::string> last_made;  // partitioned instruction -> its op_name
  std::map<std::string, std::string> made_for;   // global name -> last partitioned instruction
  for (const auto& i : partitioned.entry()->instructions()) {
    const std::string op_name = MetadataOpName(*i);
    auto it = by_op_name.find(op_name);
    if (it == by_op_name.end() || IsPartialShift(*i, partitioned.num_partitions())) continue;
    const HloSharding& sharding = it->second.sharding;
    if (!sharding.IsReplicated() && !sharding.IsTiled()) continue;
    const Shape tile = sharding.IsTiled() ? sharding.TileShape(it->second.shape) : it->second.shape;
    if (!tile.Compatible(i->shape())) continue;
    // A collective-permute of what was already made for the same op with its tile shape moves
    // that value to other devices for a consumer (jaxlib 0.12 labels a consumer's reshard after
    // the producer): the operand holds it under the propagated sharding, the permute does not.
    if (i->opcode() == HloOpcode::kCollectivePermute && i->operand_count() == 1 &&
        last_made.contains(i->operand(0)->name()) &&
        last_made.at(i->operand(0)->name()) == op_name) {
      continue;
    }
    made_for[it->second.name] = i->name();
    last_made[i->name()] = op_name;
  }
  for (const auto& [global, made] : made_for) {
    const Global& g = by_op_name.at(last_made.at(made));
    claims[made] = {g.name, g.sharding};
  }
  // Tentative claims: an instruction named after X with the whole shape of X, else of one of X's
  // operands, may be a full copy of it that XLA made for a consumer (the all-gather that
  // reshards X for a strided slice carries X's op_name; the slice that cuts the padding off
  // such an all-gather carries the consumer's). Found right on every device, the search for a
  // later wrong value's makers stops there, so that the source op named as the root cause is
  // the one whose handler went wrong after it; a partial value of that shape (a dot's local sum
  // before its all-reduce) is wrong and no divergence.
  std::map<std::string, const HloInstruction*> judged_by_op_name;
  for (const auto& g : judged.entry()->instructions()) {
    const std::string op_name = MetadataOpName(*g);
    if (!op_name.empty() && g->opcode() != HloOpcode::kParameter) {
      judged_by_op_name[op_name] = g.get();
    }
  }
  for (const auto& i : partitioned.entry()->instructions()) {
    if (claims.contains(i->name()) || !i->shape().IsArray() ||
        IsPartialShift(*i, partitioned.num_partitions())) {
      continue;
    }
    auto source = judged_by_op_name.find(MetadataOpName(*i));
    if (source == judged_by_op_name.end()) continue;
    std::vector<const HloInstruction*> candidates = {source->second};
    for (const HloInstruction* operand : source->second->operands()) candidates.push_back(operand);
    for (const HloInstruction* candidate : candidates) {
      if (!candidate->shape().IsArray() || !i->shape().Compatible(candidate->shape())) continue;
      claims[i->name()] = {candidate->name(), HloSharding::Replicate(), /*tentative=*/true};
      break;
    }
  }
  return claims;
}

}  // namespace spmdcheck::check
