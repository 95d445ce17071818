#include "lint/inference.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/hlo_opcode.h"
#include "ir/sharding_algebra.h"
#include "ir/tile_assignment.h"
#include "lint/chains.h"
#include "lint/search.h"
#include "smt/chain_encoding.h"
#include "smt/chain_model.h"
#include "smt/chain_prover.h"

namespace spmdcheck::lint {
namespace {

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// The index in the value (the last step's result, cut to `global_dims`) of input element `x`:
// the global steps applied forwards. nullopt when the element is not in the value (a dropped
// dim at another index, outside a leading slice). Broadcast dims read as 0.
std::optional<std::vector<int64_t>> ForwardIndex(const smt::GlobalMeaning& meaning,
                                                 std::vector<int64_t> x,
                                                 const std::vector<int64_t>& input_dims) {
  std::vector<int64_t> dims = input_dims;
  for (const smt::GlobalStep& step : meaning.steps) {
    if (x.size() != step.operand_dims.size()) return std::nullopt;
    for (size_t k = 0; k < x.size(); ++k) {
      if (x[k] >= step.operand_dims[k]) return std::nullopt;  // Outside a leading slice.
    }
    std::vector<int64_t> y(step.result_dims.size(), 0);
    switch (step.kind) {
      case smt::GlobalStep::Kind::kReshape:
        y = MultiIndex(step.result_dims, LinearIndex(step.operand_dims, x));
        break;
      case smt::GlobalStep::Kind::kTranspose:
        for (size_t i = 0; i < step.map.size(); ++i) y[i] = x[step.map[i]];
        break;
      case smt::GlobalStep::Kind::kBroadcast:
        for (size_t j = 0; j < step.map.size(); ++j) y[step.map[j]] = x[j];
        break;
      case smt::GlobalStep::Kind::kDropDims:
        for (size_t j = 0; j < step.map.size(); ++j) {
          if (step.map[j] >= 0) {
            y[step.map[j]] = x[j];
          } else if (x[j] != 0) {
            return std::nullopt;
          }
        }
        break;
    }
    x = std::move(y);
    dims = step.result_dims;
  }
  if (x.size() != meaning.global_dims.size()) return std::nullopt;
  for (size_t k = 0; k < x.size(); ++k) {
    if (x[k] >= meaning.global_dims[k]) return std::nullopt;
  }
  return x;
}

// The sharding under which device d's local origin sits at global index origin[d] of a value of
// global dims `global` and local dims `local`; nullopt when some origin is not at a tile corner or
// the tiles are held unevenly. When the devices hold only a leading box of the tiles (a slice of
// the value, as the partitioner leaves it), the sharding describes that leading slice.
std::optional<HloSharding> ShardingFromOrigins(const std::vector<std::vector<int64_t>>& origin,
                                               const std::vector<int64_t>& local,
                                               const std::vector<int64_t>& global,
                                               bool allow_slice) {
  const int64_t p = static_cast<int64_t>(origin.size());
  const size_t rank = local.size();
  std::vector<int64_t> counts(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    if (local[k] <= 0 || global[k] < local[k]) return std::nullopt;
    counts[k] = (global[k] + local[k] - 1) / local[k];
  }
  std::vector<DevicePlace> places(static_cast<size_t>(p));
  std::vector<int64_t> used(rank, 1);
  for (int64_t d = 0; d < p; ++d) {
    if (origin[d].size() != rank) return std::nullopt;
    places[d].data_index.assign(rank, 0);
    for (size_t k = 0; k < rank; ++k) {
      if (origin[d][k] % local[k] != 0) return std::nullopt;
      places[d].data_index[k] = origin[d][k] / local[k];
      if (places[d].data_index[k] >= counts[k]) return std::nullopt;
      used[k] = std::max(used[k], places[d].data_index[k] + 1);
    }
  }
  if (!allow_slice && used != counts) return std::nullopt;
  absl::StatusOr<HloSharding> built =
      BuildSharding(used, 1, p, [&](int64_t d) { return places[d]; });
  if (!built.ok()) return std::nullopt;
  return *std::move(built);
}

// Every vector of tile counts whose product divides p (each a divisor of p), one per dim.
void TileCountCandidates(int64_t p, size_t rank, std::vector<int64_t>& prefix, int64_t used,
                         std::vector<std::vector<int64_t>>& out) {
  if (prefix.size() == rank) {
    out.push_back(prefix);
    return;
  }
  for (int64_t t = 1; t <= p / used; ++t) {
    if ((p / used) % t != 0) continue;
    prefix.push_back(t);
    TileCountCandidates(p, rank, prefix, used * t, out);
    prefix.pop_back();
  }
}

std::vector<std::vector<int64_t>> PartitionGroupsOf(const HloInstruction& h, int64_t p) {
  std::vector<std::vector<int64_t>> groups;
  if (h.attrs().replica_groups.has_value()) groups = h.attrs().replica_groups->groups();
  if (groups.empty()) {
    std::vector<int64_t> all(static_cast<size_t>(p));
    for (int64_t d = 0; d < p; ++d) all[d] = d;
    groups.push_back(all);
  }
  return groups;
}

// Partial sums of a dot whose contracting dims are split: devices with the same `place` hold
// terms of the same result tile, one per contraction tile.
struct PartialSums {
  HloSharding tiles;  // Devices holding terms of the same result tile replicate each other here.
  // Per device: the contraction tiles whose terms it has summed so far (one, after the dot).
  std::vector<std::set<std::vector<int64_t>>> summed;
  int64_t contraction_tiles = 0;  // How many there are.
};

class Inferrer {
 public:
  Inferrer(HloModule& module, const LineComments& comments, const InferenceOptions& options,
           int64_t p)
      : module_(module), comments_(comments), options_(options), p_(p) {}

