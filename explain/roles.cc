#include "explain/roles.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace spmdcheck::explain {
namespace {

// Dims of a sharding split over `axis` (any part of it).
std::set<int64_t> DimsOver(const ProgramFacts& facts, const HloSharding* s, int axis) {
  std::set<int64_t> out;
  if (s == nullptr) return out;
  std::optional<std::vector<std::vector<AxisPart>>> dims = facts.DimAxes(*s);
  if (!dims.has_value()) return out;
  for (size_t k = 0; k < dims->size() && static_cast<int64_t>(k) < s->TiledDataRank(); ++k) {
    for (const AxisPart& p : (*dims)[k]) {
      if (p.axis == axis) out.insert(static_cast<int64_t>(k));
    }
  }
  return out;
}

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < rank; ++k) {
    if (std::find(batch.begin(), batch.end(), k) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), k) == contracting.end()) {
      out.push_back(k);
    }
  }
  return out;
}

void Add(std::vector<Evidence>& list, Role role, int strength, std::string text,
         std::vector<std::string> instructions) {
  // One line per (role, text) pair; repeated patterns list more instructions.
  for (Evidence& e : list) {
    if (e.role == role && e.text == text) {
      for (std::string& i : instructions) {
        if (e.instructions.size() < 8 &&
            std::find(e.instructions.begin(), e.instructions.end(), i) == e.instructions.end()) {
          e.instructions.push_back(std::move(i));
        }
      }
      e.strength = std::max(e.strength, strength);
      return;
    }
  }
  list.push_back({role, strength, std::move(text), std::move(instructions)});
}

// The dot whose result `h` is, looking through data movement and masks.
const HloInstruction* DotBehind(const HloInstruction* h) {
  for (int depth = 0; depth < 12 && h != nullptr; ++depth) {
    switch (h->opcode()) {
      case HloOpcode::kDot:
      case HloOpcode::kConvolution:
        return h;
      case HloOpcode::kCopy:
      case HloOpcode::kConvert:
      case HloOpcode::kBitcast:
      case HloOpcode::kReshape:
      case HloOpcode::kTranspose:
        h = h->operand(0);
        break;
      case HloOpcode::kSelect:
        h = h->operand(1);
        break;
      default:
        return nullptr;
    }
  }
  return nullptr;
}

bool ContractsDimZero(const HloInstruction* dot) {
  if (dot->opcode() != HloOpcode::kDot) return false;
  const DotDimensionNumbers& d = *dot->attrs().dot_dimension_numbers;
  return std::find(d.lhs_contracting.begin(), d.lhs_contracting.end(), 0) !=
             d.lhs_contracting.end() &&
         std::find(d.rhs_contracting.begin(), d.rhs_contracting.end(), 0) !=
             d.rhs_contracting.end();
}

