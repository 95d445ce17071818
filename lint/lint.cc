#include "lint/lint.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_printer.h"
#include "ir/sharding.h"
#include "ir/tile_assignment.h"
#include "lint/chains.h"
#include "lint/global_program.h"
#include "lint/jax_hint.h"
#include "lint/patterns.h"
#include "lint/search.h"
#include "smt/chain_model.h"
#include "smt/chain_prover.h"

namespace spmdcheck::lint {
namespace {

using analysis::CollectiveCost;

ChainCost PriceModule(const HloModule& module, int64_t num_partitions,
                      const std::optional<Topology>& topology) {
  ChainCost cost;
  cost.flat = analysis::CostOfModule(module, num_partitions).total;
  if (topology.has_value()) {
    const analysis::DomainWeights weights = topology->Weights();
    cost.topology = analysis::CostOfModule(module, num_partitions, &weights).total;
  }
  return cost;
}

int64_t ScoreOf(const ChainCost& cost) {
  return cost.topology.has_value() ? cost.topology->Score() : cost.flat.Score();
}

// Drops what the root does not use (the statements a rewrite bypassed), keeping parameters.
void RemoveDead(HloComputation& computation) {
  absl::flat_hash_set<const HloInstruction*> live;
  std::vector<const HloInstruction*> stack = {computation.root()};
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (h == nullptr || !live.insert(h).second) continue;
    for (const HloInstruction* operand : h->operands()) stack.push_back(operand);
  }
  computation.RemoveInstructionsIf([&](const HloInstruction* h) {
    return h->opcode() != HloOpcode::kParameter && !live.contains(h);
  });
}

// Adds values for `step` applied to the last value.
class MeaningBuilder {
 public:
  MeaningBuilder(PrimitiveType type, GlobalValue input) : type_(type) {
    chain_.values.push_back(std::move(input));
  }

  const std::vector<int64_t>& dims() const { return chain_.values.back().shape.dimensions(); }

  void LeadingSlice(const std::vector<int64_t>& to) {
    HloInstruction& slice = Add(to, HloOpcode::kSlice);
    std::vector<SliceDim> ranges;
    for (int64_t d : to) ranges.push_back({0, d, 1});
    slice.mutable_attrs().slice = std::move(ranges);
  }

  void Step(const smt::GlobalStep& step) {
    if (dims() != step.operand_dims) LeadingSlice(step.operand_dims);
    switch (step.kind) {
      case smt::GlobalStep::Kind::kReshape:
        Add(step.result_dims, HloOpcode::kReshape);
        break;
      case smt::GlobalStep::Kind::kTranspose:
        Add(step.result_dims, HloOpcode::kTranspose).mutable_attrs().dimensions = step.map;
        break;
      case smt::GlobalStep::Kind::kBroadcast:
        Add(step.result_dims, HloOpcode::kBroadcast).mutable_attrs().dimensions = step.map;
        break;
      case smt::GlobalStep::Kind::kDropDims: {
        std::vector<int64_t> kept = step.operand_dims;
        for (size_t d = 0; d < kept.size(); ++d) {
          if (step.map[d] < 0) kept[d] = 1;
        }
        if (kept != step.operand_dims) LeadingSlice(kept);
        Add(step.result_dims, HloOpcode::kReshape);
        break;
      }
    }
  }

  void Copy() { Add(dims(), HloOpcode::kCopy); }
  GlobalChain Finish() { return std::move(chain_); }
  size_t size() const { return chain_.values.size(); }
  GlobalValue& value(size_t i) { return chain_.values[i]; }

 private:
  // A new last value computed by `opcode` from the last one; its op, for attributes.
  HloInstruction& Add(const std::vector<int64_t>& dims, HloOpcode opcode) {
    GlobalValue v;
    v.name = absl::StrCat("v", chain_.values.size());
    v.shape = spmdcheck::Shape::Array(type_, dims);
    v.op.emplace(opcode, v.name, v.shape);
    chain_.values.push_back(std::move(v));
    return *chain_.values.back().op;
  }