  void Run(Inference& out) {
    HloComputation& entry = *module_.entry();
    runs_ = AnalyzeRuns(entry);
    for (HloInstruction* h : runs_.order) {
      if (!runs_.data[h] || !h->shape().IsArray()) continue;
      std::optional<HloSharding> claim = h->sharding();
      bool attribute = claim.has_value();
      if (!claim.has_value()) {
        auto it = comments_.find(h->location().line);
        if (it != comments_.end() && h->location().line > 0) claim = it->second.sharding;
      }
      if (h->opcode() == HloOpcode::kParameter) {
        if (!claim.has_value()) claim = GlobalCandidate(*h);
        if (claim.has_value() && !attribute) h->set_sharding(*claim);
        continue;
      }
      ++out.data_values;
      if (!claim.has_value()) ++out.unannotated;
      std::string rule, proof;
      std::optional<HloSharding> inferred;
      // Intermediate values of a run (every user is in the run too) are only inferred and claims
      // only checked where enumeration proves them cheaply: the lint needs the ends, and proves
      // the ends' claims itself.
      const bool exit = IsExit(h);
      const bool cheap = p_ * Product(h->shape().dimensions()) <= options_.enumeration_budget;
      if (claim.has_value() && !cheap) {
        out.claims.push_back(
            {h->name(), h->location().line, *claim, std::nullopt, ClaimStatus::kUnchecked});
        continue;
      }
      if (!claim.has_value() && runs_.member[h] && !exit && !cheap) continue;
      if (claim.has_value()) {
        // A claim that proves needs no inference.
        if (runs_.member[h] && Verify(h, *claim, &proof)) {
          if (!attribute) h->clear_sharding();
          out.claims.push_back(
              {h->name(), h->location().line, *claim, claim, ClaimStatus::kConfirmed});
          continue;
        }
        if (!attribute) h->clear_sharding();
      }
      const std::optional<HloSharding> original = h->sharding();
      inferred = runs_.member[h] ? InferMember(h, &rule, &proof) : InferComputed(h, &rule, &proof);
      if (original.has_value()) {
        h->set_sharding(*original);
      } else {
        h->clear_sharding();
      }
      if (claim.has_value()) {
        ClaimCheck check{h->name(), h->location().line, *claim, inferred, ClaimStatus::kUnchecked};
        if (inferred.has_value()) {
          check.status = SameLayout(*inferred, *claim, h->shape().rank(), p_)
                             ? ClaimStatus::kConfirmed
                             : ClaimStatus::kDiffers;
        }
        out.claims.push_back(std::move(check));
        continue;
      }
      if (!inferred.has_value()) continue;
      h->set_sharding(*inferred);
      out.values.push_back({h->name(), *inferred, rule, proof});
    }
  }

