#include "explain/pipeline.h"

#include <z3++.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "smt/tile_encoding.h"

namespace spmdcheck::explain {
namespace {

// Instructions of a loop's body and of the computations it calls (not nested loops' bodies).
std::vector<const HloInstruction*> BodyInstructions(const HloInstruction* loop) {
  std::vector<const HloInstruction*> out;
  std::set<const HloComputation*> seen;
  std::vector<const HloComputation*> stack;
  if (const HloComputation* body = loop->called_computation("body")) stack.push_back(body);
  while (!stack.empty()) {
    const HloComputation* comp = stack.back();
    stack.pop_back();
    if (!seen.insert(comp).second) continue;
    for (const auto& h : comp->instructions()) {
      out.push_back(h.get());
      if (h->opcode() == HloOpcode::kWhile) continue;
      for (const HloComputation* c : h->AllCalledComputations()) {
        if (c != nullptr) stack.push_back(c);
      }
    }
  }
  return out;
}

bool DimHasAxis(const std::vector<std::vector<AxisPart>>& dims, int64_t dim, int axis) {
  if (dim < 0 || dim >= static_cast<int64_t>(dims.size())) return false;
  for (const AxisPart& p : dims[dim]) {
    if (p.axis == axis) return true;
  }
  return false;
}

// Stage ops of a loop body over `axis`.
std::vector<StageOp> FindStageOps(const ProgramFacts& facts, const HloInstruction* loop, int axis) {
  std::vector<StageOp> out;
  for (const HloInstruction* h : BodyInstructions(loop)) {
    std::vector<std::pair<int64_t, int64_t>> paired;  // (dim of operand 0, dim of operand 1)
    if (h->opcode() == HloOpcode::kDot && h->operand_count() == 2 &&
        h->attrs().dot_dimension_numbers.has_value()) {
      const DotDimensionNumbers& d = *h->attrs().dot_dimension_numbers;
      for (size_t i = 0; i < d.lhs_batch.size() && i < d.rhs_batch.size(); ++i) {
        paired.push_back({d.lhs_batch[i], d.rhs_batch[i]});
      }
    } else if (ElementwiseArity(h->opcode()) == 2 && h->operand_count() == 2 &&
               h->operand(0)->shape().IsArray() &&
               h->operand(0)->shape().rank() == h->operand(1)->shape().rank()) {
      for (int64_t k = 0; k < h->operand(0)->shape().rank(); ++k) paired.push_back({k, k});
    }
    if (paired.empty()) continue;
    const HloSharding* s0 = facts.AnnotationThrough(h->operand(0));
    const HloSharding* s1 = facts.AnnotationThrough(h->operand(1));
    if (s0 == nullptr || s1 == nullptr) continue;
    std::optional<std::vector<std::vector<AxisPart>>> d0 = facts.DimAxes(*s0);
    std::optional<std::vector<std::vector<AxisPart>>> d1 = facts.DimAxes(*s1);
    if (!d0.has_value() || !d1.has_value()) continue;
    const HloInstruction* w0 = facts.WeightSource(h->operand(0));
    const HloInstruction* w1 = facts.WeightSource(h->operand(1));
    if ((w0 == nullptr) == (w1 == nullptr)) continue;
    for (const auto& [k0, k1] : paired) {
      if (!DimHasAxis(*d0, k0, axis) || !DimHasAxis(*d1, k1, axis)) continue;
      StageOp op;
      op.op = h;
      const bool weight_is_0 = w0 != nullptr;
      op.state_operand = weight_is_0 ? 1 : 0;
      op.weight_operand = weight_is_0 ? 0 : 1;
      op.state_dim = weight_is_0 ? k1 : k0;
      op.weight_dim = weight_is_0 ? k0 : k1;
      op.state_sharding = weight_is_0 ? *s1 : *s0;
      op.weight_sharding = weight_is_0 ? *s0 : *s1;
      op.weight_param = weight_is_0 ? w0 : w1;
      out.push_back(std::move(op));
      break;
    }
  }
  return out;
}

// The loop of the global module matching `loop` (same name, else the same position).
const HloInstruction* MatchingGlobalLoop(const ProgramFacts& facts, const HloInstruction* loop) {
  const HloModule* global = facts.global_module();
  if (global == nullptr) return nullptr;
  std::vector<const HloInstruction*> input_loops, global_loops;
  for (const auto& comp : facts.module().computations()) {
    for (const auto& h : comp->instructions()) {
      if (h->opcode() == HloOpcode::kWhile) input_loops.push_back(h.get());
    }
  }
  for (const auto& comp : global->computations()) {
    for (const auto& h : comp->instructions()) {
      if (h->opcode() != HloOpcode::kWhile) continue;
      if (h->name() == loop->name()) return h.get();
      global_loops.push_back(h.get());
    }
  }
  if (input_loops.size() != global_loops.size()) return nullptr;
  for (size_t i = 0; i < input_loops.size(); ++i) {
    if (input_loops[i] == loop) return global_loops[i];
  }
  return nullptr;
}

z3::expr Bounded(z3::context& ctx, const z3::expr& v, int64_t size) {
  return v >= ctx.int_val(static_cast<int64_t>(0)) && v < ctx.int_val(size);
}

// Proved when the violation `solver` holds is unsatisfiable; refuted with the lowest violating
// device (`device` in the model; found by asking again below each one, so that the counterexample
// does not depend on Z3's choice of model).
smt::ProofResult Solve(z3::solver& solver, const z3::expr& device,
                       const std::function<std::optional<std::string>(int64_t)>& cex) {
  switch (solver.check()) {
    case z3::unsat:
      return smt::ProofResult::Proved();
    case z3::sat:
      break;
    default:
      return smt::ProofResult::Unknown(absl::StrCat("Z3: ", solver.reason_unknown()));
  }
  int64_t lowest = smt::ModelInt(solver.get_model(), device);
  for (int round = 0; round < 64; ++round) {
    solver.add(device < solver.ctx().int_val(lowest));
    if (solver.check() != z3::sat) break;
    lowest = smt::ModelInt(solver.get_model(), device);
  }
  std::optional<std::string> why = cex(lowest);
  if (!why.has_value()) {
    return smt::ProofResult::Unknown(
        absl::StrCat("Z3's counterexample, device ", lowest, ", holds when checked directly"));
  }
  return smt::ProofResult::Refuted(*why);
}

z3::solver MakeSolver(z3::context& ctx, int64_t timeout_ms) {
  z3::solver solver(ctx);
  z3::params params(ctx);
  params.set("timeout", static_cast<unsigned>(std::clamp<int64_t>(timeout_ms, 1, 1 << 30)));
  solver.set(params);
  return solver;
}

std::string DeviceText(const RecoveredMesh& mesh, int64_t device) {
  std::vector<std::string> coords;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    coords.push_back(absl::StrCat(mesh.axes()[a].name, "=", mesh.Coordinate(device, a)));
  }
  return absl::StrCat("device ", device, " (", absl::StrJoin(coords, ", "), ")");
}

}  // namespace