  PrimitiveType type_;
  GlobalChain chain_;
};

// The chain's global meaning lifted from its local ops and annotations (smt/chain_model.h), with
// each value's holder and current sharding where an instruction of the chain holds it.
absl::StatusOr<GlobalChain> MeaningFromChain(const Chain& chain, const smt::ChainModel& model,
                                             const LineComments& comments) {
  const smt::GlobalMeaning& meaning = model.facts(chain.end).meaning;
  if (!meaning.error.empty()) return absl::UnimplementedError(meaning.error);
  if (!meaning.opaque_since.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("the global value after ", meaning.opaque_since, " is not annotated"));
  }
  const smt::ChainInput& input = model.inputs()[meaning.input];
  GlobalValue first;
  first.name = "input";
  first.shape = spmdcheck::Shape::Array(chain.source->shape().element_type(), input.global_dims);
  first.current = input.sharding;
  first.holder = chain.source->name();
  MeaningBuilder builder(chain.source->shape().element_type(), std::move(first));
  std::vector<size_t> after_step = {0};
  for (const smt::GlobalStep& step : meaning.steps) {
    builder.Step(step);
    after_step.push_back(builder.size() - 1);
  }
  if (builder.dims() != meaning.global_dims) builder.LeadingSlice(meaning.global_dims);
  // Holders: members whose meaning is a prefix of the end's.
  for (const HloInstruction* h : chain.members) {
    const smt::GlobalMeaning& m = model.facts(h).meaning;
    if (!m.error.empty() || !m.opaque_since.empty() || m.steps.size() > meaning.steps.size()) {
      continue;
    }
    bool prefix = true;
    for (size_t s = 0; s < m.steps.size() && prefix; ++s) {
      prefix = m.steps[s].kind == meaning.steps[s].kind &&
               m.steps[s].result_dims == meaning.steps[s].result_dims &&
               m.steps[s].map == meaning.steps[s].map;
    }
    if (!prefix) continue;
    size_t index = after_step[m.steps.size()];
    if (builder.value(index).shape.dimensions() != m.global_dims) continue;
    if (index == 0) continue;
    const Annotation a = AnnotationOf(*h, comments);
    GlobalValue& v = builder.value(index);
    if (!a.sharding.has_value() || (v.current.has_value() && !v.holder.empty())) continue;
    v.current = a.sharding;
    v.holder = h->name();
    v.name = a.holds;  // The pre-partitioning name, else the instruction's own.
  }
  if (builder.size() == 1) builder.Copy();  // A pure resharding: the end copies the input.
  const Annotation end = AnnotationOf(*chain.end, comments);
  if (end.holds != "input") builder.value(builder.size() - 1).name = end.holds;
  GlobalChain global = builder.Finish();
  // Value names must stay unique: fall back to vN on a clash.
  absl::flat_hash_set<std::string> names;
  for (GlobalValue& v : global.values) {
    if (!names.insert(v.name).second) v.name = absl::StrCat(v.name, ".", names.size());
  }
  global.text = absl::StrCat(chain.end->name(), " = ", meaning.text);
  return global;
}

// Shardings to read the device mesh from: the chain's ends first, then the module's annotations.
std::vector<HloSharding> MeshSources(const HloModule& module, const Chain& chain) {
  std::vector<HloSharding> seen;
  for (const HloInstruction* h : {chain.source, chain.end}) {
    if (h->sharding().has_value()) seen.push_back(*h->sharding());
  }
  for (const auto& h : module.entry()->instructions()) {
    if (h->sharding().has_value()) seen.push_back(*h->sharding());
  }
  return seen;
}

std::vector<std::string> Names(const std::vector<const HloInstruction*>& instructions) {
  std::vector<std::string> names;
  for (const HloInstruction* h : instructions) names.push_back(h->name());
  return names;
}

// A user's sharding constraint: XLA's custom-call Sharding (jax.lax.with_sharding_constraint),
// or an instruction whose metadata names jax's sharding_constraint (what partitioning leaves of
// one in a dump).
bool IsUserConstraint(const HloInstruction& h) {
  if (h.opcode() == HloOpcode::kCustomCall && h.attrs().custom_call_target.has_value() &&
      *h.attrs().custom_call_target == "Sharding") {
    return true;
  }
  const RawAttribute* metadata = h.FindRawAttribute("metadata");
  return metadata != nullptr && absl::StrContains(metadata->text, "sharding_constraint");
}

// Names of the values whose shardings a proposal must keep: the entry parameters, the entry
// result (a result tuple's elements) and the user's constraints; with `all_annotated`, every
// instruction with a sharding= too (a program before propagation).
absl::flat_hash_set<std::string> FixedNames(const HloModule& module, bool all_annotated) {
  absl::flat_hash_set<std::string> fixed;
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return fixed;
  for (const auto& h : entry->instructions()) {
    if (h->opcode() == HloOpcode::kParameter || IsUserConstraint(*h) ||
        (all_annotated && h->sharding().has_value())) {
      fixed.insert(h->name());
    }
  }
  if (const HloInstruction* root = entry->root()) {
    fixed.insert(root->name());
    if (root->opcode() == HloOpcode::kTuple) {
      for (const HloInstruction* operand : root->operands()) fixed.insert(operand->name());
    }
  }
  return fixed;
}