 private:
  // --global: the sharding of the global value the instruction holds (same rank only).
  std::optional<HloSharding> GlobalCandidate(const HloInstruction& h) const {
    if (options_.global == nullptr || options_.global->entry() == nullptr) return std::nullopt;
    std::string holds = h.name();
    auto it = comments_.find(h.location().line);
    if (it != comments_.end() && h.location().line > 0) holds = it->second.holds;
    const HloInstruction* g = options_.global->entry()->FindInstruction(holds);
    if (g == nullptr || !g->sharding().has_value() || !g->shape().IsArray() ||
        g->shape().rank() != h.shape().rank()) {
      return std::nullopt;
    }
    const HloSharding& s = *g->sharding();
    if (!s.IsReplicated() && !(s.IsTiled() && s.TiledDataRank() == h.shape().rank())) {
      return std::nullopt;
    }
    return s;
  }

  // A member some non-member (or the root) uses: the end of a chain.
  bool IsExit(const HloInstruction* h) {
    if (h == module_.entry()->root()) return true;
    for (const HloInstruction* user : runs_.users[h]) {
      if (!runs_.member[user]) return true;
    }
    return false;
  }

  const HloInstruction* Cut(const HloInstruction* source) const {
    return source->opcode() == HloOpcode::kParameter ? nullptr : source;
  }

  // Proves that `h`, annotated with `s`, holds what `s` says (from its run's source).
  bool Verify(HloInstruction* h, const HloSharding& s, std::string* how) {
    const HloInstruction* source = runs_.source_of[h];
    if (source == nullptr || !source->sharding().has_value()) return false;
    h->set_sharding(s);
    smt::ChainProofOptions options;
    if (const HloInstruction* cut = Cut(source)) options.from = cut->name();
    options.to = h->name();
    options.num_partitions = p_;
    options.timeout_ms = options_.timeout_ms;
    const int64_t positions = p_ * Product(h->shape().dimensions());
    smt::ProofResult r;
    if (positions <= options_.enumeration_budget) {
      r = smt::EnumerateChain(module_, options).result;
      *how = absl::StrCat("enumeration over ", positions, " positions");
    } else {
      r = smt::ProveChain(module_, options);
      *how = "Z3";
    }
    return r.verdict == Verdict::kHolds;
  }