PipelineDetection DetectPipelines(const ProgramFacts& facts) {
  PipelineDetection out;
  const RecoveredMesh& mesh = facts.mesh();
  std::set<int> pipeline_axes;
  for (const LoopFact& loop : facts.loops()) {
    std::map<int, std::vector<const HloInstruction*>> rotations;
    for (const CollectiveFact& c : facts.collectives()) {
      if (c.loop != loop.loop || c.moves.empty()) continue;
      int moved = -1, count = 0;
      for (int a = 0; a < mesh.num_axes(); ++a) {
        if (c.axis_moved[a]) {
          moved = a;
          ++count;
        }
      }
      if (count == 1) rotations[moved].push_back(c.instruction);
    }
    // Without rotations: the axis with stage ops and changing state split over it (the stages
    // move some other way, e.g. a roll of the global state the partitioner gathers). Elementwise
    // stage ops pair every dim, so of several such axes the one splitting the earliest state dim
    // is the stage axis (stage dims lead).
    if (rotations.empty()) {
      int best = -1;
      int64_t best_dim = 0;
      for (int a = 0; a < mesh.num_axes(); ++a) {
        const std::map<int, int64_t> streams = StreamDims(facts, loop.loop, a);
        if (streams.empty()) continue;
        std::vector<StageOp> ops = FindStageOps(facts, loop.loop, a);
        if (ops.empty()) {
          if (const HloInstruction* g = MatchingGlobalLoop(facts, loop.loop)) {
            ops = FindStageOps(facts, g, a);
          }
        }
        if (ops.empty()) continue;
        int64_t dim = INT64_MAX;
        for (const auto& [e, k] : streams) dim = std::min(dim, k);
        if (best < 0 || dim < best_dim) {
          best = a;
          best_dim = dim;
        }
      }
      if (best >= 0) rotations[best] = {};
    }
    for (auto& [axis, rots] : rotations) {
      PipelineFinding p;
      p.axis = axis;
      p.loop = loop.loop;
      p.rotations = rots;
      p.stage_ops = FindStageOps(facts, loop.loop, axis);
      if (p.stage_ops.empty()) {
        if (const HloInstruction* g = MatchingGlobalLoop(facts, loop.loop)) {
          p.stage_ops = FindStageOps(facts, g, axis);
        }
      }
      IntEvaluator eval(loop.counter_index, loop.counter_init);
      for (const HloInstruction* h : BodyInstructions(loop.loop)) {
        if (h->opcode() == HloOpcode::kSelect && eval.DependsOnDevice(h->operand(0))) {
          p.bubble_selects.push_back(h);
        }
      }
      if (const HloSharding* s = facts.annotations().Of(loop.loop); s != nullptr && s->IsTuple()) {
        for (size_t e = 0; e < s->tuple_elements().size(); ++e) {
          std::optional<std::vector<std::vector<AxisPart>>> dims =
              facts.DimAxes(s->tuple_elements()[e]);
          if (!dims.has_value()) continue;
          for (int64_t k = 0; k < s->tuple_elements()[e].TiledDataRank(); ++k) {
            bool whole = false;
            for (const AxisPart& part : (*dims)[k]) {
              whole = whole || (part.axis == axis && part.size == mesh.axes()[axis].size);
            }
            if (whole) {
              p.stage_state.push_back(absl::StrCat(loop.loop->name(), "{", e, "} dim ", k));
              break;
            }
          }
        }
      }
      if (!p.stage_ops.empty()) {
        pipeline_axes.insert(axis);
        out.pipelines.push_back(std::move(p));
      } else if (!p.rotations.empty()) {
        out.rings.push_back({axis, loop.loop, std::move(p.rotations)});
      }
    }
  }
  // Pipelines seen only in stage-stacked values: every value the whole axis splits has at most
  // one entry per coordinate along that dim, at least one such value has rank >= 3 and is split
  // over another axis too.
  // Only when no loop pipeline was found: a program has one stage axis.
  for (int a = 0; a < mesh.num_axes() && pipeline_axes.empty(); ++a) {
    if (mesh.axes()[a].size < 2 || mesh.num_axes() < 2) continue;
    bool all_stacked = true, strong_value = false;
    const HloInstruction* stacked_loop = nullptr;
    std::vector<std::string> names;
    for (const ValueFact& v : facts.values()) {
      // A partitioner's intermediate shardings (`// holds=` comments) may mix axes; the program's
      // own annotations say how values are laid out.
      if (!v.regular || v.manual || v.from_comment) continue;
      for (size_t k = 0; k < v.dim_axes.size(); ++k) {
        for (const AxisPart& p : v.dim_axes[k]) {
          if (p.axis != a || p.size != mesh.axes()[a].size) continue;
          // At most one entry per device along the dim (fewer: a slice that selects stages), and
          // not the last dim (features).
          if (v.dim_axes[k].size() != 1 || v.global_dims[k] > mesh.axes()[a].size ||
              k + 1 == v.dim_axes.size()) {
            all_stacked = false;
            continue;
          }
          bool other_axis = false;
          for (size_t j = 0; j < v.dim_axes.size(); ++j) {
            if (j != k && !v.dim_axes[j].empty()) other_axis = true;
          }
          if (v.global_dims.size() >= 3 && other_axis) strong_value = true;
          if (!v.in_global && facts.EnclosingLoop(v.instruction) != nullptr) {
            stacked_loop = facts.EnclosingLoop(v.instruction);
          }
          if (names.size() < 4 && std::find(names.begin(), names.end(),
                                            absl::StrCat(v.name, " dim ", k)) == names.end()) {
            names.push_back(absl::StrCat(v.name, " dim ", k));
          }
        }
      }
    }
    // Dots that split the axis on a non-batch dim contradict stage stacking.
    for (const DotFact& d : facts.dots()) {
      const DotDimensionNumbers& dn = *d.dot->attrs().dot_dimension_numbers;
      for (int side = 0; side < 2; ++side) {
        const HloSharding* s = side == 0 ? d.lhs : d.rhs;
        if (s == nullptr) continue;
        std::optional<std::vector<std::vector<AxisPart>>> dims = facts.DimAxes(*s);
        if (!dims.has_value()) continue;
        const std::vector<int64_t>& batch = side == 0 ? dn.lhs_batch : dn.rhs_batch;
        for (size_t k = 0; k < dims->size(); ++k) {
          if (DimHasAxis(*dims, static_cast<int64_t>(k), a) &&
              std::find(batch.begin(), batch.end(), static_cast<int64_t>(k)) == batch.end()) {
            all_stacked = false;
          }
        }
      }
    }
    if (all_stacked && strong_value && !names.empty()) {
      PipelineFinding p;
      p.axis = a;
      p.stacked_values = std::move(names);
      p.loop_without_rotation = stacked_loop;
      out.pipelines.push_back(std::move(p));
    }
  }
  return out;
}

