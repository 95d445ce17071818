#include "explain/roles.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
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

// A dot or convolution seen as a dot: paired batch and contracting dims, the free dims of each
// operand, and where each result dim comes from.
struct DotView {
  std::vector<std::pair<int64_t, int64_t>> batch;
  std::vector<std::pair<int64_t, int64_t>> contracting;
  std::vector<int64_t> lhs_free, rhs_free;
  struct ResultDim {
    enum Kind { kBatch, kLhsFree, kRhsFree } kind = kBatch;
    int64_t index = 0;  // Index among the batch dims or that operand's free dims.
  };
  std::vector<ResultDim> result;  // Per result dim.
  bool spatial = false;           // A convolution: lhs free dims after the first are spatial.
};

std::optional<DotView> ViewOf(const HloInstruction* h) {
  DotView v;
  if (h->opcode() == HloOpcode::kDot) {
    const DotDimensionNumbers& d = *h->attrs().dot_dimension_numbers;
    for (size_t i = 0; i < d.lhs_batch.size() && i < d.rhs_batch.size(); ++i) {
      v.batch.push_back({d.lhs_batch[i], d.rhs_batch[i]});
    }
    for (size_t i = 0; i < d.lhs_contracting.size() && i < d.rhs_contracting.size(); ++i) {
      v.contracting.push_back({d.lhs_contracting[i], d.rhs_contracting[i]});
    }
    v.lhs_free = FreeDims(h->operand(0)->shape().rank(), d.lhs_batch, d.lhs_contracting);
    v.rhs_free = FreeDims(h->operand(1)->shape().rank(), d.rhs_batch, d.rhs_contracting);
    for (size_t i = 0; i < v.batch.size(); ++i) {
      v.result.push_back({DotView::ResultDim::kBatch, static_cast<int64_t>(i)});
    }
    for (size_t i = 0; i < v.lhs_free.size(); ++i) {
      v.result.push_back({DotView::ResultDim::kLhsFree, static_cast<int64_t>(i)});
    }
    for (size_t i = 0; i < v.rhs_free.size(); ++i) {
      v.result.push_back({DotView::ResultDim::kRhsFree, static_cast<int64_t>(i)});
    }
    return v;
  }
  if (h->opcode() != HloOpcode::kConvolution) return std::nullopt;
  const ConvolutionDimensionNumbers& c = *h->attrs().dim_labels;
  v.spatial = true;
  v.contracting.push_back({c.input_feature, c.kernel_input_feature});
  v.lhs_free.push_back(c.input_batch);
  for (int64_t s : c.input_spatial) v.lhs_free.push_back(s);
  v.rhs_free.push_back(c.kernel_output_feature);
  v.result.assign(h->shape().rank(), {});
  v.result[c.output_batch] = {DotView::ResultDim::kLhsFree, 0};
  v.result[c.output_feature] = {DotView::ResultDim::kRhsFree, 0};
  for (size_t i = 0; i < c.output_spatial.size(); ++i) {
    v.result[c.output_spatial[i]] = {DotView::ResultDim::kLhsFree, static_cast<int64_t>(i) + 1};
  }
  return v;
}