  // Members inside a run get an annotation only where it reads the value as the run's global
  // value itself: a leading slice or a re-anchored (opaque) layout of an intermediate would change
  // the meaning lifted downstream (an all-to-all's chunked output re-anchors as some array, but
  // not the one the chain computes). Run exits may be read either way.
  std::optional<HloSharding> InferMember(HloInstruction* h, std::string* rule, std::string* proof) {
    const bool exit = IsExit(h);
    const HloInstruction* source = runs_.source_of[h];
    if (source == nullptr || !source->sharding().has_value()) return std::nullopt;
    *rule = absl::StrCat("data movement from ", source->name());
    if (std::optional<HloSharding> g = GlobalCandidate(*h); g.has_value() && Verify(h, *g, proof)) {
      *rule = absl::StrCat(*rule, " (as --global has it)");
      return g;
    }
    h->clear_sharding();
    absl::StatusOr<smt::ChainModel> model = smt::ChainModel::Build(h, Cut(source), p_);
    if (!model.ok()) return std::nullopt;
    const smt::InstructionFacts& facts = model->facts(h);
    const smt::GlobalMeaning& meaning = facts.meaning;
    if (facts.domain != smt::ValueDomain::kData || !meaning.error.empty() || meaning.input < 0) {
      return std::nullopt;
    }
    const smt::ChainInput& input = model->inputs()[meaning.input];
    smt::ConcreteDomain dom;
    std::vector<int64_t> ids;
    for (const smt::ChainInput& in : model->inputs()) ids.push_back(dom.InputId(in.key));
    smt::ChainEvaluator<smt::ConcreteDomain> eval(*model, dom, ids);
    const std::vector<int64_t>& local = h->shape().dimensions();
    // The input element a device holds at a local index (nullopt: a sum, a constant, another
    // input).
    auto element = [&](int64_t device,
                       const std::vector<int64_t>& index) -> std::optional<std::vector<int64_t>> {
      eval.set_budget(1'000'000);
      const smt::SourceSum sum = eval.EvalData(h, device, index);
      if (eval.exhausted() || sum.constant != 0 || sum.terms.size() != 1) return std::nullopt;
      const auto& [e, coefficient] = *sum.terms.begin();
      if (coefficient != 1 || e.input != ids[meaning.input]) return std::nullopt;
      return e.index;
    };
    std::vector<std::vector<int64_t>> base(static_cast<size_t>(p_));
    const std::vector<int64_t> zeros(local.size(), 0);
    for (int64_t d = 0; d < p_; ++d) {
      std::optional<std::vector<int64_t>> x = element(d, zeros);
      if (!x.has_value()) return std::nullopt;
      std::optional<std::vector<int64_t>> g = ForwardIndex(meaning, *x, input.global_dims);
      if (!g.has_value()) return std::nullopt;
      base[d] = *std::move(g);
    }
    if (meaning.opaque_since.empty()) {
      std::optional<HloSharding> s = ShardingFromOrigins(base, local, meaning.global_dims, true);
      if (s.has_value() && Verify(h, *s, proof)) return s;
      return std::nullopt;
    }
    // Opaque layout: the same elements in row-major order, under a global shape to find (the
    // value's own global shape first).
    if (!exit) return std::nullopt;
    const int64_t total = Product(meaning.global_dims);
    std::vector<int64_t> linear(static_cast<size_t>(p_));
    for (int64_t d = 0; d < p_; ++d) linear[d] = LinearIndex(meaning.global_dims, base[d]);
    // Device 0's steps along each local dim of size > 1.
    std::vector<std::optional<int64_t>> step(local.size());
    for (size_t k = 0; k < local.size(); ++k) {
      if (local[k] <= 1) continue;
      std::vector<int64_t> unit = zeros;
      unit[k] = 1;
      std::optional<std::vector<int64_t>> x = element(0, unit);
      if (!x.has_value()) return std::nullopt;
      std::optional<std::vector<int64_t>> g = ForwardIndex(meaning, *x, input.global_dims);
      if (!g.has_value()) return std::nullopt;
      step[k] = LinearIndex(meaning.global_dims, *g) - linear[0];
    }
    std::vector<std::vector<int64_t>> candidates;
    std::vector<int64_t> prefix;
    TileCountCandidates(p_, local.size(), prefix, 1, candidates);
    std::stable_partition(candidates.begin(), candidates.end(), [&](const std::vector<int64_t>& c) {
      if (c.size() != meaning.global_dims.size()) return false;
      for (size_t k = 0; k < c.size(); ++k) {
        if (local[k] * c[k] != meaning.global_dims[k]) return false;
      }
      return true;
    });
    int tried = 0;
    for (const std::vector<int64_t>& counts : candidates) {
      std::vector<int64_t> global(local.size());
      for (size_t k = 0; k < local.size(); ++k) global[k] = local[k] * counts[k];
      if (Product(global) != total) continue;
      bool strides_fit = true;
      int64_t stride = 1;
      for (size_t k = local.size(); k-- > 0;) {
        if (step[k].has_value() && *step[k] != stride) strides_fit = false;
        stride *= global[k];
      }
      if (!strides_fit) continue;
      std::vector<std::vector<int64_t>> origin(static_cast<size_t>(p_));
      for (int64_t d = 0; d < p_; ++d) origin[d] = MultiIndex(global, linear[d]);
      std::optional<HloSharding> s = ShardingFromOrigins(origin, local, global, exit);
      if (!s.has_value()) continue;
      if (++tried > 8) break;
      if (Verify(h, *s, proof)) {
        *rule = absl::StrCat(*rule, " (re-anchored after ", meaning.opaque_since, ")");
        return s;
      }
    }
    return std::nullopt;
  }

  // The sharding of data operand `x`, or nullopt.
  std::optional<HloSharding> ShardingOf(const HloInstruction* x) const {
    if (!x->sharding().has_value()) return std::nullopt;
    return x->sharding();
  }