int RotationDirection(const RecoveredMesh& mesh, int axis, const SourceTargetPairs& pairs) {
  const int64_t size = mesh.axes()[axis].size;
  int64_t forward = 0, backward = 0;
  for (const auto& [s, t] : pairs) {
    if (s == t || s < 0 || t < 0 || s >= mesh.num_devices() || t >= mesh.num_devices()) continue;
    const int64_t d = ((mesh.Coordinate(t, axis) - mesh.Coordinate(s, axis)) % size + size) % size;
    if (d == 0) continue;
    if (2 * d <= size) {
      ++forward;
    } else {
      ++backward;
    }
  }
  return backward > forward ? -1 : 1;
}

smt::ProofResult ProveRotation(const RecoveredMesh& mesh, int axis, const SourceTargetPairs& pairs,
                               int direction, WrapPolicy wrap, int64_t timeout_ms) {
  const int64_t n = mesh.num_devices();
  const int64_t size = mesh.axes()[axis].size;
  const int64_t stride = mesh.axes()[axis].stride;
  std::vector<int64_t> target(n, -1);
  for (const auto& [s, t] : pairs) {
    if (s < 0 || s >= n || t < 0 || t >= n) {
      return smt::ProofResult::Unknown(
          absl::StrCat("pair {", s, ",", t, "} is outside the ", n, " devices"));
    }
    if (target[s] != -1) {
      return smt::ProofResult::Refuted(absl::StrCat("device ", s, " is the source of two pairs"));
    }
    target[s] = t;
  }
  const std::string& name = mesh.axes()[axis].name;
  const auto explain = [&](int64_t dev) {
    const int64_t c = mesh.Coordinate(dev, axis);
    int64_t want = c + direction;
    const bool edge = want < 0 || want >= size;
    if (edge) want = (want + size) % size;
    const int64_t want_device = mesh.WithCoordinate(dev, axis, want);
    const std::string has = target[dev] < 0
                                ? std::string("sends nothing")
                                : absl::StrCat("sends to ", DeviceText(mesh, target[dev]));
    if (edge) {
      return absl::StrCat(DeviceText(mesh, dev), " holds the last stage along ", name, " and ", has,
                          "; the schedule reads the wrapped slot, so it must send to ",
                          DeviceText(mesh, want_device));
    }
    return absl::StrCat(DeviceText(mesh, dev), " holds stage ", c, " of ", name, " and ", has,
                        "; stage ", c, "'s output belongs to stage ", want, " on ",
                        DeviceText(mesh, want_device));
  };
  // What is wrong on `dev`, if anything (the claim, device by device).
  const auto violation = [&](int64_t dev) -> std::optional<std::string> {
    const int64_t next = mesh.Coordinate(dev, axis) + direction;
    if (next >= 0 && next < size) {
      if (target[dev] == mesh.WithCoordinate(dev, axis, next)) return std::nullopt;
    } else {
      const int64_t wrapped = mesh.WithCoordinate(dev, axis, (next + size) % size);
      if (target[dev] == wrapped || (wrap == WrapPolicy::kOptional && target[dev] == -1)) {
        return std::nullopt;
      }
    }
    return explain(dev);
  };
  if (n > kMaxZ3TableDevices) {
    for (int64_t dev = 0; dev < n; ++dev) {
      if (std::optional<std::string> why = violation(dev)) return smt::ProofResult::Refuted(*why);
    }
    return smt::ProofResult::Proved();
  }
  z3::context ctx;
  z3::solver solver = MakeSolver(ctx, timeout_ms);
  // d = hi * (stride * size) + coord * stride + lo: linear, no div/mod.
  const z3::expr hi = ctx.int_const("hi");
  const z3::expr coord = ctx.int_const("coord");
  const z3::expr lo = ctx.int_const("lo");
  solver.add(Bounded(ctx, hi, n / (stride * size)));
  solver.add(Bounded(ctx, coord, size));
  solver.add(Bounded(ctx, lo, stride));
  const z3::expr d = hi * ctx.int_val(stride * size) + coord * ctx.int_val(stride) + lo;
  const z3::expr next = coord + ctx.int_val(direction);
  const z3::expr in_range =
      next >= ctx.int_val(static_cast<int64_t>(0)) && next < ctx.int_val(size);
  const z3::expr tgt = smt::TableLookup(ctx, d, target);
  const z3::expr expected = d + ctx.int_val(direction * stride);
  const z3::expr wrapped = d + ctx.int_val((direction > 0 ? -(size - 1) : (size - 1)) * stride);
  z3::expr bad = (in_range && tgt != expected);
  if (wrap == WrapPolicy::kRequired) {
    bad = bad || (!in_range && tgt != wrapped);
  } else {
    bad = bad || (!in_range && tgt != ctx.int_val(static_cast<int64_t>(-1)) && tgt != wrapped);
  }
  solver.add(bad);
  return Solve(solver, d, violation);
}