void DotEvidence(const ProgramFacts& facts, const DotFact& d, int axis,
                 const std::set<int>& pipeline_axes, std::vector<Evidence>& out) {
  if (d.lhs == nullptr || d.rhs == nullptr) return;
  const HloInstruction* dot = d.dot;
  std::optional<DotView> view = ViewOf(dot);
  if (!view.has_value()) return;
  const std::set<int64_t> ls = DimsOver(facts, d.lhs, axis);
  const std::set<int64_t> rs = DimsOver(facts, d.rhs, axis);
  const std::set<int64_t> os = DimsOver(facts, d.out, axis);
  if (ls.empty() && rs.empty() && os.empty()) return;
  // The weight: the operand that reaches an entry parameter through data movement only; the rhs
  // when both do, except in a batched dot (two parameters batched together are activations).
  int wside = -1;
  if (d.rhs_weight != nullptr && (d.lhs_weight == nullptr || view->batch.empty())) {
    wside = 1;
  } else if (d.lhs_weight != nullptr && d.rhs_weight == nullptr) {
    wside = 0;
  }
  const std::set<int64_t>& ws = wside == 0 ? ls : rs;
  const HloInstruction* weight = wside >= 0 ? dot->operand(wside) : nullptr;
  const std::string where = d.in_global ? " (pre-partitioning)" : "";
  const std::string kind = dot->opcode() == HloOpcode::kConvolution ? "convolution" : "dot";
  bool contract_split = false;
  for (const auto& [l, r] : view->contracting) contract_split |= ls.contains(l) && rs.contains(r);
  bool weight_used_split = false;  // The weight's split over the axis is one the dot keeps.
  if (contract_split) {
    if (weight != nullptr) {
      weight_used_split = true;
      Add(out, Role::kTensor, 3,
          absl::StrCat("row-parallel: the ", kind,
                       "'s contracting dim is split on both operands (partial sums reduced over "
                       "the axis)",
                       where),
          {dot->name()});
    } else if (ContractsDimZero(dot)) {
      Add(out, Role::kData, 3,
          absl::StrCat("weight gradient: a dot contracts the split batch dim 0 of both operands",
                       where),
          {dot->name()});
    } else {
      Add(out, Role::kTensor, 2,
          absl::StrCat("an activation x activation ", kind, "'s contracting dim is split", where),
          {dot->name()});
    }
  }
  // The layout the result asks for (the operands' layouts may be resharded to it). Without a
  // result annotation, the operands' free and batch dims speak for it.
  std::vector<DotView::ResultDim> split;
  if (d.out != nullptr) {
    for (int64_t k : os) {
      if (k < static_cast<int64_t>(view->result.size())) split.push_back(view->result[k]);
    }
  } else {
    for (size_t i = 0; i < view->batch.size(); ++i) {
      if (ls.contains(view->batch[i].first) && rs.contains(view->batch[i].second)) {
        split.push_back({DotView::ResultDim::kBatch, static_cast<int64_t>(i)});
      }
    }
    for (size_t i = 0; i < view->lhs_free.size(); ++i) {
      if (ls.contains(view->lhs_free[i])) {
        split.push_back({DotView::ResultDim::kLhsFree, static_cast<int64_t>(i)});
      }
    }
    for (size_t i = 0; i < view->rhs_free.size(); ++i) {
      if (rs.contains(view->rhs_free[i])) {
        split.push_back({DotView::ResultDim::kRhsFree, static_cast<int64_t>(i)});
      }
    }
  }
  for (const DotView::ResultDim& r : split) {
    if (r.kind == DotView::ResultDim::kBatch) {
      if (weight != nullptr) {
        weight_used_split = true;
        if (!pipeline_axes.contains(axis)) {
          Add(out, Role::kExpert, 1,
              absl::StrCat("a dot's batch dim is split with stacked weights (experts or stages)",
                           where),
              {dot->name()});
        }
      } else if (r.index == 0) {
        Add(out, Role::kData, 3, absl::StrCat("a dot's leading batch dim is split", where),
            {dot->name()});
      } else {
        Add(out, Role::kTensor, 2, absl::StrCat("a dot's inner batch dim (heads) is split", where),
            {dot->name()});
      }
      continue;
    }
    const bool from_weight = (r.kind == DotView::ResultDim::kLhsFree) == (wside == 0);
    if (weight != nullptr && from_weight) {
      weight_used_split = true;
      Add(out, Role::kTensor, 3,
          absl::StrCat("column-parallel: the weight's output-feature dim is split", where),
          {dot->name(), weight->name()});
      continue;
    }
    // The activation's first free dim is its batch, unless the dot batches activations (then
    // the batch is among the batch dims); stacked weights' batch dims are stages or experts.
    const bool leading = r.index == 0 && (view->batch.empty() || weight != nullptr);
    if (view->spatial && r.index > 0) {
      Add(out, Role::kSequence, 2,
          absl::StrCat("a convolution's spatial dim is split (spatial partitioning)", where),
          {dot->name()});
    } else if (leading) {
      Add(out, Role::kData, weight != nullptr ? 3 : 2,
          absl::StrCat("the activation's batch dim is split",
                       weight != nullptr ? ", the weight "
                                           "is not"
                                         : "",
                       where),
          {dot->name()});
    } else if (weight == nullptr && view->batch.empty()) {
      Add(out, Role::kTensor, 2,
          absl::StrCat("an activation x activation dot's second free dim is split", where),
          {dot->name()});
    } else {
      Add(out, Role::kSequence, 2,
          absl::StrCat("an activation dim after the batch dim (sequence) is split", where),
          {dot->name()});
    }
  }
  // A weight stored split over the axis in a way the dot does not keep: gathered before use.
  if (weight != nullptr && !ws.empty() && !weight_used_split) {
    Add(out, Role::kFsdp, 2,
        absl::StrCat("the weight is stored split over the axis but the ", kind,
                     " needs it whole there (gathered before use)", where),
        {dot->name(), weight->name()});
  }
}

