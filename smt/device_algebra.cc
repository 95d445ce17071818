#include "smt/device_algebra.h"

#include <z3++.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/tile_assignment.h"
#include "smt/tile_encoding.h"

namespace spmdcheck::smt {
namespace {

std::string IndexText(absl::Span<const int64_t> index) {
  return absl::StrCat("[", absl::StrJoin(index, ","), "]");
}

std::vector<int64_t> ModelInts(const z3::model& model, const std::vector<z3::expr>& exprs) {
  std::vector<int64_t> values;
  for (const z3::expr& e : exprs) values.push_back(ModelInt(model, e));
  return values;
}

// A solver with the timeout set. Returns sat/unsat; on unknown fills `reason`.
class Query {
 public:
  Query(z3::context& ctx, int64_t timeout_ms) : solver_(ctx) {
    z3::params params(ctx);
    params.set("timeout", static_cast<unsigned>(std::clamp<int64_t>(timeout_ms, 1, 1 << 30)));
    solver_.set(params);
  }
  // For queries over bounded integer digits only: eliminate the defined variables, turn the
  // bounded integers into bit-vectors and bit-blast to SAT, which decides mixed-radix digit
  // identities far faster than the arithmetic solver.
  static Query BitBlasting(z3::context& ctx, int64_t timeout_ms) {
    z3::tactic tactic = z3::tactic(ctx, "simplify") & z3::tactic(ctx, "solve-eqs") &
                        z3::tactic(ctx, "propagate-ineqs") & z3::tactic(ctx, "nla2bv") &
                        z3::tactic(ctx, "simplify") & z3::tactic(ctx, "bit-blast") &
                        z3::tactic(ctx, "sat");
    Query q(ctx, tactic.mk_solver());
    z3::params params(ctx);
    params.set("timeout", static_cast<unsigned>(std::clamp<int64_t>(timeout_ms, 1, 1 << 30)));
    q.solver_.set(params);
    return q;
  }
  void Add(const z3::expr& e) { solver_.add(e); }
  void Add(const z3::expr_vector& v) {
    for (unsigned i = 0; i < v.size(); ++i) solver_.add(v[i]);
  }
  z3::check_result Check() { return solver_.check(); }
  z3::model Model() { return solver_.get_model(); }
  std::string Reason() {
    const std::string why = solver_.reason_unknown();
    if (why.find("timeout") != std::string::npos || why.find("canceled") != std::string::npos) {
      return absl::StrCat("Z3 timed out (", why, ")");
    }
    return absl::StrCat("Z3 gave up (", why, ")");
  }