// A sharding that gives every device its own part of the source: tiled P ways along dim 0, so
// no two devices share an element. Proofs under it hold whatever each device holds (the source
// of a chain without annotations may be replicated, tiled or anything else).
std::optional<HloSharding> PerDeviceSharding(const HloInstruction& source, int64_t num_partitions) {
  if (!source.shape().IsArray() || source.shape().rank() == 0) return std::nullopt;
  std::vector<int64_t> dims(static_cast<size_t>(source.shape().rank()), 1);
  dims[0] = num_partitions;
  return HloSharding::Tile(TileAssignment::Iota(dims));
}

// Parameter 0 of a chain module (its source).
HloInstruction* SourceParameter(HloModule& module) {
  for (const auto& h : module.entry()->instructions()) {
    if (h->opcode() == HloOpcode::kParameter && h->parameter_number() == 0) return h.get();
  }
  return nullptr;
}

// Sets (or, with nullopt, clears) the sharding of the module's source parameter.
void SetSourceSharding(HloModule& module, const std::optional<HloSharding>& sharding) {
  HloInstruction* parameter = SourceParameter(module);
  if (parameter == nullptr) return;
  if (sharding.has_value()) {
    parameter->set_sharding(*sharding);
  } else {
    parameter->clear_sharding();
  }
}

class ChainLinter {
 public:
  ChainLinter(const HloModule& module, const LineComments& comments, const LintOptions& options,
              int64_t num_partitions, std::optional<Mesh> mesh, LintReport& report)
      : module_(module),
        comments_(comments),
        options_(options),
        num_partitions_(num_partitions),
        mesh_(std::move(mesh)),
        report_(report),
        fixed_linted_(FixedNames(module, false)) {
    if (options.global != nullptr) {
      fixed_global_ = FixedNames(*options.global, options.global_shardings_are_constraints);
    }
  }

  void Lint(const Chain& chain) {
    const std::string label = absl::StrCat(chain.source->name(), " -> ", chain.end->name());
    absl::StatusOr<std::unique_ptr<HloModule>> original =
        ChainModule(module_, chain, num_partitions_);
    if (!original.ok()) {
      Note(label, absl::StrCat("could not be extracted: ", original.status().message()));
      return;
    }
    Finding base;
    base.instructions = Names(chain.members);
    base.first_line = chain.members.front()->location().line;
    base.last_line = chain.end->location().line;
    base.current = PriceModule(**original, num_partitions_, options_.topology);

    // Refutations about the chain itself only count where the end's elements are certainly real
    // (the linted module does not say how much of a split dim is padding).
    smt::ChainProofOptions strict = ProofOptions();
    strict.only_certain_elements = true;
    const smt::ProofResult claimed = smt::ProveChain(**original, strict);
    if (claimed.verdict == Verdict::kFails) {
      ReportIncorrect(base, claimed, chain, "");
      return;
    }
    absl::StatusOr<GlobalChain> global = Meaning(chain, label);
    if (global.ok()) {
      base.global_meaning = global->text;
      // With the pre-partitioning program, the chain must compute what it claims to hold.
      if (options_.global != nullptr && claimed.verdict != Verdict::kHolds) {
        absl::StatusOr<std::unique_ptr<HloModule>> reference =
            ReferenceChain(chain, *global, std::nullopt, num_partitions_);
        if (reference.ok()) {
          const smt::ProofResult same =
              smt::ProveEquivChain(**original, **reference, ProofOptions());
          if (same.verdict == Verdict::kFails) {
            ReportIncorrect(base, same, chain, global->text);
            return;
          }
        }
      }
    }
    if (claimed.verdict == Verdict::kUnknown) {
      // Whatever the global meaning, replicas of the end must still agree.
      const smt::ProofResult replicas = smt::ProveReplicasAgree(**original, strict);
      if (replicas.verdict == Verdict::kFails) {
        ReportIncorrect(base, replicas, chain, "");
        return;
      }
    }
    std::optional<Finding> unproven;
    const std::string unknown_fixed = global.ok() ? MarkFixed(*global) : "";
    if (global.ok() && claimed.verdict != Verdict::kHolds) {
      Note(label, absl::StrCat("the chain's claimed shardings are not proved (",
                               smt::FormatProofResult(claimed), "); not searched"));
    } else if (global.ok() && !unknown_fixed.empty()) {
      Note(label, absl::StrCat("the sharding of ", unknown_fixed,
                               " is fixed (a parameter, the result or a user's constraint) but "
                               "not known; not searched"));
    } else if (global.ok()) {
      std::optional<Finding> found = Search(chain, label, **original, *global, base);
      if (found.has_value() && found->status == FindingStatus::kProved) {
        // A pattern rewrite outside the planner's space may be cheaper still (e.g. an all-gather
        // over part of a tile dim).
        std::optional<Finding> none;
        if (TryRewrites(chain, label, **original, base, none, ScoreOf(found->proposed))) return;
        report_.findings.push_back(*std::move(found));
        return;
      }
      unproven = std::move(found);
    }
    // Pattern rewrites: local changes the search does not make (or could not try).
    if (TryRewrites(chain, label, **original, base, unproven)) return;
    if (unproven.has_value()) report_.findings.push_back(*std::move(unproven));
  }