smt::ProofResult ProveOwnWeights(const RecoveredMesh& mesh, int axis, const HloSharding& state,
                                 int64_t state_dim, const HloSharding& weights, int64_t weight_dim,
                                 int64_t timeout_ms) {
  const int64_t n = mesh.num_devices();
  if (!state.IsTiled() || !weights.IsTiled()) {
    return smt::ProofResult::Unknown("the state or the weights are not tiled");
  }
  if (state.tile_assignment().num_elements() != n ||
      weights.tile_assignment().num_elements() != n) {
    return smt::ProofResult::Unknown("a tile assignment does not cover every device once");
  }
  const HloSharding sc = state.Canonical();
  const HloSharding wc = weights.Canonical();
  // What is wrong on `dev`, if anything.
  const auto violation = [&](int64_t dev) -> std::optional<std::string> {
    std::optional<std::vector<int64_t>> a = sc.tile_assignment().TileIndexOf(dev);
    std::optional<std::vector<int64_t>> b = wc.tile_assignment().TileIndexOf(dev);
    if (!a.has_value() || !b.has_value()) {
      return absl::StrCat(DeviceText(mesh, dev), " holds no tile of the state or the weights");
    }
    if ((*a)[state_dim] != (*b)[weight_dim]) {
      return absl::StrCat(DeviceText(mesh, dev), " computes stage ", (*a)[state_dim],
                          " of the state but holds the weights of stage ", (*b)[weight_dim]);
    }
    if ((*a)[state_dim] != mesh.Coordinate(dev, axis)) {
      return absl::StrCat(DeviceText(mesh, dev), " holds stage ", (*a)[state_dim],
                          " of the state and the weights, but its coordinate along ",
                          mesh.axes()[axis].name, " is ", mesh.Coordinate(dev, axis),
                          ": the rotation along the axis does not follow the stage order");
    }
    return std::nullopt;
  };
  if (n > kMaxZ3TableDevices &&
      (!sc.tile_assignment().is_iota() || !wc.tile_assignment().is_iota())) {
    for (int64_t dev = 0; dev < n; ++dev) {
      if (std::optional<std::string> why = violation(dev)) return smt::ProofResult::Refuted(*why);
    }
    return smt::ProofResult::Proved();
  }
  z3::context ctx;
  z3::solver solver = MakeSolver(ctx, timeout_ms);
  smt::TileEncoding s = smt::EncodeTileAssignment(ctx, sc.tile_assignment(), "s_",
                                                  /*with_index=*/true);
  smt::TileEncoding w = smt::EncodeTileAssignment(ctx, wc.tile_assignment(), "w_",
                                                  /*with_index=*/true);
  solver.add(s.constraints);
  solver.add(w.constraints);
  solver.add(s.device == w.device);
  const int64_t stride = mesh.axes()[axis].stride;
  const int64_t size = mesh.axes()[axis].size;
  const z3::expr coord = (s.device / ctx.int_val(stride)) % ctx.int_val(size);
  const z3::expr& si = s.index[state_dim];
  const z3::expr& wi = w.index[weight_dim];
  solver.add(si != wi || si != coord);
  return Solve(solver, s.device, violation);
}

}  // namespace spmdcheck::explain