 private:
  Query(z3::context&, z3::solver solver) : solver_(std::move(solver)) {}
  z3::solver solver_;
};

std::string KindName(const HloSharding& s) {
  switch (s.kind()) {
    case HloSharding::Kind::kReplicated:
      return "replicated";
    case HloSharding::Kind::kMaximal:
      return "maximal";
    case HloSharding::Kind::kManual:
      return "manual";
    case HloSharding::Kind::kUnknown:
      return "unknown";
    case HloSharding::Kind::kUnreduced:
      return "unreduced";
    case HloSharding::Kind::kTiled:
      return "tiled";
    case HloSharding::Kind::kTuple:
      return "tuple";
  }
  return "?";
}

ProofResult ProveTiledBijection(const TileAssignment& tiles, int64_t n, int64_t timeout_ms) {
  z3::context ctx;
  const int64_t m = tiles.num_elements();
  // 1. No position is on a device outside [0, n).
  {
    Query q(ctx, timeout_ms);
    TileEncoding e = EncodeTileAssignment(ctx, tiles, "a", /*with_index=*/true);
    q.Add(e.constraints);
    q.Add(e.device < ctx.int_val(static_cast<int64_t>(0)) || e.device >= ctx.int_val(n));
    switch (q.Check()) {
      case z3::sat: {
        z3::model model = q.Model();
        return ProofResult::Refuted(absl::StrCat("tile ", IndexText(ModelInts(model, e.index)),
                                                 " is on device ", ModelInt(model, e.device),
                                                 ", outside [0,", n, ")"));
      }
      case z3::unknown:
        return ProofResult::Unknown(q.Reason());
      case z3::unsat:
        break;
    }
  }
  // 2. No two positions on one device.
  {
    Query q(ctx, timeout_ms);
    TileEncoding a = EncodeTileAssignment(ctx, tiles, "a", true);
    TileEncoding b = EncodeTileAssignment(ctx, tiles, "b", true);
    q.Add(a.constraints);
    q.Add(b.constraints);
    q.Add(a.linear < b.linear);
    q.Add(a.device == b.device);
    switch (q.Check()) {
      case z3::sat: {
        z3::model model = q.Model();
        return ProofResult::Refuted(absl::StrCat("tiles ", IndexText(ModelInts(model, a.index)),
                                                 " and ", IndexText(ModelInts(model, b.index)),
                                                 " are both on device ",
                                                 ModelInt(model, a.device)));
      }
      case z3::unknown:
        return ProofResult::Unknown(q.Reason());
      case z3::unsat:
        break;
    }
  }
  // 3. Every device in [0, n) occurs.
  {
    Query q(ctx, timeout_ms);
    z3::expr d = ctx.int_const("d");
    q.Add(d >= ctx.int_val(static_cast<int64_t>(0)) && d < ctx.int_val(n));
    q.Add(!DeviceOccurs(ctx, tiles, d));
    switch (q.Check()) {
      case z3::sat: {
        z3::model model = q.Model();
        return ProofResult::Refuted(absl::StrCat("device ", ModelInt(model, d), " holds no tile (",
                                                 m, " tile positions for ", n, " devices)"));
      }
      case z3::unknown:
        return ProofResult::Unknown(q.Reason());
      case z3::unsat:
        break;
    }
  }
  return ProofResult::Proved();
}

}  // namespace

ProofResult ProveSharding(const HloSharding& sharding, int64_t num_devices, int64_t timeout_ms) {
  switch (sharding.kind()) {
    case HloSharding::Kind::kTuple: {
      const auto& elements = sharding.tuple_elements();
      for (size_t i = 0; i < elements.size(); ++i) {
        ProofResult r = ProveSharding(elements[i], num_devices, timeout_ms);
        if (r.verdict == Verdict::kFails)
          r.counterexample = absl::StrCat("tuple element ", i, ": ", r.counterexample);
        if (r.verdict == Verdict::kUnknown)
          r.reason = absl::StrCat("tuple element ", i, ": ", r.reason);
        if (r.verdict != Verdict::kHolds) return r;
      }
      return ProofResult::Proved();
    }
    case HloSharding::Kind::kMaximal: {
      const int64_t d = sharding.MaximalDevice();
      if (d < 0 || (num_devices > 0 && d >= num_devices)) {
        return ProofResult::Refuted(
            absl::StrCat("maximal device ", d, " is outside [0,", num_devices, ")"));
      }
      return ProofResult::Proved();
    }
    case HloSharding::Kind::kTiled: {
      const TileAssignment& tiles = sharding.tile_assignment();
      const int64_t n = num_devices > 0 ? num_devices : tiles.num_elements();
      return ProveTiledBijection(tiles, n, timeout_ms);
    }
    default:
      return ProofResult::Proved();
  }
}

ProofResult ProveSame(const HloSharding& a, const HloSharding& b, int64_t timeout_ms) {
  if (a.kind() != b.kind()) {
    return ProofResult::Refuted(absl::StrCat("kinds differ: ", KindName(a), " vs ", KindName(b)));
  }
  if (a.IsTuple()) {
    if (a.tuple_elements().size() != b.tuple_elements().size()) {
      return ProofResult::Refuted(absl::StrCat("tuple sizes differ: ", a.tuple_elements().size(),
                                               " vs ", b.tuple_elements().size()));
    }
    for (size_t i = 0; i < a.tuple_elements().size(); ++i) {
      ProofResult r = ProveSame(a.tuple_elements()[i], b.tuple_elements()[i], timeout_ms);
      if (r.verdict == Verdict::kFails)
        r.counterexample = absl::StrCat("tuple element ", i, ": ", r.counterexample);
      if (r.verdict == Verdict::kUnknown)
        r.reason = absl::StrCat("tuple element ", i, ": ", r.reason);
      if (r.verdict != Verdict::kHolds) return r;
    }
    return ProofResult::Proved();
  }
  if (a.IsMaximal()) {
    if (a.MaximalDevice() != b.MaximalDevice()) {
      return ProofResult::Refuted(
          absl::StrCat("maximal devices differ: ", a.MaximalDevice(), " vs ", b.MaximalDevice()));
    }
    return ProofResult::Proved();
  }
  if (!a.IsTiled()) return ProofResult::Proved();
  const TileAssignment& ta = a.tile_assignment();
  const TileAssignment& tb = b.tile_assignment();
  if (ta.dims() != tb.dims()) {
    return ProofResult::Refuted(
        absl::StrCat("tile dims differ: ", IndexText(ta.dims()), " vs ", IndexText(tb.dims())));
  }
  if (a.ReplicateOnLastTileDim() != b.ReplicateOnLastTileDim() ||
      a.subgroup_types() != b.subgroup_types()) {
    return ProofResult::Refuted(
        absl::StrCat("subgroup structure differs: ", a.ToString(false), " vs ", b.ToString(false)));
  }
  z3::context ctx;
  Query q(ctx, timeout_ms);
  TileEncoding ea = EncodeTileAssignment(ctx, ta, "a", true);
  TileEncoding eb = EncodeTileAssignment(ctx, tb, "b", false);
  q.Add(ea.constraints);
  q.Add(eb.constraints);
  q.Add(ea.linear == eb.linear);
  q.Add(ea.device != eb.device);
  switch (q.Check()) {
    case z3::sat: {
      z3::model model = q.Model();
      return ProofResult::Refuted(absl::StrCat("tile ", IndexText(ModelInts(model, ea.index)),
                                               " is on device ", ModelInt(model, ea.device),
                                               " vs device ", ModelInt(model, eb.device)));
    }
    case z3::unknown:
      return ProofResult::Unknown(q.Reason());
    case z3::unsat:
      break;
  }
  return ProofResult::Proved();
}

ProofResult ProveGroups(const HloSharding& sharding, absl::Span<const int64_t> dims,
                        const ReplicaGroups& groups, int64_t timeout_ms) {
  if (!sharding.IsTiled()) {
    return ProofResult::Unknown(
        absl::StrCat("groups need a tiled sharding, not ", sharding.ToString(false)));
  }
  const TileAssignment& tiles = sharding.tile_assignment();
  const int64_t rank = tiles.num_dimensions();
  std::vector<bool> selected(static_cast<size_t>(rank), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return ProofResult::Unknown(absl::StrCat("dim ", d, " out of range for tile rank ", rank));
    }
    selected[d] = true;
  }
  std::vector<int64_t> other_sizes, selected_sizes;
  for (int64_t i = 0; i < rank; ++i)
    (selected[i] ? selected_sizes : other_sizes).push_back(tiles.dim(i));
  int64_t num_groups = 1, group_size = 1;
  for (int64_t s : other_sizes) num_groups *= s;
  for (int64_t s : selected_sizes) group_size *= s;
  const std::string dims_text = absl::StrCat("{", absl::StrJoin(dims, ","), "}");
  // Shapes first (concrete).
  if (groups.num_groups() != num_groups) {
    return ProofResult::Refuted(absl::StrCat("G has ", groups.num_groups(),
                                             " groups; grouping along dims ", dims_text, " has ",
                                             num_groups, " groups of ", group_size));
  }
  std::vector<int64_t> table;  // Explicit groups, row-major (g, p).
  if (!groups.is_iota()) {
    for (int64_t g = 0; g < num_groups; ++g) {
      std::vector<int64_t> members = groups.group(g);
      if (static_cast<int64_t>(members.size()) != group_size) {
        return ProofResult::Refuted(absl::StrCat("group ", g, " of G has ", members.size(),
                                                 " devices; grouping along dims ", dims_text,
                                                 " has groups of ", group_size));
      }
      table.insert(table.end(), members.begin(), members.end());
    }
  } else if (groups.first_group_size() != group_size) {
    return ProofResult::Refuted(absl::StrCat("groups of G have ", groups.first_group_size(),
                                             " devices; grouping along dims ", dims_text,
                                             " has groups of ", group_size));
  }
  z3::context ctx;
  Query q = groups.is_iota() && tiles.is_iota() ? Query::BitBlasting(ctx, timeout_ms)
                                                : Query(ctx, timeout_ms);
  TileEncoding e = EncodeTileAssignment(ctx, tiles, "s", true);
  q.Add(e.constraints);
  std::vector<z3::expr> other_digits, selected_digits;
  for (int64_t i = 0; i < rank; ++i)
    (selected[i] ? selected_digits : other_digits).push_back(e.index[i]);
  z3::expr g = RowMajor(ctx, other_digits, other_sizes);
  z3::expr p = RowMajor(ctx, selected_digits, selected_sizes);
  z3::expr given = ctx.int_val(static_cast<int64_t>(0));
  if (groups.is_iota()) {
    TileEncoding ge = EncodeTileAssignment(ctx, TileAssignment(*groups.iota()), "g", true);
    q.Add(ge.constraints);
    q.Add(ge.index[0] == g);
    q.Add(ge.index[1] == p);
    given = ge.device;
  } else {
    given = TableLookup(ctx, g * ctx.int_val(group_size) + p, table);
  }
  q.Add(given != e.device);
  switch (q.Check()) {
    case z3::sat: {
      z3::model model = q.Model();
      const int64_t gv = ModelInt(model, g), pv = ModelInt(model, p);
      const int64_t x = ModelInt(model, given), y = ModelInt(model, e.device);
      std::string text =
          absl::StrCat("device ", x, " is at position ", pv, " of group ", gv, " in G; ");
      std::optional<std::vector<int64_t>> index = tiles.TileIndexOf(x);
      if (!index.has_value()) {
        absl::StrAppend(&text, "the sharding has no device ", x);
      } else {
        std::vector<int64_t> o, s;
        for (int64_t i = 0; i < rank; ++i) (selected[i] ? s : o).push_back((*index)[i]);
        absl::StrAppend(&text, "grouping along dims ", dims_text, " puts it in group ",
                        LinearIndex(other_sizes, o), " at position ",
                        LinearIndex(selected_sizes, s));
      }
      absl::StrAppend(&text, " (position ", pv, " of group ", gv, " should be device ", y, ")");
      return ProofResult::Refuted(text);
    }
    case z3::unknown:
      return ProofResult::Unknown(q.Reason());
    case z3::unsat:
      break;
  }
  return ProofResult::Proved();
}