  std::optional<HloSharding> InferComputed(HloInstruction* h, std::string* rule,
                                           std::string* proof) {
    *proof = "by construction";
    if (ElementwiseArity(h->opcode()) > 0 && h->opcode() != HloOpcode::kCopy) {
      // Every data operand laid out alike; the other operands the same on every device.
      std::optional<HloSharding> common;
      for (const HloInstruction* x : h->operands()) {
        if (!runs_.data[x]) {
          if (runs_.per_partition[x]) return std::nullopt;
          continue;
        }
        std::optional<HloSharding> s = ShardingOf(x);
        if (!s.has_value() || x->shape().dimensions() != h->shape().dimensions()) {
          return std::nullopt;
        }
        if (common.has_value() && !SameLayout(*common, *s, h->shape().rank(), p_)) {
          return std::nullopt;
        }
        if (!common.has_value()) common = s;
      }
      if (!common.has_value()) return std::nullopt;
      *rule = absl::StrCat("elementwise (", HloOpcodeString(h->opcode()), ")");
      return common;
    }
    if (h->opcode() == HloOpcode::kDot) return InferDot(h, rule);
    if (h->opcode() == HloOpcode::kAllReduce && h->operand_count() == 1) {
      auto it = partial_.find(h->operand(0));
      if (it == partial_.end()) return std::nullopt;
      // Each group must be devices holding terms of one result tile, with disjoint sets of
      // contraction tiles summed: the sum adds them up. All of them: the full result; else still
      // partial sums (all-reduces in stages, one per contraction axis).
      const PartialSums& partial = it->second;
      const int64_t rank = h->shape().rank();
      PartialSums next{partial.tiles, partial.summed, partial.contraction_tiles};
      for (const std::vector<int64_t>& group : PartitionGroupsOf(*h, p_)) {
        std::set<std::vector<int64_t>> merged;
        size_t count = 0;
        for (int64_t d : group) {
          if (d < 0 || d >= p_) return std::nullopt;
          const DevicePlace a = PlaceOf(partial.tiles, rank, d);
          const DevicePlace b = PlaceOf(partial.tiles, rank, group[0]);
          if (a.data_index != b.data_index) return std::nullopt;
          merged.insert(partial.summed[d].begin(), partial.summed[d].end());
          count += partial.summed[d].size();
        }
        if (merged.size() != count) return std::nullopt;  // A term summed twice.
        for (int64_t d : group) next.summed[d] = merged;
      }
      for (const auto& set : next.summed) {
        if (static_cast<int64_t>(set.size()) != partial.contraction_tiles) {
          partial_[h] = std::move(next);
          return std::nullopt;
        }
      }
      *rule = absl::StrCat("the sum of ", h->operand(0)->name(), "'s partial sums");
      return partial.tiles;
    }
    return std::nullopt;
  }

