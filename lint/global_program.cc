#include "lint/global_program.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "smt/chain_model.h"

namespace spmdcheck::lint {

Annotation AnnotationOf(const HloInstruction& h, const LineComments& comments) {
  Annotation a;
  a.holds = h.name();
  auto it = comments.find(h.location().line);
  if (it != comments.end() && h.location().line > 0) {
    a.holds = it->second.holds;
    a.sharding = it->second.sharding;
  }
  if (h.sharding().has_value()) a.sharding = h.sharding();
  return a;
}

absl::StatusOr<GlobalChain> MeaningFromGlobal(const Chain& chain, const HloModule& global,
                                              const LineComments& comments) {
  const Annotation source = AnnotationOf(*chain.source, comments);
  const Annotation end = AnnotationOf(*chain.end, comments);
  const HloComputation* entry = global.entry();
  const HloInstruction* to = entry->FindInstruction(end.holds);
  const HloInstruction* from = entry->FindInstruction(source.holds);
  if (to == nullptr || from == nullptr) {
    return absl::NotFoundError(absl::StrCat("--global has no instruction named ",
                                            to == nullptr ? end.holds : source.holds));
  }
  std::vector<const HloInstruction*> run;
  for (const HloInstruction* h = to; h != from;) {
    switch (h->opcode()) {
      case HloOpcode::kCopy:
      case HloOpcode::kBitcast:
      case HloOpcode::kReshape:
      case HloOpcode::kTranspose:
      case HloOpcode::kSlice:
      case HloOpcode::kBroadcast:
        break;
      default:
        return absl::UnimplementedError(
            absl::StrCat("--global: ", h->name(), " (", HloOpcodeString(h->opcode()), ") between ",
                         from->name(), " and ", to->name(), " is not a shape op"));
    }
    if (h->operand_count() != 1) {
      return absl::UnimplementedError(
          absl::StrCat("--global: ", h->name(), " has ", h->operand_count(), " operands"));
    }
    run.push_back(h);
    h = h->operand(0);
  }
  std::reverse(run.begin(), run.end());
  absl::flat_hash_map<std::string, const HloInstruction*> holder_of;
  for (const HloInstruction* h : chain.members) {
    const Annotation a = AnnotationOf(*h, comments);
    if (a.sharding.has_value() && !holder_of.contains(a.holds)) holder_of[a.holds] = h;
  }
  GlobalChain out;
  GlobalValue first;
  first.name = from->name();
  first.shape = from->shape();
  first.current = from->sharding();
  first.holder = chain.source->name();
  out.values.push_back(std::move(first));
  std::string text = from->name();
  for (const HloInstruction* h : run) {
    GlobalValue v;
    v.name = h->name();
    v.shape = h->shape();
    v.current = h->sharding();
    auto it = holder_of.find(h->name());
    if (it != holder_of.end()) v.holder = it->second->name();
    v.op.emplace(*h);
    v.op->clear_sharding();
    out.values.push_back(std::move(v));
    text = absl::StrCat(HloOpcodeString(h->opcode()), "(", text, ")");
  }
  if (out.values.size() == 1) {  // A pure resharding: the end copies the input.
    GlobalValue v;
    v.name = absl::StrCat(from->name(), ".resharded");
    v.shape = from->shape();
    v.op.emplace(HloOpcode::kCopy, v.name, v.shape);
    v.op->mutable_shape().clear_layout();
    out.values.push_back(std::move(v));
  }
  out.values.back().holder = chain.end->name();
  out.text = absl::StrCat(chain.end->name(), " = ", text, " (from --global)");
  return out;
}

absl::StatusOr<std::unique_ptr<HloModule>> ReferenceChain(
    const Chain& chain, const GlobalChain& global, const std::optional<HloSharding>& end_sharding,
    int64_t num_partitions) {
  std::vector<HloSharding> shardings;
  for (const GlobalValue& v : global.values) {
    shardings.push_back(v.current.value_or(HloSharding::Replicate()));
  }
  shardings.front() = chain.source->sharding().value_or(HloSharding::Replicate());
  if (chain.end->sharding().has_value()) {
    shardings.back() = *chain.end->sharding();
  } else if (end_sharding.has_value()) {
    shardings.back() = *end_sharding;
  }
  return PartitionGlobalChain(global, shardings, num_partitions);
}

namespace {

// The one parameter `end` depends on through data (not through offsets or masks).
absl::StatusOr<const HloInstruction*> DataSource(const HloInstruction* end) {
  std::vector<const HloInstruction*> stack = {end};
  absl::flat_hash_map<const HloInstruction*, bool> seen;
  std::vector<const HloInstruction*> parameters;
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (seen[h]) continue;
    seen[h] = true;
    if (h->opcode() == HloOpcode::kParameter) {
      parameters.push_back(h);
      continue;
    }
    for (int64_t i = 0; i < h->operand_count(); ++i) {
      if (smt::IsIndexOperand(*h, i)) continue;
      stack.push_back(h->operand(i));
    }
  }
  if (parameters.size() != 1) {
    return absl::UnimplementedError(
        absl::StrCat(end->name(), " depends on ", parameters.size(),
                     " parameters through data; name the chain's input with --from"));
  }
  return parameters[0];
}

}  // namespace