  // A parameter, the result or a user's constraint (in the linted module or, by the value it
  // holds, in the global program).
  bool IsFixed(const HloInstruction& h) const {
    return fixed_linted_.contains(h.name()) ||
           fixed_global_.contains(AnnotationOf(h, comments_).holds);
  }

  // Marks the chain's inner values whose shardings are fixed (by their holder or their global
  // name); returns the name of one without a known sharding (it cannot be kept), else "".
  std::string MarkFixed(GlobalChain& global) const {
    for (size_t i = 1; i + 1 < global.values.size(); ++i) {
      GlobalValue& v = global.values[i];
      const HloInstruction* holder = nullptr;
      for (const auto& h : module_.entry()->instructions()) {
        if (!v.holder.empty() && h->name() == v.holder) holder = h.get();
      }
      v.fixed = fixed_global_.contains(v.name) || (holder != nullptr && IsFixed(*holder));
      if (v.fixed && !v.current.has_value()) return v.name;
    }
    return "";
  }

  // The inner members of `chain` holding a fixed value that `replacement` drops or computes with
  // another op (a rewrite that changes a fixed sharding): the first one's name, else "".
  std::string ChangedFixed(const Chain& chain, const HloModule& replacement) const {
    for (const HloInstruction* h : chain.members) {
      if (h == chain.end || !IsFixed(*h)) continue;
      const HloInstruction* kept = nullptr;
      for (const auto& r : replacement.entry()->instructions()) {
        if (r->name() == h->name()) kept = r.get();
      }
      if (kept == nullptr || kept->opcode() != h->opcode()) return h->name();
    }
    return "";
  }

  smt::ChainProofOptions ProofOptions() const {
    smt::ChainProofOptions proof_options;
    proof_options.num_partitions = num_partitions_;
    proof_options.timeout_ms = options_.timeout_ms;
    return proof_options;
  }

  static std::string Summary(const Finding& finding, absl::string_view label,
                             absl::string_view description) {
    std::string message = absl::StrCat(
        "the chain ", label, " can use ", finding.proposed.flat.collectives, " collective(s) (",
        finding.proposed.flat.collective_permutes, " collective-permute) instead of ",
        finding.current.flat.collectives, " (", finding.current.flat.collective_permutes,
        "); max bytes received per device ", finding.proposed.flat.max_recv_bytes, " instead of ",
        finding.current.flat.max_recv_bytes);
    if (!description.empty()) absl::StrAppend(&message, ": ", description);
    return message;
  }

  // A partial-sum all-reduce (one that starts a chain) followed by a dynamic-slice of one dim:
  // a reduce-scatter does the same with (n-1)/n of the bytes instead of 2(n-1)/n.
  void LintPartialSums(const HloComputation& entry) {
    for (const auto& instruction : entry.instructions()) {
      const HloInstruction* slice = instruction.get();
      if (slice->opcode() != HloOpcode::kDynamicSlice) continue;
      const HloInstruction* sum = slice->operand(0);
      // Through copies and reshapes.
      while (sum->opcode() == HloOpcode::kCopy || sum->opcode() == HloOpcode::kReshape ||
             sum->opcode() == HloOpcode::kBitcast) {
        sum = sum->operand(0);
      }
      if (sum->opcode() != HloOpcode::kAllReduce || sum->operand_count() != 1 ||
          !sum->shape().IsArray() || Reported(slice->name())) {
        continue;
      }
      const Chain chain = ChainBetween(sum->operand(0), slice);
      const std::string label = absl::StrCat(sum->name(), " -> ", slice->name());
      absl::StatusOr<std::unique_ptr<HloModule>> original =
          ChainModule(module_, chain, num_partitions_);
      if (!original.ok()) continue;
      Finding base;
      base.instructions = Names(chain.members);
      base.first_line = sum->location().line;
      base.last_line = slice->location().line;
      base.current = PriceModule(**original, num_partitions_, options_.topology);
      // Partial sums without an annotation may differ on every device.
      std::optional<HloSharding> per_device;
      if (!chain.source->sharding().has_value()) {
        per_device = PerDeviceSharding(*chain.source, num_partitions_);
        if (!per_device.has_value()) continue;
        SetSourceSharding(**original, per_device);
      }
      std::optional<Finding> unproven;
      TryRewrites(chain, label, **original, base, unproven, std::nullopt, per_device);
      if (unproven.has_value()) report_.findings.push_back(*std::move(unproven));
    }
  }