  std::optional<HloSharding> InferDot(const HloInstruction* h, std::string* rule) {
    if (h->operand_count() != 2 || !h->attrs().dot_dimension_numbers.has_value()) {
      return std::nullopt;
    }
    const HloInstruction* lhs = h->operand(0);
    const HloInstruction* rhs = h->operand(1);
    std::optional<HloSharding> sa = ShardingOf(lhs), sb = ShardingOf(rhs);
    if (!runs_.data[lhs] && !runs_.per_partition[lhs]) sa = HloSharding::Replicate();
    if (!runs_.data[rhs] && !runs_.per_partition[rhs]) sb = HloSharding::Replicate();
    if (!sa.has_value() || !sb.has_value() || !IsPlannable(*sa) || !IsPlannable(*sb)) {
      return std::nullopt;
    }
    const DotDimensionNumbers& dn = *h->attrs().dot_dimension_numbers;
    const int64_t ra = lhs->shape().rank(), rb = rhs->shape().rank();
    auto free_dims = [](int64_t rank, const std::vector<int64_t>& batch,
                        const std::vector<int64_t>& contracting) {
      std::vector<int64_t> out;
      for (int64_t k = 0; k < rank; ++k) {
        if (std::find(batch.begin(), batch.end(), k) == batch.end() &&
            std::find(contracting.begin(), contracting.end(), k) == contracting.end()) {
          out.push_back(k);
        }
      }
      return out;
    };
    const std::vector<int64_t> fa = free_dims(ra, dn.lhs_batch, dn.lhs_contracting);
    const std::vector<int64_t> fb = free_dims(rb, dn.rhs_batch, dn.rhs_contracting);
    if (static_cast<int64_t>(dn.lhs_batch.size() + fa.size() + fb.size()) != h->shape().rank()) {
      return std::nullopt;
    }
    const TileIndex ta = TileCounts(*sa, ra);
    const TileIndex tb = TileCounts(*sb, rb);
    std::vector<int64_t> counts;
    for (size_t i = 0; i < dn.lhs_batch.size(); ++i) {
      if (ta[dn.lhs_batch[i]] != tb[dn.rhs_batch[i]]) return std::nullopt;
      counts.push_back(ta[dn.lhs_batch[i]]);
    }
    bool split_contraction = false;
    for (size_t i = 0; i < dn.lhs_contracting.size(); ++i) {
      if (ta[dn.lhs_contracting[i]] != tb[dn.rhs_contracting[i]]) return std::nullopt;
      split_contraction |= ta[dn.lhs_contracting[i]] > 1;
    }
    for (int64_t k : fa) counts.push_back(ta[k]);
    for (int64_t k : fb) counts.push_back(tb[k]);
    std::vector<DevicePlace> places(static_cast<size_t>(p_));
    std::vector<std::vector<int64_t>> contraction(static_cast<size_t>(p_));
    for (int64_t d = 0; d < p_; ++d) {
      const DevicePlace a = PlaceOf(*sa, ra, d);
      const DevicePlace b = PlaceOf(*sb, rb, d);
      for (size_t i = 0; i < dn.lhs_batch.size(); ++i) {
        if (a.data_index[dn.lhs_batch[i]] != b.data_index[dn.rhs_batch[i]]) return std::nullopt;
        places[d].data_index.push_back(a.data_index[dn.lhs_batch[i]]);
      }
      for (size_t i = 0; i < dn.lhs_contracting.size(); ++i) {
        if (a.data_index[dn.lhs_contracting[i]] != b.data_index[dn.rhs_contracting[i]]) {
          return std::nullopt;
        }
        contraction[d].push_back(a.data_index[dn.lhs_contracting[i]]);
      }
      for (int64_t k : fa) places[d].data_index.push_back(a.data_index[k]);
      for (int64_t k : fb) places[d].data_index.push_back(b.data_index[k]);
    }
    absl::StatusOr<HloSharding> built =
        BuildSharding(counts, 1, p_, [&](int64_t d) { return places[d]; });
    if (!built.ok()) return std::nullopt;
    if (split_contraction) {
      PartialSums partial{*built, {}, 0};
      for (const std::vector<int64_t>& c : contraction) partial.summed.push_back({c});
      partial.contraction_tiles = static_cast<int64_t>(
          std::set<std::vector<int64_t>>(contraction.begin(), contraction.end()).size());
      partial_[h] = std::move(partial);
      return std::nullopt;
    }
    *rule = "dot (batch and free dims of its operands)";
    return *std::move(built);
  }

  HloModule& module_;
  const LineComments& comments_;
  const InferenceOptions& options_;
  int64_t p_;
  RunStructure runs_;
  absl::flat_hash_map<const HloInstruction*, PartialSums> partial_;
};

}  // namespace

absl::string_view ClaimStatusName(ClaimStatus status) {
  switch (status) {
    case ClaimStatus::kConfirmed:
      return "confirmed";
    case ClaimStatus::kDiffers:
      return "differs";
    case ClaimStatus::kUnchecked:
      return "unchecked";
  }
  return "unchecked";
}

absl::StatusOr<Inference> InferHoldings(const HloModule& module, absl::string_view source_text,
                                        const InferenceOptions& options) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.num_partitions();
  if (p <= 0) return absl::InvalidArgumentError("the partition count is unknown");
  Inference out;
  out.module = module.Clone();
  const LineComments comments = ParseLineComments(source_text);
  Inferrer inferrer(*out.module, comments, options, p);
  inferrer.Run(out);
  return out;
}

}  // namespace spmdcheck::lint