void DotEvidence(const ProgramFacts& facts, const DotFact& d, int axis,
                 const std::set<int>& pipeline_axes, std::vector<Evidence>& out) {
  if (d.lhs == nullptr || d.rhs == nullptr) return;
  const HloInstruction* dot = d.dot;
  const DotDimensionNumbers& dn = *dot->attrs().dot_dimension_numbers;
  const std::set<int64_t> ls = DimsOver(facts, d.lhs, axis);
  const std::set<int64_t> rs = DimsOver(facts, d.rhs, axis);
  if (ls.empty() && rs.empty()) return;
  const int64_t lrank = dot->operand(0)->shape().rank();
  const int64_t rrank = dot->operand(1)->shape().rank();
  const std::vector<int64_t> lfree = FreeDims(lrank, dn.lhs_batch, dn.lhs_contracting);
  const std::vector<int64_t> rfree = FreeDims(rrank, dn.rhs_batch, dn.rhs_contracting);
  int wside = -1;
  if (d.rhs_weight != nullptr) {
    wside = 1;
  } else if (d.lhs_weight != nullptr) {
    wside = 0;
  }
  const int aside = wside == 0 ? 1 : 0;
  const std::set<int64_t>& as = aside == 0 ? ls : rs;
  const std::set<int64_t>& ws = aside == 0 ? rs : ls;
  const std::vector<int64_t>& afree = aside == 0 ? lfree : rfree;
  const std::vector<int64_t>& wfree = aside == 0 ? rfree : lfree;
  const HloInstruction* act = dot->operand(aside);
  const HloInstruction* weight = wside >= 0 ? dot->operand(wside) : nullptr;
  const std::string where = d.in_global ? " (pre-partitioning)" : "";
  bool batch_split = false, contract_split = false;
  for (size_t i = 0; i < dn.lhs_batch.size() && i < dn.rhs_batch.size(); ++i) {
    if (ls.contains(dn.lhs_batch[i]) && rs.contains(dn.rhs_batch[i])) batch_split = true;
  }
  for (size_t i = 0; i < dn.lhs_contracting.size() && i < dn.rhs_contracting.size(); ++i) {
    if (ls.contains(dn.lhs_contracting[i]) && rs.contains(dn.rhs_contracting[i])) {
      contract_split = true;
    }
  }
  if (batch_split) {
    if (weight != nullptr) {
      if (!pipeline_axes.contains(axis)) {
        Add(out, Role::kExpert, 1,
            absl::StrCat("a dot's batch dim is split with stacked weights (experts or stages)",
                         where),
            {dot->name()});
      }
    } else if (ls.contains(0) &&
               std::find(dn.lhs_batch.begin(), dn.lhs_batch.end(), 0) != dn.lhs_batch.end()) {
      Add(out, Role::kData, 2,
          absl::StrCat("an activation x activation dot's leading batch dim is split", where),
          {dot->name()});
    } else {
      Add(out, Role::kTensor, 2,
          absl::StrCat("an activation x activation dot's batch dim (heads) is split", where),
          {dot->name()});
    }
  }
  if (contract_split) {
    if (weight != nullptr) {
      Add(out, Role::kTensor, 3,
          absl::StrCat("row-parallel: a dot's contracting dim is split on both operands (partial "
                       "sums reduced over the axis)",
                       where),
          {dot->name()});
    } else if (ContractsDimZero(dot)) {
      Add(out, Role::kData, 3,
          absl::StrCat("weight gradient: a dot contracts the split batch dim 0 of both operands",
                       where),
          {dot->name()});
    } else {
      Add(out, Role::kTensor, 2,
          absl::StrCat("an activation x activation dot's contracting dim is split", where),
          {dot->name()});
    }
  }
  bool act_free_split = false;
  for (int64_t k : afree) act_free_split = act_free_split || as.contains(k);
  bool weight_free_split = false;
  for (int64_t k : wfree) weight_free_split = weight_free_split || ws.contains(k);
  if (weight != nullptr && weight_free_split && !act_free_split && !batch_split) {
    Add(out, Role::kTensor, 3,
        absl::StrCat("column-parallel: the weight's output-feature dim is split", where),
        {dot->name(), weight->name()});
  }
  if (!afree.empty() && as.contains(afree[0])) {
    if (weight != nullptr && !ws.empty() && !batch_split) {
      Add(out, Role::kFsdp, 2,
          absl::StrCat("the activation's batch dim and the weight are both split (the weight is "
                       "gathered for the dot)",
                       where),
          {dot->name(), weight->name()});
    } else if (weight != nullptr) {
      Add(out, Role::kData, 3,
          absl::StrCat("the activation's batch dim is split, the weight is replicated", where),
          {dot->name(), act->name()});
    } else if (!batch_split) {
      Add(out, Role::kData, 2,
          absl::StrCat("an activation x activation dot's leading free dim is split", where),
          {dot->name()});
    }
  }
  for (size_t i = 1; i < afree.size(); ++i) {
    if (as.contains(afree[i])) {
      Add(out, Role::kSequence, 2,
          absl::StrCat("an activation dim after the batch dim (sequence) is split", where),
          {dot->name(), act->name()});
      break;
    }
  }
}