  // A chain without shardings at its ends (or at its computed source): no global meaning to
  // search, but the rules proved from the collectives' own semantics apply (permutes composed,
  // an all-gather whose own part is sliced back, collectives over groups of one). Each rewrite
  // is proved for any values the devices hold at the source, not only those a sharding would
  // give them; a refuted rewrite is no finding.
  void LintUnannotated(const Chain& chain) {
    const std::string label = absl::StrCat(chain.source->name(), " -> ", chain.end->name());
    std::optional<HloSharding> per_device = PerDeviceSharding(*chain.source, num_partitions_);
    if (!per_device.has_value()) return;
    absl::StatusOr<std::unique_ptr<HloModule>> original =
        ChainModule(module_, chain, num_partitions_);
    if (!original.ok()) return;
    SetSourceSharding(**original, per_device);
    Finding base;
    base.instructions = Names(chain.members);
    base.first_line = chain.members.front()->location().line;
    base.last_line = chain.end->location().line;
    base.current = PriceModule(**original, num_partitions_, options_.topology);
    std::optional<Finding> unproven;
    if (TryRewrites(chain, label, **original, base, unproven, std::nullopt, per_device)) return;
    if (unproven.has_value()) report_.findings.push_back(*std::move(unproven));
  }

 private:
  bool Reported(const std::string& name) const {
    for (const Finding& f : report_.findings) {
      if (std::find(f.instructions.begin(), f.instructions.end(), name) != f.instructions.end()) {
        return true;
      }
    }
    return false;
  }

  // Tries the pattern rewrites of `chain`: pushes the first proved cheaper one and returns true;
  // keeps the first unproven cheaper one in `unproven`. With `per_device`, `original`'s source
  // has that sharding (PerDeviceSharding) and so does each replacement's for the proof; the
  // proposed module printed keeps the source's own.
  bool TryRewrites(const Chain& chain, const std::string& label, const HloModule& original,
                   const Finding& base, std::optional<Finding>& unproven,
                   std::optional<int64_t> to_beat = std::nullopt,
                   const std::optional<HloSharding>& per_device = std::nullopt) {
    for (PatternRewrite& rewrite : PatternRewrites(module_, chain, num_partitions_)) {
      std::unique_ptr<HloModule>& replacement = rewrite.module;
      RemoveDead(*replacement->entry());
      Finding finding = base;
      finding.proposed = PriceModule(*replacement, num_partitions_, options_.topology);
      if (ScoreOf(finding.proposed) >= to_beat.value_or(ScoreOf(finding.current))) continue;
      const std::string changed = ChangedFixed(chain, *replacement);
      if (!changed.empty()) {
        Note(label, absl::StrCat(rewrite.match.rule, " would change ", changed,
                                 ", whose sharding is fixed (a parameter, the result or a user's "
                                 "constraint): no finding"));
        continue;
      }
      if (per_device.has_value()) SetSourceSharding(*replacement, per_device);
      const smt::ProofResult same = smt::ProveEquivChain(original, *replacement, ProofOptions());
      if (per_device.has_value()) SetSourceSharding(*replacement, chain.source->sharding());
      // Without annotations a rewrite is only a guess at the chain's shape: a refuted one (a
      // slice of another device's part, groups that do not match) is no finding at all.
      if (per_device.has_value() && same.verdict == Verdict::kFails) continue;
      finding.proof = smt::FormatProofResult(same);
      finding.status =
          same.verdict == Verdict::kHolds ? FindingStatus::kProved : FindingStatus::kUnproven;
      finding.rule = rewrite.match.rule;
      finding.catalog_rule = rewrite.match.catalog_rule;
      PrintOptions print;
      print.print_metadata = false;
      finding.proposed_hlo = PrintModule(*replacement, print);
      finding.message = Summary(finding, label, rewrite.match.description);
      if (finding.status == FindingStatus::kProved) {
        report_.findings.push_back(std::move(finding));
        return true;
      }
      if (!unproven.has_value()) unproven = std::move(finding);
    }
    return false;
  }

