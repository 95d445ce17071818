#include "lint/chains.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "ir/holds_comment.h"
#include "smt/chain_model.h"

namespace spmdcheck::lint {
namespace {

// Operands that are indices, predicates or pad values (integer plumbing), not data.
bool IsIndexOperand(const HloInstruction& h, int64_t i) {
  return smt::IsIndexOperand(h, i) || (h.opcode() == HloOpcode::kPad && i == 1);
}

bool HasSideEffectOrOpaqueValue(HloOpcode op) {
  switch (op) {
    case HloOpcode::kParameter:
    case HloOpcode::kRng:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kInfeed:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kCustomCall:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool IsDataMovement(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kCopy:
    case HloOpcode::kBitcast:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
    case HloOpcode::kSlice:
    case HloOpcode::kPad:
    case HloOpcode::kConcatenate:
    case HloOpcode::kBroadcast:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kSelect:
      return true;
    default:
      return smt::IsChainCollective(opcode);
  }
}

LineComments ParseLineComments(absl::string_view source_text) {
  LineComments comments;
  int64_t line = 0;
  for (absl::string_view text : absl::StrSplit(source_text, '\n')) {
    ++line;
    if (std::optional<HoldsComment> comment = ParseHoldsComment(text)) {
      comments[line] = *std::move(comment);
    }
  }
  return comments;
}

RunStructure AnalyzeRuns(const HloComputation& entry) {
  RunStructure runs;
  runs.order = entry.PostOrder();
  auto& data = runs.data;
  auto& per_partition = runs.per_partition;
  auto& users = runs.users;
  for (const HloInstruction* h : runs.order) {
    bool is_data = HasSideEffectOrOpaqueValue(h->opcode());
    bool varies = h->opcode() == HloOpcode::kPartitionId || h->opcode() == HloOpcode::kReplicaId;
    for (const HloInstruction* operand : h->operands()) {
      is_data |= data[operand];
      varies |= per_partition[operand];
      users[operand].push_back(h);
    }
    data[h] = is_data;
    per_partition[h] = varies && !is_data;
  }
  // Members: data movement whose data operands all come from one run source (a run is a DAG:
  // a select or concatenate of pieces of the same value, as halo exchanges build them). An
  // all-reduce or reduce-scatter moves data only when its operand was masked or placed (select,
  // dynamic-update-slice, pad) within the run; otherwise it sums partial results and starts a
  // new value.
  auto& member = runs.member;
  auto& masked = runs.masked;
  for (const HloInstruction* h : runs.order) {
    if (!data[h] || !IsDataMovement(h->opcode()) || !h->shape().IsArray()) continue;
    const HloInstruction* operand = nullptr;
    const HloInstruction* source = nullptr;
    bool one_source = true;
    bool index_is_data = false;
    bool all_arrays = true;
    for (int64_t i = 0; i < h->operand_count(); ++i) {
      const HloInstruction* x = h->operand(i);
      if (!data[x]) continue;
      if (IsIndexOperand(*h, i)) {
        index_is_data = true;
        continue;
      }
      const HloInstruction* from = member[x] ? runs.source_of[x] : x;
      if (source != nullptr && from != source) one_source = false;
      source = from;
      if (operand == nullptr) operand = x;
      all_arrays &= x->shape().IsArray();
    }
    if (operand == nullptr || !one_source || index_is_data || !all_arrays) continue;
    if (h->opcode() == HloOpcode::kDynamicSlice || h->opcode() == HloOpcode::kDynamicUpdateSlice ||
        h->opcode() == HloOpcode::kSelect) {
      bool partition_dependent = false;
      for (int64_t i = 0; i < h->operand_count(); ++i) {
        if (!data[h->operand(i)] && per_partition[h->operand(i)]) partition_dependent = true;
      }
      if (!partition_dependent) continue;
    }
    // A reduction over groups of one device sums nothing: it only copies.
    bool singleton = h->attrs().replica_groups.has_value() && !h->attrs().replica_groups->empty();
    if (singleton) {
      for (const auto& group : h->attrs().replica_groups->groups()) singleton &= group.size() == 1;
    }
    const bool reduces =
        (h->opcode() == HloOpcode::kAllReduce || h->opcode() == HloOpcode::kReduceScatter) &&
        !singleton;
    const bool operand_masked = member[operand] && masked[operand];
    if (reduces && !operand_masked) continue;
    member[h] = true;
    runs.data_operand[h] = operand;
    runs.source_of[h] = source;
    masked[h] = operand_masked || h->opcode() == HloOpcode::kSelect ||
                h->opcode() == HloOpcode::kDynamicUpdateSlice || h->opcode() == HloOpcode::kPad;
  }
  return runs;
}

ChainSplit SplitIntoChains(const HloModule& module) {
  ChainSplit split;
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return split;
  RunStructure runs = AnalyzeRuns(*entry);
  const std::vector<HloInstruction*>& order = runs.order;
  auto& data = runs.data;
  auto& member = runs.member;
  auto& users = runs.users;
  for (const HloInstruction* h : order) {
    if (!member[h]) continue;
    bool leaves = h == entry->root();
    for (const HloInstruction* user : users[h]) leaves |= !member[user];
    if (!leaves) continue;
    Chain chain;
    chain.source = runs.source_of[h];
    chain.end = h;
    // The closure: everything `h` needs, stopping at the source.
    absl::flat_hash_set<const HloInstruction*> needed;
    std::vector<const HloInstruction*> stack = {h};
    bool foreign = false;
    while (!stack.empty()) {
      const HloInstruction* x = stack.back();
      stack.pop_back();
      if (x == chain.source || !needed.insert(x).second) continue;
      if (data[x] && !member[x]) foreign = true;
      for (const HloInstruction* operand : x->operands()) stack.push_back(operand);
    }
    if (foreign) continue;
    for (const HloInstruction* x : order) {
      if (!needed.contains(x)) continue;
      chain.closure.push_back(x);
      if (member[x]) chain.members.push_back(x);
      if (IsCollective(x->opcode())) ++chain.collectives;
    }
    if (chain.collectives == 0) continue;
    const char* missing = nullptr;
    if (!chain.source->sharding().has_value() && chain.source->opcode() != HloOpcode::kParameter) {
      missing = "the source has no sharding annotation";
    } else if (!h->sharding().has_value()) {
      missing = "the end has no sharding annotation";
    }
    if (missing != nullptr) {
      split.notes.push_back(absl::StrCat("chain ", chain.source->name(), " -> ", h->name(), ": ",
                                         missing, " (only the annotation-free rules apply)"));
      split.unannotated.push_back(std::move(chain));
      continue;
    }
    split.chains.push_back(std::move(chain));
  }
  return split;
}

Chain ChainBetween(const HloInstruction* source, const HloInstruction* end) {
  Chain chain;
  chain.source = source;
  chain.end = end;
  absl::flat_hash_set<const HloInstruction*> needed;
  std::vector<const HloInstruction*> stack = {end};
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    if (x == source || !needed.insert(x).second) continue;
    for (const HloInstruction* operand : x->operands()) stack.push_back(operand);
  }
  absl::flat_hash_map<const HloInstruction*, bool> depends;
  depends[source] = true;
  for (const auto& instruction : end->parent()->instructions()) {
    const HloInstruction* x = instruction.get();
    if (!needed.contains(x)) continue;
    bool d = false;
    for (const HloInstruction* operand : x->operands()) d |= depends[operand];
    depends[x] = d;
    chain.closure.push_back(x);
    if (d) chain.members.push_back(x);
    if (d && IsCollective(x->opcode())) ++chain.collectives;
  }
  return chain;
}

void CloneCalledComputations(const HloModule& module, HloModule& out, HloCloner& cloner) {
  std::vector<const HloComputation*> called;
  for (const auto& computation : module.computations()) {
    if (computation.get() != module.entry()) called.push_back(computation.get());
  }
  cloner.CloneComputations(called, out);
}

absl::StatusOr<std::unique_ptr<HloModule>> ChainModule(const HloModule& module, const Chain& chain,
                                                       int64_t num_partitions,
                                                       const InstructionOverrides& overrides) {
  auto out = std::make_unique<HloModule>(absl::StrCat("chain_", chain.end->name()));
  out->set_num_partitions(num_partitions);
  HloCloner cloner;
  CloneCalledComputations(module, *out, cloner);
  auto entry = std::make_unique<HloComputation>("chain");
  entry->ReserveInstructions(static_cast<int64_t>(chain.closure.size()) + 1);
  auto source = std::make_unique<HloInstruction>(HloOpcode::kParameter, chain.source->name(),
                                                 chain.source->shared_shape());
  source->set_parameter_number(0);
  source->set_shared_sharding(chain.source->shared_sharding());
  cloner.MapInstruction(chain.source, entry->AddInstruction(std::move(source)));
  for (const HloInstruction* h : chain.closure) {
    auto it = overrides.find(h);
    const HloInstruction& statement = it != overrides.end() ? it->second : *h;
    std::unique_ptr<HloInstruction> copy = cloner.CloneInstruction(statement);
    for (int64_t i = 0; i < copy->operand_count(); ++i) {
      const HloInstruction* operand = copy->operand(i);
      if (operand == nullptr || operand->parent() != entry.get()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "chain ", chain.source->name(), " -> ", chain.end->name(), ": ", statement.name(),
            " uses ", operand == nullptr ? "a missing operand" : operand->name(),
            ", which the chain does not compute"));
      }
    }
    HloInstruction* added = entry->AddInstruction(std::move(copy));
    cloner.MapInstruction(h, added);
    if (h == chain.end) entry->set_root(added);
  }
  if (entry->root() == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("chain ", chain.source->name(), " -> ",
                                                   chain.end->name(),
                                                   ": the end is not in the chain's closure"));
  }
  out->set_entry(out->AddComputation(std::move(entry)));
  return out;
}

}  // namespace spmdcheck::lint