ProofResult ProvePairs(const HloSharding& from, const HloSharding& to,
                       const SourceTargetPairs& pairs, int64_t timeout_ms) {
  if (!from.IsTiled() || !to.IsTiled()) {
    return ProofResult::Unknown("pairs need two tiled shardings");
  }
  const TileAssignment& tf = from.tile_assignment();
  const TileAssignment& tt = to.tile_assignment();
  const int64_t rank = from.TiledDataRank();
  if (rank != to.TiledDataRank() ||
      !std::equal(tf.dims().begin(), tf.dims().begin() + rank, tt.dims().begin())) {
    return ProofResult::Unknown(absl::StrCat("the data tile grids differ: ", from.ToString(false),
                                             " vs ", to.ToString(false)));
  }
  if (!tf.DevicesDistinct() || !tt.DevicesDistinct()) {
    return ProofResult::Unknown("a tile assignment lists a device twice");
  }
  // The device that holds data tile `data` under `from` at replica 0 (for messages).
  auto sender = [&](const std::vector<int64_t>& full_to_index) {
    std::vector<int64_t> index(static_cast<size_t>(tf.num_dimensions()), 0);
    for (int64_t i = 0; i < rank; ++i) index[i] = full_to_index[i];
    return tf.DeviceAt(index);
  };
  auto data_text = [&](const std::vector<int64_t>& full) {
    return IndexText(absl::MakeConstSpan(full).subspan(0, static_cast<size_t>(rank)));
  };
  z3::context ctx;
  std::vector<int64_t> sources, targets;
  for (const auto& [s, t] : pairs) {
    targets.push_back(t);
    sources.push_back(s);
  }
  auto has_pair = [&](const z3::expr& x) {
    z3::expr_vector options(ctx);
    for (int64_t t : targets) options.push_back(x == ctx.int_val(t));
    return options.empty() ? ctx.bool_val(false) : z3::mk_or(options);
  };
  auto source_of = [&](const z3::expr& x) {
    z3::expr result = ctx.int_val(static_cast<int64_t>(-1));
    for (size_t k = pairs.size(); k-- > 0;) {
      result = z3::ite(x == ctx.int_val(targets[k]), ctx.int_val(sources[k]), result);
    }
    return result;
  };
  // 1. Every receiving device has a pair.
  {
    Query q(ctx, timeout_ms);
    TileEncoding e = EncodeTileAssignment(ctx, tt, "t", true);
    q.Add(e.constraints);
    q.Add(!has_pair(e.device));
    switch (q.Check()) {
      case z3::sat: {
        z3::model model = q.Model();
        std::vector<int64_t> index = ModelInts(model, e.index);
        return ProofResult::Refuted(
            absl::StrCat("tile ", data_text(index), ": device ", ModelInt(model, e.device),
                         " holds it under `to` but no pair targets it; device ", sender(index),
                         " should send it"));
      }
      case z3::unknown:
        return ProofResult::Unknown(q.Reason());
      case z3::unsat:
        break;
    }
  }
  // 2. Every source used holds something under `from`.
  {
    Query q(ctx, timeout_ms);
    TileEncoding e = EncodeTileAssignment(ctx, tt, "t", true);
    q.Add(e.constraints);
    q.Add(has_pair(e.device));
    q.Add(!DeviceOccurs(ctx, tf, source_of(e.device)));
    switch (q.Check()) {
      case z3::sat: {
        z3::model model = q.Model();
        std::vector<int64_t> index = ModelInts(model, e.index);
        return ProofResult::Refuted(absl::StrCat(
            "tile ", data_text(index), ": device ", sender(index), " should send it to device ",
            ModelInt(model, e.device), ", but the pairs send from device ",
            ModelInt(model, source_of(e.device)), ", which holds nothing under `from`"));
      }
      case z3::unknown:
        return ProofResult::Unknown(q.Reason());
      case z3::unsat:
        break;
    }
  }
  // 3. The source holds the right data tile.
  {
    Query q(ctx, timeout_ms);
    TileEncoding e = EncodeTileAssignment(ctx, tt, "t", true);
    TileEncoding f = EncodeTileAssignment(ctx, tf, "f", true);
    q.Add(e.constraints);
    q.Add(f.constraints);
    q.Add(has_pair(e.device));
    q.Add(f.device == source_of(e.device));
    z3::expr_vector differs(ctx);
    for (int64_t i = 0; i < rank; ++i) differs.push_back(e.index[i] != f.index[i]);
    q.Add(differs.empty() ? ctx.bool_val(false) : z3::mk_or(differs));
    switch (q.Check()) {
      case z3::sat: {
        z3::model model = q.Model();
        std::vector<int64_t> index = ModelInts(model, e.index);
        std::vector<int64_t> sent = ModelInts(model, f.index);
        return ProofResult::Refuted(absl::StrCat(
            "tile ", data_text(index), ": device ", sender(index), " should send it to device ",
            ModelInt(model, e.device), ", but the pairs send from device ",
            ModelInt(model, f.device), ", which holds tile ", data_text(sent), " under `from`"));
      }
      case z3::unknown:
        return ProofResult::Unknown(q.Reason());
      case z3::unsat:
        break;
    }
  }
  return ProofResult::Proved();
}

}  // namespace spmdcheck::smt