  // The chain's global meaning: from --global when it covers the chain, else lifted.
  absl::StatusOr<GlobalChain> Meaning(const Chain& chain, const std::string& label) {
    if (options_.global != nullptr) {
      absl::StatusOr<GlobalChain> global = MeaningFromGlobal(chain, *options_.global, comments_);
      if (global.ok()) return global;
      Note(label, global.status().message());
    }
    absl::StatusOr<smt::ChainModel> model =
        smt::ChainModel::Build(chain.end, chain.source, num_partitions_);
    if (!model.ok()) {
      Note(label, absl::StrCat("no global meaning: ", model.status().message()));
      return model.status();
    }
    absl::StatusOr<GlobalChain> global = MeaningFromChain(chain, *model, comments_);
    if (!global.ok()) {
      Note(label, absl::StrCat("no global meaning: ", global.status().message(),
                               options_.global == nullptr ? " (pass --global PRE.hlo)" : ""));
    }
    return global;
  }

  // The intermediate-sharding search; a finding when its chain is cheaper.
  std::optional<Finding> Search(const Chain& chain, const std::string& label,
                                const HloModule& original, const GlobalChain& global,
                                const Finding& base) {
    std::optional<analysis::DomainWeights> weights;
    if (options_.topology.has_value()) weights = options_.topology->Weights();
    absl::StatusOr<SearchResult> search = SearchShardings(
        global, chain.source->sharding().value_or(HloSharding::Replicate()), *chain.end->sharding(),
        InferMesh(MeshSources(module_, chain), num_partitions_), num_partitions_,
        weights.has_value() ? &*weights : nullptr);
    if (!search.ok()) {
      Note(label, absl::StrCat("search failed: ", search.status().message()));
      return std::nullopt;
    }
    Finding finding = base;
    finding.proposed = PriceModule(*search->partitioned, num_partitions_, options_.topology);
    if (ScoreOf(finding.proposed) >= ScoreOf(finding.current)) return std::nullopt;
    PrintOptions print;
    print.print_metadata = false;
    finding.proposed_hlo = PrintModule(*search->partitioned, print);
    const smt::ProofResult same =
        smt::ProveEquivChain(original, *search->partitioned, ProofOptions());
    finding.proof = smt::FormatProofResult(same);
    finding.status =
        same.verdict == Verdict::kHolds ? FindingStatus::kProved : FindingStatus::kUnproven;
    if (search->cause.has_value()) {
      const GlobalValue& v = global.values[*search->cause];
      finding.cause = ShardingCause{v.holder, v.name, v.current->ToString(false),
                                    search->shardings[*search->cause].ToString(false), ""};
      if (mesh_.has_value()) {
        if (std::optional<std::string> spec =
                PartitionSpecFor(search->shardings[*search->cause], v.shape.rank(), *mesh_)) {
          finding.cause->jax = JaxConstraint(v.name, *spec);
        }
      }
    }
    const PatternMatch pattern = MatchPattern(chain, *search->partitioned);
    finding.rule = finding.cause.has_value() ? "intermediate-sharding"
                   : pattern.rule.empty()    ? "search"
                                             : pattern.rule;
    finding.catalog_rule = finding.cause.has_value() ? "" : pattern.catalog_rule;
    std::string description = pattern.description;
    if (finding.cause.has_value()) {
      description = absl::StrCat(finding.cause->holds, " is held as ", finding.cause->sharding,
                                 "; ", finding.cause->better_sharding, " needs no such resharding");
    }
    finding.message = Summary(finding, label, description);
    return finding;
  }

  void Note(absl::string_view label, absl::string_view why) {
    report_.notes.push_back(absl::StrCat("chain ", label, ": ", why));
  }

  void ReportIncorrect(Finding base, const smt::ProofResult& proof, const Chain& chain,
                       const std::string& meaning) {
    base.status = FindingStatus::kIncorrect;
    base.rule = "incorrect-chain";
    base.proof = smt::FormatProofResult(proof);
    if (!meaning.empty()) base.global_meaning = meaning;
    base.proposed = base.current;
    base.message =
        absl::StrCat("the chain ", chain.source->name(), " -> ", chain.end->name(),
                     " does not implement the shardings it claims: ", proof.counterexample);
    report_.findings.push_back(std::move(base));
  }

