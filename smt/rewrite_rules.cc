#include "smt/rewrite_rules.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "smt/rewrite_expr.h"
#include "smt/rewrite_semantics.h"

namespace spmdcheck::smt::rw {

Expr RuleContext::Size(const std::string& name, int64_t value) {
  if (!symbolic_) return Const(value);
  Expr v = Var(absl::StrCat("size_", name));
  assumptions_.push_back(Le(Const(1), v));
  return v;
}

std::vector<int64_t> RuleContext::ConcreteSizes() const {
  std::vector<int64_t> sizes;
  if (symbolic_) return sizes;
  for (const Expr& s : mesh_.sizes) {
    int64_t v = 0;
    IsConst(s, &v);
    sizes.push_back(v);
  }
  return sizes;
}

namespace {

using PairList = std::vector<std::pair<int64_t, int64_t>>;

Dist In(RuleContext& ctx, int input, std::vector<Expr> shape) {
  return InputValue(input, ctx.mesh().rank(), std::move(shape));
}

// All devices of a concrete mesh, as coordinate vectors, in id order.
std::vector<std::vector<int64_t>> AllCoords(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<std::vector<int64_t>> all;
  for (int64_t id = 0; id < n; ++id) {
    std::vector<int64_t> c(sizes.size());
    int64_t rest = id;
    for (size_t k = sizes.size(); k-- > 0;) {
      c[k] = rest % sizes[k];
      rest /= sizes[k];
    }
    all.push_back(c);
  }
  return all;
}

int64_t IdOf(const std::vector<int64_t>& c, const std::vector<int64_t>& sizes) {
  int64_t id = 0;
  for (size_t k = 0; k < sizes.size(); ++k) id = id * sizes[k] + c[k];
  return id;
}

// Concrete pair lists (enumerated meshes): target coordinate along `axis` =
// f(source coordinate), f returning -1 for "no target".
template <typename F>
PairList AxisPairs(const std::vector<int64_t>& sizes, int axis, F f) {
  PairList pairs;
  for (const std::vector<int64_t>& c : AllCoords(sizes)) {
    const int64_t t = f(c[axis], sizes[axis]);
    if (t < 0) continue;
    std::vector<int64_t> target = c;
    target[axis] = t;
    pairs.emplace_back(IdOf(c, sizes), IdOf(target, sizes));
  }
  return pairs;
}

// The groups over `axes` as explicit lists, relabelled member-wise by
// `relabel`.
template <typename F>
std::vector<std::vector<int64_t>> RelabelledAxisGroups(const std::vector<int64_t>& sizes,
                                                       const std::vector<int>& axes, F relabel) {
  std::vector<std::vector<int64_t>> groups;
  std::vector<int64_t> group_of_key;  // Key: the coordinates on the other axes.
  std::vector<std::vector<int64_t>> keys;
  for (const std::vector<int64_t>& c : AllCoords(sizes)) {
    std::vector<int64_t> key;
    for (size_t k = 0; k < sizes.size(); ++k) {
      bool in_axes = false;
      for (int a : axes) in_axes = in_axes || a == static_cast<int>(k);
      if (!in_axes) key.push_back(c[k]);
    }
    size_t g = 0;
    while (g < keys.size() && keys[g] != key) ++g;
    if (g == keys.size()) {
      keys.push_back(key);
      int64_t size = 1;
      for (int a : axes) size *= sizes[a];
      groups.emplace_back(static_cast<size_t>(size), -1);
    }
    int64_t position = 0;
    for (int a : axes) position = position * sizes[a] + c[a];
    groups[g][position] = relabel(IdOf(c, sizes));
  }
  return groups;
}

std::vector<RuleDef> BuildRules() {
  std::vector<RuleDef> rules;

  // --- all-gather of all-gather -> one all-gather over the product groups.
  auto ag_ag = [](bool right_order) {
    return [right_order](RuleContext& ctx) {
      const MeshModel& m = ctx.mesh();
      const int a = ctx.axis(0), b = ctx.axis(1);
      Dist v = In(ctx, 0, {ctx.Size("c", 2), ctx.Size("k", 2)});
      Dist lhs = AllGather(AllGather(v, AxisGroups(m, {a}), 0), AxisGroups(m, {b}), 0);
      Dist rhs = AllGather(
          v, AxisGroups(m, right_order ? std::vector<int>{b, a} : std::vector<int>{a, b}), 0);
      return RuleSides{lhs, rhs};
    };
  };
  rules.push_back(
      {"ag-ag-fuse",
       "all-gather(axis b, d0) of all-gather(axis a, d0) == "
       "all-gather(axes {b,a}, d0)",
       "partitioner ReplicatePartial (one all-gather per tile dim) vs one combined all-gather",
       true, 2, true, nullptr, ag_ag(true)});
  rules.push_back({"ag-ag-fuse-wrong-order",
                   "WRONG: all-gather(b) of all-gather(a) == all-gather(axes "
                   "{a,b}) (inner axis major)",
                   "", false, 2, true, nullptr, ag_ag(false)});

  // --- all-reduce then dynamic-slice of the own part -> reduce-scatter.
  auto ar_ds = [](bool right_order) {
    return [right_order](RuleContext& ctx) {
      const MeshModel& m = ctx.mesh();
      const std::vector<int> axes = {ctx.axis(0), ctx.axis(1)};
      const Groups g = AxisGroups(m, axes);
      const Groups offset_groups = right_order ? g : AxisGroups(m, {ctx.axis(1), ctx.axis(0)});
      const Expr c = ctx.Size("c", 2);
      Dist v = In(ctx, 0, {Mul(g.size, c), ctx.Size("k", 2)});
      Dist lhs = DynamicSlice(
          AllReduce(v, g), 0,
          [offset_groups, c](const Device& d) { return Mul(offset_groups.position(d), c); }, c);
      Dist rhs = ReduceScatter(v, g, 0);
      return RuleSides{lhs, rhs};
    };
  };
  rules.push_back(
      {"ar-ds-to-rs",
       "dynamic-slice(all-reduce(axes {a,b}), offset = in-group "
       "position * c) == "
       "reduce-scatter(axes {a,b}, d0)",
       "ReduceScatterCreator (gpu_reduce_scatter_creator); ReduceScatterDecomposer inverts it",
       true, 2, false, nullptr, ar_ds(true)});
  rules.push_back({"ar-ds-to-rs-wrong-offset-order",
                   "WRONG: the dynamic-slice offset table uses the position in axes {b,a}", "",
                   false, 2, false, nullptr, ar_ds(false)});

  // The same with the offset read from a constant table indexed by partition-id, as the
  // partitioner and ReduceScatterCreator's table pattern emit it.
  rules.push_back({"ar-ds-to-rs-table",
                   "dynamic-slice(all-reduce(axes {a,b}), offset = s32[N] table[partition-id]) == "
                   "reduce-scatter(axes {a,b}, d0)",
                   "ReduceScatterCreator (offset table lookup, AllReplicasIotaTable)", true, 2,
                   false, nullptr, [](RuleContext& ctx) {
                     const MeshModel& m = ctx.mesh();
                     const std::vector<int64_t> sizes = ctx.ConcreteSizes();
                     const std::vector<int> axes = {ctx.axis(0), ctx.axis(1)};
                     const Groups g = AxisGroups(m, axes);
                     const int64_t c = 2;
                     std::vector<int64_t> table;
                     for (const std::vector<int64_t>& coords : AllCoords(sizes)) {
                       int64_t position = 0;
                       for (int a : axes) position = position * sizes[a] + coords[a];
                       table.push_back(position * c);
                     }
                     Dist v = In(ctx, 0, {Mul(g.size, Const(c)), Const(2)});
                     Dist lhs = DynamicSlice(
                         AllReduce(v, g), 0,
                         [m, table](const Device& d) { return Table(m.Id(d), table); }, Const(c));
                     return RuleSides{lhs, ReduceScatter(v, g, 0)};
                   }});

  // --- all-reduce -> reduce-scatter + all-gather.
  auto ar_rs_ag = [](bool same_groups) {
    return [same_groups](RuleContext& ctx) {
      const MeshModel& m = ctx.mesh();
      const Groups g = AxisGroups(m, {ctx.axis(0), ctx.axis(1)});
      const Groups g2 = same_groups ? g : AxisGroups(m, {ctx.axis(1), ctx.axis(0)});
      Dist v = In(ctx, 0, {Mul(g.size, ctx.Size("c", 2))});
      return RuleSides{AllReduce(v, g), AllGather(ReduceScatter(v, g, 0), g2, 0)};
    };
  };
  rules.push_back({"ar-to-rs-ag",
                   "all-reduce(axes {a,b}) == all-gather(axes {a,b}) of "
                   "reduce-scatter(axes {a,b})",
                   "AllReduceBlueConnect-style all-reduce = reduce-scatter + all-gather", true, 2,
                   false, nullptr, ar_rs_ag(true)});
  rules.push_back({"ar-to-rs-ag-mismatched-groups",
                   "WRONG: reduce-scatter over axes {a,b}, all-gather over axes {b,a}", "", false,
                   2, false, nullptr, ar_rs_ag(false)});

  // --- permute of permute -> one permute with composed pairs (explicit lists).
  auto cp_cp = [](bool right_order) {
    return [right_order](RuleContext& ctx) {
      const std::vector<int64_t> sizes = ctx.ConcreteSizes();
      const int a = ctx.axis(0);
      const PairList shift =
          AxisPairs(sizes, a, [](int64_t c, int64_t n) { return c + 1 < n ? c + 1 : -1; });
      const PairList reflect = AxisPairs(sizes, a, [](int64_t c, int64_t n) { return n - 1 - c; });
      Dist v = In(ctx, 0, {ctx.Size("c", 2)});
      const MeshModel& m = ctx.mesh();
      Dist lhs = CollectivePermute(CollectivePermute(v, ExplicitPairs(m, shift)),
                                   ExplicitPairs(m, reflect));
      const PairList composed =
          right_order ? ComposePairs(shift, reflect) : ComposePairs(reflect, shift);
      return RuleSides{lhs, CollectivePermute(v, ExplicitPairs(m, composed))};
    };
  };
  rules.push_back({"cp-cp-compose",
                   "permute(Q) of permute(P) == permute(P then Q) (explicit "
                   "pair lists; P a "
                   "partial shift, Q a reflection along axis a)",
                   "partitioner reshard chains (two collective-permutes in a row)", true, 1, false,
                   nullptr, cp_cp(true)});
  rules.push_back({"cp-cp-compose-reversed",
                   "WRONG: pairs composed in the opposite order (Q then P)", "", false, 1, false,
                   nullptr, cp_cp(false)});

  // --- cyclic shifts compose (parametric form).
  rules.push_back({"cp-cp-compose-shifts",
                   "permute(cyclic shift +1 along b) of permute(cyclic shift +1 along a) "
                   "== one permute "
                   "shifting along both",
                   "partitioner reshard chains (two collective-permutes in a row)", true, 2, true,
                   nullptr, [](RuleContext& ctx) {
                     const MeshModel& m = ctx.mesh();
                     const int a = ctx.axis(0), b = ctx.axis(1);
                     Dist v = In(ctx, 0, {ctx.Size("c", 2)});
                     Dist lhs = CollectivePermute(CollectivePermute(v, ShiftPairs(m, a, 1, true)),
                                                  ShiftPairs(m, b, 1, true));
                     Pairs both;
                     both.has_source = [](const Device&) { return Bool(true); };
                     both.source = [m, a, b](const Device& d) {
                       Device s = d;
                       s[a] = Mod(Add(Sub(d[a], Const(1)), m.sizes[a]), m.sizes[a]);
                       s[b] = Mod(Add(Sub(d[b], Const(1)), m.sizes[b]), m.sizes[b]);
                       return s;
                     };
                     return RuleSides{lhs, CollectivePermute(v, both)};
                   }});

  // --- all-to-all then its inverse -> identity.
  auto a2a_inverse = [](bool same_groups) {
    return [same_groups](RuleContext& ctx) {
      const MeshModel& m = ctx.mesh();
      const Groups g = AxisGroups(m, {ctx.axis(0), ctx.axis(1)});
      const Groups g2 = same_groups ? g : AxisGroups(m, {ctx.axis(1), ctx.axis(0)});
      const Expr c = ctx.Size("c", 2), k = ctx.Size("k", 3);
      Dist v = In(ctx, 0, {Mul(g.size, c), Mul(g.size, k)});
      Dist there = AllToAll(v, g, 0, 1);
      // The inverse splits the concatenated dim 1 and concatenates dim 0 back.
      there.shape[1] = Mul(g2.size, Mul(g.size, k));
      Dist back = AllToAll(there, g2, 1, 0);
      return RuleSides{back, v};
    };
  };
  rules.push_back({"a2a-inverse",
                   "all-to-all(axes {a,b}, split 1, concat 0) of "
                   "all-to-all(axes {a,b}, split 0, "
                   "concat 1) == identity",
                   "partitioner ReshardWithAllToAll round trip", true, 2, true, nullptr,
                   a2a_inverse(true)});
  rules.push_back({"a2a-inverse-wrong-order",
                   "WRONG: the inverse all-to-all lists the groups in axis order {b,a}", "", false,
                   2, true, nullptr, a2a_inverse(false)});
  rules.push_back({"a2a-self-inverse", "array all-to-all(axis a, dim 0) applied twice == identity",
                   "all-to-all array form (spec 3.3)", true, 1, true, nullptr,
                   [](RuleContext& ctx) {
                     const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0)});
                     Dist v = In(ctx, 0, {Mul(g.size, ctx.Size("c", 2))});
                     return RuleSides{AllToAll(AllToAll(v, g, 0, 0), g, 0, 0), v};
                   }});

  // --- masked all-reduce with one contributor per group ->
  // collective-broadcast.
  auto masked_ar = [](bool right_source) {
    return [right_source](RuleContext& ctx) {
      const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0)});
      Dist v = In(ctx, 0, {ctx.Size("c", 2)});
      int64_t n = 0;
      IsConst(g.size, &n);
      const Expr keep = Const(right_source ? 0 : n - 1);
      Dist masked =
          Select([g, keep](const Device& d) { return Eq(g.position(d), keep); }, v, Zeros(v.shape));
      return RuleSides{AllReduce(masked, g), CollectiveBroadcast(v, g)};
    };
  };
  rules.push_back({"masked-ar-to-cbcast",
                   "all-reduce(axis a) of select(in-group id == 0, x, 0) == "
                   "collective-broadcast(axis a)",
                   "partitioner Broadcast (spec 5.3 item 9) as a collective-broadcast", true, 1,
                   false, nullptr, masked_ar(true)});
  rules.push_back({"masked-ar-to-cbcast-wrong-source",
                   "WRONG: the mask keeps the last member, the broadcast sends "
                   "from the first",
                   "", false, 1, false, nullptr, masked_ar(false)});

  // --- collective-permute + all-gather over G -> all-gather over G relabelled
  // by the pairs.
  auto cp_ag = [](bool by_source) {
    return [by_source](RuleContext& ctx) {
      const std::vector<int64_t> sizes = ctx.ConcreteSizes();
      const int a = ctx.axis(0);
      const MeshModel& m = ctx.mesh();
      const PairList pairs = AxisPairs(sizes, a, [](int64_t c, int64_t n) { return (c + 1) % n; });
      std::vector<int64_t> source_of(pairs.size()), target_of(pairs.size());
      for (const auto& [s, t] : pairs) {
        source_of[t] = s;
        target_of[s] = t;
      }
      const std::vector<int> axes = {a};
      auto relabelled = RelabelledAxisGroups(
          sizes, axes, [&](int64_t id) { return by_source ? source_of[id] : target_of[id]; });
      Dist v = In(ctx, 0, {ctx.Size("c", 2)});
      Dist lhs = AllGather(CollectivePermute(v, ExplicitPairs(m, pairs)), AxisGroups(m, axes), 0);
      return RuleSides{lhs, AllGather(v, ExplicitGroups(m, relabelled), 0)};
    };
  };
  rules.push_back({"cp-ag-relabel",
                   "all-gather(G) of permute(P) == all-gather(G with member m replaced by "
                   "source(m)) (P permutes inside the groups)",
                   "collective-permute + all-gather (the seed case pattern)", true, 1, false,
                   nullptr, cp_ag(true)});
  rules.push_back({"cp-ag-relabel-by-targets",
                   "WRONG: the groups relabelled by target(m) instead of source(m)", "", false, 1,
                   false, nullptr, cp_ag(false)});

  // --- reshape / transpose moved across an all-gather.
  auto reshape_ag = [](int gather_dim) {
    return [gather_dim](RuleContext& ctx) {
      const MeshModel& m = ctx.mesh();
      const Groups g = AxisGroups(m, {ctx.axis(0)});
      const Expr c = ctx.Size("c", 2), k = ctx.Size("k", 3);
      Dist v = In(ctx, 0, {c, k});
      Dist lhs = Reshape(AllGather(v, g, gather_dim), {Mul(g.size, Mul(c, k))});
      Dist rhs = AllGather(Reshape(v, {Mul(c, k)}), g, 0);
      return RuleSides{lhs, rhs};
    };
  };
  rules.push_back({"reshape-across-ag",
                   "reshape([n*c,k] -> [n*c*k]) of all-gather(d0) == all-gather(d0) of "
                   "reshape([c,k] -> [c*k])",
                   "CollectiveTransformationReorderer (MergeAllGatherDimensionWithNext)", true, 1,
                   true, nullptr, reshape_ag(0)});
  rules.push_back({"reshape-across-ag-minor-dim",
                   "WRONG: the all-gather before the reshape gathers the minor dim 1", "", false, 1,
                   true, nullptr, reshape_ag(1)});
  rules.push_back({"transpose-across-ag",
                   "transpose{1,0} of all-gather(d0) == all-gather(d1) of transpose{1,0}",
                   "CollectiveTransformationReorderer", true, 1, true, nullptr,
                   [](RuleContext& ctx) {
                     const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0)});
                     Dist v = In(ctx, 0, {ctx.Size("c", 2), ctx.Size("k", 3)});
                     return RuleSides{Transpose(AllGather(v, g, 0), {1, 0}),
                                      AllGather(Transpose(v, {1, 0}), g, 1)};
                   }});

  // --- all-reduce reassociation over add.
  auto ar_reassoc = [](bool same_groups) {
    return [same_groups](RuleContext& ctx) {
      const MeshModel& m = ctx.mesh();
      const Groups g = AxisGroups(m, {ctx.axis(0)});
      const Groups g2 = same_groups ? g : AxisGroups(m, {ctx.axis(1)});
      Dist x = In(ctx, 0, {ctx.Size("c", 2)});
      Dist y = In(ctx, 1, {ctx.Size("c", 2)});
      return RuleSides{Plus(AllReduce(x, g), AllReduce(y, g2)), AllReduce(Plus(x, y), g)};
    };
  };
  rules.push_back({"ar-reassociate",
                   "all-reduce(x) + all-reduce(y) == all-reduce(x + y) (same "
                   "groups; integer add)",
                   "AllReduceReassociate", true, 1, false, nullptr, ar_reassoc(true)});
  rules.push_back({"ar-reassociate-different-groups",
                   "WRONG: all-reduce(axis a)(x) + all-reduce(axis b)(y) == "
                   "all-reduce(axis a)(x+y)",
                   "", false, 2, false, nullptr, ar_reassoc(false)});
  rules.push_back({"rs-reassociate",
                   "reduce-scatter(x) + reduce-scatter(y) == reduce-scatter(x + y)",
                   "ReduceScatterReassociate", true, 1, false, nullptr, [](RuleContext& ctx) {
                     const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0)});
                     Dist x = In(ctx, 0, {Mul(g.size, ctx.Size("c", 2))});
                     Dist y = In(ctx, 1, {Mul(g.size, ctx.Size("c", 2))});
                     return RuleSides{Plus(ReduceScatter(x, g, 0), ReduceScatter(y, g, 0)),
                                      ReduceScatter(Plus(x, y), g, 0)};
                   }});

  // --- collective-permute cycle decomposition (forward + backward edge, select
  // on receiver).
  auto cycle = [](int64_t direction, bool per_cycle_select) {
    return [direction, per_cycle_select](RuleContext& ctx) {
      const MeshModel& m = ctx.mesh();
      const int a = ctx.axis(0);
      const Expr n = m.sizes[a];
      Dist v = In(ctx, 0, {ctx.Size("c", 2)});
      Dist lhs = CollectivePermute(v, ShiftPairs(m, a, direction, true));
      // Back edge: the end of the cycle sends to its start; the rest is a
      // non-cyclic shift.
      const Expr start = direction > 0 ? Const(0) : Sub(n, Const(1));
      const Expr end = direction > 0 ? Sub(n, Const(1)) : Const(0);
      Pairs back;
      back.has_source = [a, start](const Device& d) { return Eq(d[a], start); };
      back.source = [a, end](const Device& d) {
        Device s = d;
        s[a] = end;
        return s;
      };
      Dist bwd = CollectivePermute(v, back);
      Dist fwd = CollectivePermute(v, ShiftPairs(m, a, direction, false));
      std::function<Expr(const Device&)> is_receiver;
      if (per_cycle_select) {
        is_receiver = [a, start](const Device& d) { return Eq(d[a], start); };
      } else {
        // XLA's single-cycle form: select(partition-id == the back edge's
        // receiver), with the receiver of the first cycle only (device with all
        // other coordinates 0).
        is_receiver = [m, a, start](const Device& d) {
          Device first(d.size(), Const(0));
          first[a] = start;
          return Eq(m.Id(d), m.Id(first));
        };
      }
      return RuleSides{lhs, Select(is_receiver, bwd, fwd)};
    };
  };
  rules.push_back({"cp-cycle-decompose",
                   "permute(cycle +1 along a) == select(receiver of the back "
                   "edge, permute(back "
                   "edge), permute(forward edges))",
                   "CollectivePermuteCycleDecomposer", true, 1, true, nullptr, cycle(1, true)});
  rules.push_back({"cp-cycle-decompose-backward",
                   "permute(cycle -1 along a) == select(receiver of the back "
                   "edge, permute(back "
                   "edge), permute(backward edges))",
                   "CollectivePermuteCycleDecomposer", true, 1, true, nullptr, cycle(-1, true)});
  rules.push_back(
      {"cp-cycle-decompose-two-cycles-one-select",
       "WRONG: several cycles (one per group of the other axes) "
       "but the select compares "
       "partition-id with the first cycle's receiver only",
       "", false, 1, false,
       [](const std::vector<int64_t>& mesh, const std::vector<int>&) { return mesh.size() >= 2; },
       cycle(1, false)});

  // --- all-reduce folding.
  rules.push_back(
      {"ar-ar-fold", "all-reduce(axis b) of all-reduce(axis a) == all-reduce(axes {a,b})",
       "AllReduceFolder", true, 2, false, nullptr, [](RuleContext& ctx) {
         const MeshModel& m = ctx.mesh();
         Dist v = In(ctx, 0, {ctx.Size("c", 2)});
         return RuleSides{
             AllReduce(AllReduce(v, AxisGroups(m, {ctx.axis(0)})), AxisGroups(m, {ctx.axis(1)})),
             AllReduce(v, AxisGroups(m, {ctx.axis(0), ctx.axis(1)}))};
       }});
  rules.push_back({"ar-ar-fold-same-groups",
                   "WRONG: all-reduce(axis a) of all-reduce(axis a) == all-reduce(axis a)", "",
                   false, 1, false, nullptr, [](RuleContext& ctx) {
                     const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0)});
                     Dist v = In(ctx, 0, {ctx.Size("c", 2)});
                     return RuleSides{AllReduce(AllReduce(v, g), g), AllReduce(v, g)};
                   }});

  // --- all-gather decomposed into dynamic-update-slice + all-reduce.
  rules.push_back({"ag-to-ar-dus",
                   "all-gather(axis a, d0) == all-reduce(axis a) of "
                   "dynamic-update-slice(zeros, x, "
                   "in-group position * c)",
                   "AllGatherDecomposer / partitioner ReplicatePartial", true, 1, false, nullptr,
                   [](RuleContext& ctx) {
                     const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0)});
                     const Expr c = ctx.Size("c", 2);
                     Dist v = In(ctx, 0, {c, ctx.Size("k", 2)});
                     Dist zeros = Zeros({Mul(g.size, c), v.shape[1]});
                     Dist placed = DynamicUpdateSlice(
                         zeros, v, 0, [g, c](const Device& d) { return Mul(g.position(d), c); });
                     return RuleSides{AllGather(v, g, 0), AllReduce(placed, g)};
                   }});

  // --- all-gather and broadcast reorder.
  rules.push_back({"ag-broadcast-reorder",
                   "all-gather(d0) of broadcast(x, dims {0}) == broadcast(all-gather(d0) "
                   "of x)",
                   "AllGatherBroadcastReorder", true, 1, true, nullptr, [](RuleContext& ctx) {
                     const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0)});
                     const Expr c = ctx.Size("c", 2), k = ctx.Size("k", 3);
                     Dist v = In(ctx, 0, {c});
                     Dist lhs = AllGather(Broadcast(v, {c, k}, {0}), g, 0);
                     Dist rhs = Broadcast(AllGather(v, g, 0), {Mul(g.size, c), k}, {0});
                     return RuleSides{lhs, rhs};
                   }});

  // --- collectives that move nothing (the lint's identity-permute and singleton-groups).
  rules.push_back(
      {"cp-identity", "collective-permute with identity pairs {d,d} == x",
       "a resharding between equal shardings", true, 1, false, nullptr, [](RuleContext& ctx) {
         Dist v = In(ctx, 0, {ctx.Size("c", 2)});
         return RuleSides{CollectivePermute(v, ShiftPairs(ctx.mesh(), ctx.axis(0), 0, true)), v};
       }});
  rules.push_back({"singleton-groups", "all-reduce(all-gather(x)) over groups of one device == x",
                   "", true, 1, false, nullptr, [](RuleContext& ctx) {
                     const Groups one = AxisGroups(ctx.mesh(), {});
                     Dist v = In(ctx, 0, {ctx.Size("c", 2)});
                     return RuleSides{AllReduce(AllGather(v, one, 0), one), v};
                   }});

  // --- all-reduce of a replicated value -> multiply by the group size.
  rules.push_back({"ar-replicated-to-mul", "all-reduce(axis a) of a replicated x == x * group size",
                   "AllReduceSimplifier (ReplicatedParameters)", true, 1, false, nullptr,
                   [](RuleContext& ctx) {
                     const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0)});
                     Dist x = ReplicatedInput(0, {ctx.Size("c", 2)});
                     return RuleSides{AllReduce(x, g), Scale(x, g.size)};
                   }});

  // --- dynamic-slice of the own part of an all-gather -> the operand.
  rules.push_back(
      {"ag-ds-own-part", "dynamic-slice(all-gather(axes {a,b}, d0), in-group position * c) == x",
       "partitioner reshard round trip (all-gather, then own dynamic-slice)", true, 2, true,
       nullptr, [](RuleContext& ctx) {
         const Groups g = AxisGroups(ctx.mesh(), {ctx.axis(0), ctx.axis(1)});
         const Expr c = ctx.Size("c", 2);
         Dist v = In(ctx, 0, {c});
         Dist lhs = DynamicSlice(
             AllGather(v, g, 0), 0, [g, c](const Device& d) { return Mul(g.position(d), c); }, c);
         return RuleSides{lhs, v};
       }});

  // --- a permute inside the groups is absorbed by an all-reduce.
  auto ar_absorbs = [](bool inside) {
    return [inside](RuleContext& ctx) {
      const MeshModel& m = ctx.mesh();
      const Groups g = AxisGroups(m, {ctx.axis(0)});
      Dist v = In(ctx, 0, {ctx.Size("c", 2)});
      const int shift_axis = inside ? ctx.axis(0) : ctx.axis(1);
      return RuleSides{AllReduce(CollectivePermute(v, ShiftPairs(m, shift_axis, 1, true)), g),
                       AllReduce(v, g)};
    };
  };
  rules.push_back({"ar-absorbs-in-group-cp",
                   "all-reduce(axis a) of permute(cyclic shift along a) == "
                   "all-reduce(axis a)",
                   "a permute before a reduction over the same groups", true, 1, false, nullptr,
                   ar_absorbs(true)});
  rules.push_back({"ar-absorbs-cross-group-cp", "WRONG: the permute shifts along another axis b",
                   "", false, 2, false, nullptr, ar_absorbs(false)});
  return rules;
}

}  // namespace

const std::vector<RuleDef>& RewriteRules() {
  static const std::vector<RuleDef>* rules = new std::vector<RuleDef>(BuildRules());
  return *rules;
}

}  // namespace spmdcheck::smt::rw