bool WholeAxis(const CollectiveFact& c, int axis, const RecoveredMesh& mesh) {
  if (!c.axes.has_value()) return false;
  for (const AxisPart& p : *c.axes) {
    if (p.axis == axis && p.size == mesh.axes()[axis].size) return true;
  }
  return false;
}

}  // namespace

std::vector<std::vector<Evidence>> InferRoles(const ProgramFacts& facts,
                                              const PipelineDetection& detection) {
  const RecoveredMesh& mesh = facts.mesh();
  std::vector<std::vector<Evidence>> out(mesh.num_axes());
  std::set<int> pipeline_axes;
  for (const PipelineFinding& p : detection.pipelines) pipeline_axes.insert(p.axis);
  for (const PipelineFinding& p : detection.pipelines) {
    if (p.loop != nullptr) {
      std::vector<std::string> names = {p.loop->name()};
      for (const HloInstruction* r : p.rotations) names.push_back(r->name());
      for (const StageOp& s : p.stage_ops) names.push_back(s.op->name());
      Add(out[p.axis], Role::kPipeline, 4,
          p.rotations.empty()
              ? "a while loop applies stage-stacked weights to stage-split state that changes "
                "every trip (no rotation permute: the stages move some other way)"
              : "a while loop rotates stage-split state between neighbours along the axis "
                "(collective-permute) and applies stage-stacked weights",
          names);
      if (!p.bubble_selects.empty()) {
        std::vector<std::string> selects;
        for (const HloInstruction* s : p.bubble_selects) selects.push_back(s->name());
        Add(out[p.axis], Role::kPipeline, 2,
            "selects on partition-id inside the loop (per-stage bubbles or injection)", selects);
      }
    } else if (p.loop_without_rotation != nullptr) {
      std::vector<std::string> names = p.stacked_values;
      names.insert(names.begin(), p.loop_without_rotation->name());
      Add(out[p.axis], Role::kPipeline, 2,
          "stage-stacked loop state: every value the axis splits has at most one entry per device "
          "along that dim; the loop moves stages without a rotation along the axis",
          names);
    } else {
      Add(out[p.axis], Role::kPipeline, 2,
          "stage-stacked values: every value the axis splits has at most one entry per device "
          "along that dim (no pipeline loop in this module)",
          p.stacked_values);
    }
  }
  for (const RingFinding& r : detection.rings) {
    std::vector<std::string> names = {r.loop->name()};
    for (const HloInstruction* h : r.rotations) names.push_back(h->name());
    Add(out[r.axis], Role::kTensor, 1,
        "a while loop rotates values along the axis without stage-stacked weights (a ring: "
        "windowed einsum, collective matmul or ring attention)",
        names);
  }
  for (const DotFact& d : facts.dots()) {
    for (int a = 0; a < mesh.num_axes(); ++a) DotEvidence(facts, d, a, pipeline_axes, out[a]);
  }
  for (const CollectiveFact& c : facts.collectives()) {
    const HloInstruction* h = c.instruction;
    for (int a = 0; a < mesh.num_axes(); ++a) {
      if (!WholeAxis(c, a, mesh)) continue;
      switch (h->opcode()) {
        case HloOpcode::kAllToAll:
          Add(out[a], Role::kExpert, 1,
              "all-to-all over the axis (expert dispatch, or a split moved between dims)",
              {h->name()});
          break;
        case HloOpcode::kAllGather:
        case HloOpcode::kAllGatherStart:
          if (const HloInstruction* p = facts.WeightSource(h->operand(0));
              p != nullptr && !pipeline_axes.contains(a)) {
            Add(out[a], Role::kFsdp, 3, "a parameter is stored split and all-gathered before use",
                {h->name(), p->name()});
          }
          break;
        case HloOpcode::kReduceScatter:
          Add(out[a], Role::kFsdp, 2,
              "reduce-scatter over the axis (ZeRO-style: each device keeps its shard of a sum)",
              {h->name()});
          break;
        case HloOpcode::kAllReduce:
        case HloOpcode::kAllReduceStart:
          if (const HloInstruction* dot = DotBehind(h->operand(0))) {
            if (ContractsDimZero(dot) && facts.WeightSource(dot->operand(0)) == nullptr &&
                facts.WeightSource(dot->operand(1)) == nullptr) {
              Add(out[a], Role::kData, 2, "gradients (a batch-contracting dot) are all-reduced",
                  {h->name(), dot->name()});
            } else {
              Add(out[a], Role::kTensor, 2, "a dot's partial sums are all-reduced over the axis",
                  {h->name(), dot->name()});
            }
          }
          break;
        default:
          break;
      }
    }
  }
  // Fallback on shapes for axes without medium or strong evidence.
  for (int a = 0; a < mesh.num_axes(); ++a) {
    int best = 0;
    for (const Evidence& e : out[a]) best = std::max(best, e.strength);
    if (best >= 2) continue;
    std::vector<std::string> dim0, other;
    std::vector<const ValueFact*> values;  // The program's own annotations first.
    for (const ValueFact& v : facts.values()) {
      if (!v.from_comment) values.push_back(&v);
    }
    for (const ValueFact& v : facts.values()) {
      if (v.from_comment) values.push_back(&v);
    }
    for (const ValueFact* vp : values) {
      const ValueFact& v = *vp;
      if (!v.regular || v.manual) continue;
      // The leading dim after the stage dims (split over a pipeline axis).
      size_t lead = 0;
      while (lead < v.dim_axes.size() &&
             std::any_of(v.dim_axes[lead].begin(), v.dim_axes[lead].end(),
                         [&](const AxisPart& p) { return pipeline_axes.contains(p.axis); })) {
        ++lead;
      }
      for (size_t k = 0; k < v.dim_axes.size(); ++k) {
        for (const AxisPart& p : v.dim_axes[k]) {
          if (p.axis != a || p.size != mesh.axes()[a].size) continue;
          std::vector<std::string>& list = k == lead ? dim0 : other;
          const std::string name = absl::StrCat(v.name, " dim ", k);
          if (list.size() < 4 && std::find(list.begin(), list.end(), name) == list.end()) {
            list.push_back(name);
          }
        }
      }
    }
    if (!dim0.empty()) {
      Add(out[a], Role::kData, 1,
          "it splits the leading (batch) dim of values (after any stage dim); no dot or collective "
          "says more",
          dim0);
    } else if (!other.empty()) {
      Add(out[a], Role::kTensor, 1,
          "it splits inner (feature) dims of values; no dot or collective says more", other);
    }
  }
  return out;
}

std::vector<Role> RankRoles(const std::vector<Evidence>& evidence) {
  std::map<Role, std::pair<int, int>> score;  // (max, sum)
  for (const Evidence& e : evidence) {
    auto& s = score[e.role];
    s.first = std::max(s.first, e.strength);
    s.second += e.strength;
  }
  std::vector<std::pair<std::pair<int, int>, Role>> ranked;
  for (const auto& [role, s] : score) ranked.push_back({s, role});
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
    if (x.first != y.first) return x.first > y.first;
    return static_cast<int>(x.second) < static_cast<int>(y.second);
  });
  std::vector<Role> out;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const int best = ranked[0].first.first;
    const int max = ranked[i].first.first;
    if (i == 0 || (max >= 2 && max >= best - 1 && ranked[0].second != Role::kPipeline)) {
      out.push_back(ranked[i].second);
    }
  }
  return out;
}

}  // namespace spmdcheck::explain