  const HloModule& module_;
  const LineComments& comments_;
  const LintOptions& options_;
  int64_t num_partitions_;
  std::optional<Mesh> mesh_;
  LintReport& report_;
  // Values whose shardings a proposal keeps, by linted instruction and by global name.
  absl::flat_hash_set<std::string> fixed_linted_;
  absl::flat_hash_set<std::string> fixed_global_;
};

// A value feeding several ends (one run with several exits): each exit's chain was linted on its
// own, as if it alone used the collectives the exits share. Replacing one exit's chain saves only
// what the others do not still need, so the exits are priced together: the collectives of all
// their chains counted once, against the best choice of exits to replace (each replacement
// proved) with the kept chains' collectives counted once.
void SharedValues(const std::vector<Chain>& chains, int64_t num_partitions, LintReport& report) {
  const size_t n = chains.size();
  std::vector<size_t> parent(n);
  for (size_t i = 0; i < n; ++i) parent[i] = i;
  std::function<size_t(size_t)> find = [&](size_t i) {
    return parent[i] == i ? i : parent[i] = find(parent[i]);
  };
  absl::flat_hash_map<const HloInstruction*, size_t> owner;
  for (size_t i = 0; i < n; ++i) {
    for (const HloInstruction* h : chains[i].members) {
      if (!IsCollective(h->opcode())) continue;
      auto [it, inserted] = owner.emplace(h, i);
      if (!inserted) parent[find(i)] = find(it->second);
    }
  }
  absl::flat_hash_map<size_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < n; ++i) groups[find(i)].push_back(i);
  for (const auto& root_and_members : groups) {
    // Not a structured binding: clang 14 does not let the lambda below capture one.
    const auto& members = root_and_members.second;
    if (members.size() < 2) continue;
    // The proved finding of each exit, if any.
    std::vector<std::optional<size_t>> finding(members.size());
    std::vector<size_t> replaceable;
    for (size_t m = 0; m < members.size(); ++m) {
      for (size_t f = 0; f < report.findings.size(); ++f) {
        const Finding& x = report.findings[f];
        if (x.status == FindingStatus::kProved && !x.instructions.empty() &&
            x.instructions.back() == chains[members[m]].end->name()) {
          finding[m] = f;
        }
      }
      if (finding[m].has_value()) replaceable.push_back(m);
    }
    if (replaceable.empty() || replaceable.size() > 8) continue;
    // Collectives kept when the exits in `replaced` get their replacements.
    const auto cost_of = [&](uint32_t replaced_mask) {
      CollectiveCost total;
      absl::flat_hash_set<const HloInstruction*> kept;
      for (size_t m = 0; m < members.size(); ++m) {
        bool replaced = false;
        for (size_t r = 0; r < replaceable.size(); ++r) {
          if (replaceable[r] == m && (replaced_mask >> r & 1)) replaced = true;
        }
        if (replaced) {
          total += report.findings[*finding[m]].proposed.flat;
          continue;
        }
        for (const HloInstruction* h : chains[members[m]].members) {
          if (IsCollective(h->opcode())) kept.insert(h);
        }
      }
      for (const HloInstruction* h : kept) total += analysis::CostOfInstruction(*h, num_partitions);
      return total;
    };
    const CollectiveCost current = cost_of(0);
    uint32_t best_mask = 0;
    CollectiveCost best = current;
    for (uint32_t mask = 1; mask < (1u << replaceable.size()); ++mask) {
      const CollectiveCost c = cost_of(mask);
      if (c.Score() < best.Score()) {
        best = c;
        best_mask = mask;
      }
    }
    // The group's findings give way to one for the group (or to nothing).
    std::vector<std::string> ends;
    for (size_t m : members) ends.push_back(chains[m].end->name());
    Finding group;
    std::vector<size_t> drop;
    for (size_t r = 0; r < replaceable.size(); ++r) drop.push_back(*finding[replaceable[r]]);
    if (best_mask != 0) {
      group.status = FindingStatus::kProved;
      group.rule = "shared-value";
      group.current.flat = current;
      group.proposed.flat = best;
      group.first_line = std::numeric_limits<int64_t>::max();
      std::vector<std::string> replaced_ends;
      for (size_t r = 0; r < replaceable.size(); ++r) {
        if (!(best_mask >> r & 1)) continue;
        const Finding& f = report.findings[*finding[replaceable[r]]];
        replaced_ends.push_back(f.instructions.back());
        absl::StrAppend(&group.proposed_hlo, "// the chain to ", f.instructions.back(), " (",
                        f.rule, "):\n", f.proposed_hlo, "\n");
        group.first_line = std::min(group.first_line, f.first_line);
        group.last_line = std::max(group.last_line, f.last_line);
      }
      absl::flat_hash_set<std::string> seen;
      for (size_t m : members) {
        for (const HloInstruction* h : chains[m].members) {
          if (seen.insert(h->name()).second) group.instructions.push_back(h->name());
        }
      }
      group.proof = "proved";
      group.message = absl::StrCat(
          "the value ", chains[members[0]].source->name(), " feeds ", members.size(), " ends (",
          absl::StrJoin(ends, ", "), ") through shared collectives; replacing the chain(s) to ",
          absl::StrJoin(replaced_ends, ", "), " uses ", best.collectives,
          " collective(s) instead of ", current.collectives, "; max bytes received per device ",
          best.max_recv_bytes, " instead of ", current.max_recv_bytes,
          " (each replacement proved equal)");
    } else {
      report.notes.push_back(absl::StrCat(
          "the chains to ", absl::StrJoin(ends, ", "), " share collectives: replacing ",
          replaceable.size() == 1 ? "the one" : "those",
          " with a cheaper chain on its own saves "
          "nothing while the other ends still need the shared collectives"));
    }
    std::sort(drop.rbegin(), drop.rend());
    for (size_t f : drop) report.findings.erase(report.findings.begin() + static_cast<int64_t>(f));
    if (best_mask != 0) report.findings.push_back(std::move(group));
  }
}

}  // namespace