// True when `h` reaches a dot or convolution as its rhs (the weight or kernel side) through data
// movement.
bool FeedsCompute(
    const HloInstruction* h,
    const absl::flat_hash_map<const HloInstruction*, std::vector<const HloInstruction*>>& users) {
  std::vector<std::pair<const HloInstruction*, int>> stack = {{h, 0}};
  while (!stack.empty()) {
    auto [x, depth] = stack.back();
    stack.pop_back();
    auto it = users.find(x);
    if (it == users.end() || depth > 8) continue;
    for (const HloInstruction* u : it->second) {
      switch (u->opcode()) {
        case HloOpcode::kDot:
        case HloOpcode::kConvolution:
          if (u->operand_count() == 2 && u->operand(1) == x) return true;
          break;
        case HloOpcode::kCopy:
        case HloOpcode::kConvert:
        case HloOpcode::kBitcast:
        case HloOpcode::kReshape:
        case HloOpcode::kTranspose:
        case HloOpcode::kSlice:
        case HloOpcode::kDynamicSlice:
        case HloOpcode::kBroadcast:
        case HloOpcode::kAllGather:
        case HloOpcode::kAllGatherDone:
          stack.push_back({u, depth + 1});
          break;
        default:
          break;
      }
    }
  }
  return false;
}

// Every pair moves one step along `axis` only, in one direction, and none wraps.
bool IsHalo(const CollectiveFact& c, int axis, const RecoveredMesh& mesh) {
  if (c.moves.empty()) return false;
  int64_t dir = 0;
  for (const CollectiveFact::Move& m : c.moves) {
    for (int b = 0; b < mesh.num_axes(); ++b) {
      if (b != axis && m.delta[b] != 0) return false;
    }
    const int64_t d = m.delta[axis];
    if (d != 1 && d != -1) return false;
    if (dir != 0 && d != dir) return false;
    dir = d;
  }
  return true;
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
  // Window ops sliding over a split dim: spatial (or sequence) partitioning.
  const HloModule& semantic =
      facts.global_module() != nullptr ? *facts.global_module() : facts.module();
  for (const auto& comp : semantic.computations()) {
    for (const auto& h : comp->instructions()) {
      if ((h->opcode() != HloOpcode::kReduceWindow &&
           h->opcode() != HloOpcode::kSelectAndScatter) ||
          !h->attrs().window.has_value()) {
        continue;
      }
      const HloSharding* s = facts.AnnotationThrough(h->operand(0));
      if (s == nullptr) continue;
      const std::vector<WindowDim>& window = *h->attrs().window;
      for (int a = 0; a < mesh.num_axes(); ++a) {
        for (int64_t k : DimsOver(facts, s, a)) {
          if (k < static_cast<int64_t>(window.size()) && window[k].size > 1) {
            Add(out[a], Role::kSequence, 2,
                "a window op slides over a split dim (spatial or sequence partitioning, with halo "
                "exchanges)",
                {h->name()});
          }
        }
      }
    }
  }
  // Users, to see what a gathered parameter feeds.
  absl::flat_hash_map<const HloInstruction*, std::vector<const HloInstruction*>> users;
  for (const auto& comp : facts.module().computations()) {
    for (const auto& h : comp->instructions()) {
      for (const HloInstruction* o : h->operands()) users[o].push_back(h.get());
    }
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
              p != nullptr && !pipeline_axes.contains(a) && FeedsCompute(h, users)) {
            Add(out[a], Role::kFsdp, 2,
                "a parameter stored split over the axis is all-gathered before use (FSDP/ZeRO-3, "
                "or a partitioner gathering where the program asked for partial sums)",
                {h->name(), p->name()});
          }
          break;
        case HloOpcode::kReduceScatter:
          if (const HloInstruction* dot = DotBehind(h->operand(0))) {
            if (ContractsDimZero(dot) && facts.WeightSource(dot->operand(0)) == nullptr &&
                facts.WeightSource(dot->operand(1)) == nullptr) {
              Add(out[a], Role::kFsdp, 2,
                  "gradients (a batch-contracting dot) are reduce-scattered (ZeRO: each device "
                  "keeps its shard)",
                  {h->name(), dot->name()});
            } else {
              Add(out[a], Role::kTensor, 2,
                  "a dot's partial sums are reduce-scattered over the axis",
                  {h->name(), dot->name()});
            }
          }
          break;
        case HloOpcode::kCollectivePermute:
          // A halo exchange: neighbours along one axis, no wrap, outside loops.
          if (c.loop == nullptr && IsHalo(c, a, mesh)) {
            Add(out[a], Role::kSequence, 2,
                "halo exchange: neighbours along the axis swap edges (a window op's spatial or "
                "sequence dim is split)",
                {h->name()});
          }
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