smt::ProofResult ProveChainAgainstGlobal(const HloModule& module, absl::string_view source_text,
                                         const HloModule& global,
                                         const smt::ChainProofOptions& options,
                                         std::string* checked) {
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.num_partitions();
  const HloComputation* entry = module.entry();
  if (entry == nullptr || global.entry() == nullptr) {
    return smt::ProofResult::Unknown("a module has no entry computation");
  }
  const HloInstruction* end =
      options.to.empty() ? entry->root() : entry->FindInstruction(options.to);
  if (end == nullptr) return smt::ProofResult::Unknown(absl::StrCat("no instruction ", options.to));
  const HloInstruction* source = nullptr;
  if (!options.from.empty()) {
    source = entry->FindInstruction(options.from);
  } else {
    absl::StatusOr<const HloInstruction*> found = DataSource(end);
    if (!found.ok()) return smt::ProofResult::Unknown(std::string(found.status().message()));
    source = *found;
  }
  if (source == nullptr)
    return smt::ProofResult::Unknown(absl::StrCat("no instruction ", options.from));
  const Chain chain = ChainBetween(source, end);
  const LineComments comments = ParseLineComments(source_text);
  absl::StatusOr<GlobalChain> meaning = MeaningFromGlobal(chain, global, comments);
  if (!meaning.ok()) {
    return smt::ProofResult::Unknown(
        absl::StrCat("no global meaning in --global: ", meaning.status().message()));
  }
  std::optional<HloSharding> end_sharding;
  if (const HloInstruction* g = global.entry()->FindInstruction(meaning->values.back().name);
      g != nullptr) {
    end_sharding = g->sharding();
  }
  absl::StatusOr<std::unique_ptr<HloModule>> reference =
      ReferenceChain(chain, *meaning, end_sharding, p);
  if (!reference.ok()) {
    return smt::ProofResult::Unknown(absl::StrCat(
        "the global ops could not be partitioned for comparison: ", reference.status().message()));
  }
  absl::StatusOr<std::unique_ptr<HloModule>> original = ChainModule(module, chain, p);
  if (!original.ok()) return smt::ProofResult::Unknown(std::string(original.status().message()));
  if (checked != nullptr) *checked = meaning->text;
  smt::ChainProofOptions compare = options;
  compare.from.clear();
  compare.to.clear();
  compare.num_partitions = p;
  compare.a_name = "the chain";
  compare.b_name = "the global program";
  return smt::ProveEquivChain(**original, **reference, compare);
}

}  // namespace spmdcheck::lint