int64_t LintReport::proved() const {
  return std::count_if(findings.begin(), findings.end(),
                       [](const Finding& f) { return f.status == FindingStatus::kProved; });
}

int64_t LintReport::incorrect() const {
  return std::count_if(findings.begin(), findings.end(),
                       [](const Finding& f) { return f.status == FindingStatus::kIncorrect; });
}

absl::StatusOr<LintReport> LintModule(const HloModule& module, absl::string_view source_text,
                                      const LintOptions& options) {
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.num_partitions();
  if (p <= 0) return absl::InvalidArgumentError("the partition count is unknown");
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  LintReport report;
  report.num_partitions = p;
  // The module the lint reads: with the inferred shardings where it has none.
  std::unique_ptr<HloModule> annotated;
  if (options.infer) {
    InferenceOptions inference_options;
    inference_options.num_partitions = p;
    inference_options.global = options.global;
    inference_options.timeout_ms = options.timeout_ms;
    absl::StatusOr<Inference> inference = InferHoldings(module, source_text, inference_options);
    if (!inference.ok()) return inference.status();
    annotated = std::move(inference->module);
    report.unannotated = inference->unannotated;
    report.holdings = std::move(inference->values);
    report.claims = std::move(inference->claims);
    for (const ClaimCheck& claim : report.claims) {
      if (claim.status != ClaimStatus::kDiffers) continue;
      report.notes.push_back(absl::StrCat("claim: ", claim.instruction, " (line ", claim.line,
                                          ") is annotated ", claim.claimed.ToString(false),
                                          " but holds ", claim.inferred->ToString(false),
                                          " (inferred and proved)"));
    }
  }
  if (options.holdings_only) return report;
  const HloModule& linted = annotated != nullptr ? *annotated : module;
  const LineComments comments = ParseLineComments(source_text);
  ChainSplit split = SplitIntoChains(linted);
  report.notes.insert(report.notes.end(), split.notes.begin(), split.notes.end());
  report.chains = static_cast<int64_t>(split.chains.size() + split.unannotated.size());
  std::optional<Mesh> mesh = options.mesh;
  if (!mesh.has_value()) mesh = MeshFromModuleText(source_text, p);
  if (mesh.has_value() && mesh->num_devices() != p) mesh.reset();
  ChainLinter linter(linted, comments, options, p, std::move(mesh), report);
  for (const Chain& chain : split.chains) linter.Lint(chain);
  for (const Chain& chain : split.unannotated) linter.LintUnannotated(chain);
  // Exits of one run share its collectives whether or not their ends are annotated.
  std::vector<Chain> all_chains = split.chains;
  all_chains.insert(all_chains.end(), split.unannotated.begin(), split.unannotated.end());
  SharedValues(all_chains, p, report);
  linter.LintPartialSums(*linted.entry());
  for (Finding& f : ConcatenatedCollectives(linted, p, options.topology, options.timeout_ms)) {
    report.findings.push_back(std::move(f));
  }
  for (Finding& f : RepeatedCollectives(linted, p, options.topology, options.timeout_ms)) {
    report.findings.push_back(std::move(f));
  }
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.first_line < b.first_line; });
  return report;
}

}  // namespace spmdcheck::lint
