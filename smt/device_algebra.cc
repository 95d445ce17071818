#include "smt/device_algebra.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/tile_assignment.h"
#include "smt/tile_encoding.h"
#include "smt/z3_guard.h"

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
    params.set("timeout", Z3TimeoutParam(timeout_ms));
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
    params.set("timeout", Z3TimeoutParam(timeout_ms));
    q.solver_.set(params);
    return q;
  }
  void Add(const z3::expr& e) { solver_.add(e); }
  void Add(const z3::expr_vector& v) {
    for (unsigned i = 0; i < v.size(); ++i) solver_.add(v[i]);
  }
  z3::check_result Check() { return solver_.check(); }
  z3::model Model() { return solver_.get_model(); }
  std::string Reason() { return Z3UnknownReason(solver_.reason_unknown()); }

 private:
  // z3::solver has no move constructor: a copy shares the underlying Z3 solver (reference count).
  Query(z3::context&, const z3::solver& solver) : solver_(solver) {}
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

// ---------------------------------------------------------------------------------------------
// Direct enumeration: every tile position of a concrete assignment, in row-major order, so the
// first violation found is the smallest one (the same wording as the Z3 counterexamples).

ProofResult EnumerateTiledBijection(const TileAssignment& tiles, int64_t n) {
  const int64_t m = tiles.num_elements();
  // 1. No position is on a device outside [0, n).
  for (int64_t linear = 0; linear < m; ++linear) {
    const int64_t d = tiles.DeviceAtLinear(linear);
    if (d < 0 || d >= n) {
      return ProofResult::Refuted(absl::StrCat("tile ", IndexText(MultiIndex(tiles.dims(), linear)),
                                               " is on device ", d, ", outside [0,", n, ")"));
    }
  }
  // 2. No two positions on one device.
  std::vector<int64_t> position_of(static_cast<size_t>(n), -1);
  for (int64_t linear = 0; linear < m; ++linear) {
    const int64_t d = tiles.DeviceAtLinear(linear);
    if (position_of[d] >= 0) {
      return ProofResult::Refuted(
          absl::StrCat("tiles ", IndexText(MultiIndex(tiles.dims(), position_of[d])), " and ",
                       IndexText(MultiIndex(tiles.dims(), linear)), " are both on device ", d));
    }
    position_of[d] = linear;
  }
  // 3. Every device in [0, n) occurs.
  for (int64_t d = 0; d < n; ++d) {
    if (position_of[d] < 0) {
      return ProofResult::Refuted(absl::StrCat("device ", d, " holds no tile (", m,
                                               " tile positions for ", n, " devices)"));
    }
  }
  return ProofResult::Proved();
}

ProofResult Z3SameDevices(const TileAssignment& ta, const TileAssignment& tb, int64_t timeout_ms) {
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

ProofResult EnumerateSameDevices(const TileAssignment& ta, const TileAssignment& tb) {
  for (int64_t linear = 0; linear < ta.num_elements(); ++linear) {
    const int64_t a = ta.DeviceAtLinear(linear);
    const int64_t b = tb.DeviceAtLinear(linear);
    if (a != b) {
      return ProofResult::Refuted(absl::StrCat("tile ", IndexText(MultiIndex(ta.dims(), linear)),
                                               " is on device ", a, " vs device ", b));
    }
  }
  return ProofResult::Proved();
}

// The grouping along some tile dims: group = the row-major index of the other tile dims'
// digits, position = that of the selected dims' digits.
struct Grouping {
  std::vector<bool> selected;
  std::vector<int64_t> other_sizes;
  std::vector<int64_t> selected_sizes;
  int64_t num_groups = 1;
  int64_t group_size = 1;
  std::string dims_text;
  // Group g, position p -> the row-major linear tile position.
  int64_t LinearOf(int64_t g, int64_t p, absl::Span<const int64_t> tile_dims) const {
    const std::vector<int64_t> o = MultiIndex(other_sizes, g);
    const std::vector<int64_t> s = MultiIndex(selected_sizes, p);
    std::vector<int64_t> index(tile_dims.size());
    size_t oi = 0, si = 0;
    for (size_t i = 0; i < tile_dims.size(); ++i) index[i] = selected[i] ? s[si++] : o[oi++];
    return LinearIndex(tile_dims, index);
  }
};

// The text of a wrong group member: `x` is at (g, p) in G where the grouping has `y`.
std::string GroupsCounterexample(const TileAssignment& tiles, const Grouping& grouping, int64_t gv,
                                 int64_t pv, int64_t x, int64_t y) {
  std::string text =
      absl::StrCat("device ", x, " is at position ", pv, " of group ", gv, " in G; ");
  std::optional<std::vector<int64_t>> index = tiles.TileIndexOf(x);
  if (!index.has_value()) {
    absl::StrAppend(&text, "the sharding has no device ", x);
  } else {
    std::vector<int64_t> o, s;
    for (size_t i = 0; i < index->size(); ++i)
      (grouping.selected[i] ? s : o).push_back((*index)[i]);
    absl::StrAppend(&text, "grouping along dims ", grouping.dims_text, " puts it in group ",
                    LinearIndex(grouping.other_sizes, o), " at position ",
                    LinearIndex(grouping.selected_sizes, s));
  }
  absl::StrAppend(&text, " (position ", pv, " of group ", gv, " should be device ", y, ")");
  return text;
}

ProofResult Z3Groups(const TileAssignment& tiles, const Grouping& grouping,
                     const ReplicaGroups& groups, const std::vector<int64_t>& table,
                     int64_t timeout_ms) {
  const int64_t rank = tiles.num_dimensions();
  z3::context ctx;
  Query q = groups.is_iota() && tiles.is_iota() ? Query::BitBlasting(ctx, timeout_ms)
                                                : Query(ctx, timeout_ms);
  TileEncoding e = EncodeTileAssignment(ctx, tiles, "s", true);
  q.Add(e.constraints);
  std::vector<z3::expr> other_digits, selected_digits;
  for (int64_t i = 0; i < rank; ++i)
    (grouping.selected[i] ? selected_digits : other_digits).push_back(e.index[i]);
  z3::expr g = RowMajor(ctx, other_digits, grouping.other_sizes);
  z3::expr p = RowMajor(ctx, selected_digits, grouping.selected_sizes);
  z3::expr given = ctx.int_val(static_cast<int64_t>(0));
  if (groups.is_iota()) {
    TileEncoding ge = EncodeTileAssignment(ctx, TileAssignment(*groups.iota()), "g", true);
    q.Add(ge.constraints);
    q.Add(ge.index[0] == g);
    q.Add(ge.index[1] == p);
    given = ge.device;
  } else {
    given = TableLookup(ctx, g * ctx.int_val(grouping.group_size) + p, table);
  }
  q.Add(given != e.device);
  switch (q.Check()) {
    case z3::sat: {
      z3::model model = q.Model();
      return ProofResult::Refuted(GroupsCounterexample(tiles, grouping, ModelInt(model, g),
                                                       ModelInt(model, p), ModelInt(model, given),
                                                       ModelInt(model, e.device)));
    }
    case z3::unknown:
      return ProofResult::Unknown(q.Reason());
    case z3::unsat:
      break;
  }
  return ProofResult::Proved();
}

ProofResult EnumerateGroups(const TileAssignment& tiles, const Grouping& grouping,
                            const ReplicaGroups& groups, const std::vector<int64_t>& table) {
  for (int64_t g = 0; g < grouping.num_groups; ++g) {
    for (int64_t p = 0; p < grouping.group_size; ++p) {
      const int64_t want = tiles.DeviceAtLinear(grouping.LinearOf(g, p, tiles.dims()));
      const int64_t key = g * grouping.group_size + p;
      const int64_t given = groups.is_iota() ? groups.iota()->ValueAtLinear(key) : table[key];
      if (given != want) {
        return ProofResult::Refuted(GroupsCounterexample(tiles, grouping, g, p, given, want));
      }
    }
  }
  return ProofResult::Proved();
}

// Collective-permute pairs against two tiled shardings of the same data tile grid.
class PairsFacts {
 public:
  PairsFacts(const HloSharding& from, const HloSharding& to, const SourceTargetPairs& pairs)
      : tf_(from.tile_assignment()),
        tt_(to.tile_assignment()),
        rank_(from.TiledDataRank()),
        pairs_(pairs) {}

  ProofResult Z3(int64_t timeout_ms) const {
    z3::context ctx;
    std::vector<int64_t> sources, targets;
    for (const auto& [s, t] : pairs_) {
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
      for (size_t k = pairs_.size(); k-- > 0;) {
        result = z3::ite(x == ctx.int_val(targets[k]), ctx.int_val(sources[k]), result);
      }
      return result;
    };
    // 1. Every receiving device has a pair.
    {
      Query q(ctx, timeout_ms);
      TileEncoding e = EncodeTileAssignment(ctx, tt_, "t", true);
      q.Add(e.constraints);
      q.Add(!has_pair(e.device));
      switch (q.Check()) {
        case z3::sat: {
          z3::model model = q.Model();
          return ProofResult::Refuted(NoPair(ModelInts(model, e.index), ModelInt(model, e.device)));
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
      TileEncoding e = EncodeTileAssignment(ctx, tt_, "t", true);
      q.Add(e.constraints);
      q.Add(has_pair(e.device));
      q.Add(!DeviceOccurs(ctx, tf_, source_of(e.device)));
      switch (q.Check()) {
        case z3::sat: {
          z3::model model = q.Model();
          return ProofResult::Refuted(SourceHoldsNothing(ModelInts(model, e.index),
                                                         ModelInt(model, e.device),
                                                         ModelInt(model, source_of(e.device))));
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
      TileEncoding e = EncodeTileAssignment(ctx, tt_, "t", true);
      TileEncoding f = EncodeTileAssignment(ctx, tf_, "f", true);
      q.Add(e.constraints);
      q.Add(f.constraints);
      q.Add(has_pair(e.device));
      q.Add(f.device == source_of(e.device));
      z3::expr_vector differs(ctx);
      for (int64_t i = 0; i < rank_; ++i) differs.push_back(e.index[i] != f.index[i]);
      q.Add(differs.empty() ? ctx.bool_val(false) : z3::mk_or(differs));
      switch (q.Check()) {
        case z3::sat: {
          z3::model model = q.Model();
          return ProofResult::Refuted(
              WrongSource(ModelInts(model, e.index), ModelInt(model, e.device),
                          ModelInt(model, f.device), ModelInts(model, f.index)));
        }
        case z3::unknown:
          return ProofResult::Unknown(q.Reason());
        case z3::unsat:
          break;
      }
    }
    return ProofResult::Proved();
  }

  ProofResult Enumerate() const {
    absl::flat_hash_map<int64_t, int64_t> source_of;
    for (const auto& [s, t] : pairs_) source_of.emplace(t, s);
    const int64_t m = tt_.num_elements();
    // The three checks in the Z3 order, each over every position of `to`.
    for (int64_t linear = 0; linear < m; ++linear) {
      const int64_t t = tt_.DeviceAtLinear(linear);
      if (!source_of.contains(t))
        return ProofResult::Refuted(NoPair(MultiIndex(tt_.dims(), linear), t));
    }
    for (int64_t linear = 0; linear < m; ++linear) {
      const int64_t t = tt_.DeviceAtLinear(linear);
      const int64_t s = source_of.at(t);
      if (!tf_.LinearIndexOf(s).has_value()) {
        return ProofResult::Refuted(SourceHoldsNothing(MultiIndex(tt_.dims(), linear), t, s));
      }
    }
    for (int64_t linear = 0; linear < m; ++linear) {
      const int64_t t = tt_.DeviceAtLinear(linear);
      const int64_t s = source_of.at(t);
      const std::vector<int64_t> want = MultiIndex(tt_.dims(), linear);
      const std::vector<int64_t> sent = *tf_.TileIndexOf(s);
      if (!std::equal(want.begin(), want.begin() + rank_, sent.begin())) {
        return ProofResult::Refuted(WrongSource(want, t, s, sent));
      }
    }
    return ProofResult::Proved();
  }

 private:
  // The device that holds data tile `index` under `from` at replica 0 (for messages).
  int64_t Sender(const std::vector<int64_t>& full_to_index) const {
    std::vector<int64_t> index(static_cast<size_t>(tf_.num_dimensions()), 0);
    for (int64_t i = 0; i < rank_; ++i) index[i] = full_to_index[i];
    return tf_.DeviceAt(index);
  }
  std::string DataText(const std::vector<int64_t>& full) const {
    return IndexText(absl::MakeConstSpan(full).subspan(0, static_cast<size_t>(rank_)));
  }
  std::string NoPair(const std::vector<int64_t>& index, int64_t t) const {
    return absl::StrCat("tile ", DataText(index), ": device ", t,
                        " holds it under `to` but no pair targets it; device ", Sender(index),
                        " should send it");
  }
  std::string SourceHoldsNothing(const std::vector<int64_t>& index, int64_t t, int64_t s) const {
    return absl::StrCat("tile ", DataText(index), ": device ", Sender(index),
                        " should send it to device ", t, ", but the pairs send from device ", s,
                        ", which holds nothing under `from`");
  }
  std::string WrongSource(const std::vector<int64_t>& index, int64_t t, int64_t s,
                          const std::vector<int64_t>& sent) const {
    return absl::StrCat("tile ", DataText(index), ": device ", Sender(index),
                        " should send it to device ", t, ", but the pairs send from device ", s,
                        ", which holds tile ", DataText(sent), " under `from`");
  }

  const TileAssignment& tf_;
  const TileAssignment& tt_;
  int64_t rank_;
  const SourceTargetPairs& pairs_;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// `12345x` (or `0.5x` below 10).
std::string RatioText(double ratio) {
  return ratio >= 10 ? absl::StrFormat("%.0fx", ratio) : absl::StrFormat("%.2fx", ratio);
}

std::string VerdictWord(const ProofResult& r) {
  switch (r.verdict) {
    case Verdict::kHolds:
      return "proved";
    case Verdict::kFails:
      return "refuted";
    case Verdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

}  // namespace

ProofResult DecideFact(const FactOptions& options, int64_t work, const std::string& what,
                       absl::string_view fact, const std::function<ProofResult()>& enumerate,
                       const std::function<ProofResult()>& z3_proof) {
  Procedure procedure = options.procedure;
  if (procedure == Procedure::kAuto) {
    procedure = work <= kMaxEnumeratedPositions ? Procedure::kEnumerate : Procedure::kZ3;
  }
  ProofResult by_enumeration, by_z3;
  double enumeration_s = 0, z3_s = 0;
  if (procedure != Procedure::kZ3) {
    const auto start = std::chrono::steady_clock::now();
    by_enumeration = enumerate();
    enumeration_s = SecondsSince(start);
    by_enumeration.procedure =
        absl::StrCat("enumeration over ", what, " (", DurationText(enumeration_s), ")");
    if (procedure == Procedure::kEnumerate) return by_enumeration;
  }
  const auto start = std::chrono::steady_clock::now();
  by_z3 = GuardZ3(fact, z3_proof);
  z3_s = SecondsSince(start);
  by_z3.procedure = absl::StrCat("Z3 (", DurationText(z3_s), ")");
  if (procedure == Procedure::kZ3) return by_z3;
  // Both ran.
  if (by_z3.verdict == Verdict::kUnknown) {
    by_enumeration.procedure =
        absl::StrCat("enumeration over ", what, " (", DurationText(enumeration_s),
                     "); Z3 gave no answer after ", DurationText(z3_s), " (", by_z3.reason, ")");
    return by_enumeration;
  }
  if (by_z3.verdict != by_enumeration.verdict) {
    ProofResult r = ProofResult::Unknown(absl::StrCat("the procedures disagree: enumeration says ",
                                                      FormatProofResult(by_enumeration),
                                                      "; Z3 says ", FormatProofResult(by_z3)));
    r.procedure = "both (disagreeing)";
    return r;
  }
  by_enumeration.procedure = absl::StrCat(
      "enumeration over ", what, " (", DurationText(enumeration_s), ") and Z3 (",
      DurationText(z3_s), ") both ", VerdictWord(by_enumeration),
      "; Z3 / enumeration time = ", RatioText(enumeration_s > 0 ? z3_s / enumeration_s : 0.0));
  return by_enumeration;
}

std::optional<Procedure> ParseProcedure(absl::string_view text) {
  if (text == "auto") return Procedure::kAuto;
  if (text == "enumerate" || text == "enumeration") return Procedure::kEnumerate;
  if (text == "z3") return Procedure::kZ3;
  if (text == "both") return Procedure::kBoth;
  return std::nullopt;
}

std::string DurationText(double seconds) {
  if (seconds < 0.001) return absl::StrFormat("%.3f ms", seconds * 1000);
  if (seconds < 1) return absl::StrFormat("%.0f ms", seconds * 1000);
  return absl::StrFormat("%.2f s", seconds);
}

ProofResult ProveSharding(const HloSharding& sharding, int64_t num_devices, int64_t timeout_ms) {
  return ProveSharding(sharding, num_devices, FactOptions{timeout_ms, Procedure::kAuto});
}

ProofResult ProveSharding(const HloSharding& sharding, int64_t num_devices,
                          const FactOptions& options) {
  switch (sharding.kind()) {
    case HloSharding::Kind::kTuple: {
      const auto& elements = sharding.tuple_elements();
      for (size_t i = 0; i < elements.size(); ++i) {
        ProofResult r = ProveSharding(elements[i], num_devices, options);
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
      const int64_t work = std::max(n, tiles.num_elements());
      return DecideFact(
          options, work, absl::StrCat(tiles.num_elements(), " tile positions"), "prove sharding",
          [&] { return EnumerateTiledBijection(tiles, n); },
          [&] { return ProveTiledBijection(tiles, n, options.timeout_ms); });
    }
    default:
      return ProofResult::Proved();
  }
}

ProofResult ProveSame(const HloSharding& a, const HloSharding& b, int64_t timeout_ms) {
  return ProveSame(a, b, FactOptions{timeout_ms, Procedure::kAuto});
}

ProofResult ProveSame(const HloSharding& a, const HloSharding& b, const FactOptions& options) {
  if (a.kind() != b.kind()) {
    return ProofResult::Refuted(absl::StrCat("kinds differ: ", KindName(a), " vs ", KindName(b)));
  }
  if (a.IsTuple()) {
    if (a.tuple_elements().size() != b.tuple_elements().size()) {
      return ProofResult::Refuted(absl::StrCat("tuple sizes differ: ", a.tuple_elements().size(),
                                               " vs ", b.tuple_elements().size()));
    }
    for (size_t i = 0; i < a.tuple_elements().size(); ++i) {
      ProofResult r = ProveSame(a.tuple_elements()[i], b.tuple_elements()[i], options);
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
  return DecideFact(
      options, ta.num_elements(), absl::StrCat(ta.num_elements(), " tile positions"), "prove same",
      [&] { return EnumerateSameDevices(ta, tb); },
      [&] { return Z3SameDevices(ta, tb, options.timeout_ms); });
}

ProofResult ProveGroups(const HloSharding& sharding, absl::Span<const int64_t> dims,
                        const ReplicaGroups& groups, int64_t timeout_ms) {
  return ProveGroups(sharding, dims, groups, FactOptions{timeout_ms, Procedure::kAuto});
}

ProofResult ProveGroups(const HloSharding& sharding, absl::Span<const int64_t> dims,
                        const ReplicaGroups& groups, const FactOptions& options) {
  if (!sharding.IsTiled()) {
    return ProofResult::Unknown(
        absl::StrCat("groups need a tiled sharding, not ", sharding.ToString(false)));
  }
  const TileAssignment& tiles = sharding.tile_assignment();
  const int64_t rank = tiles.num_dimensions();
  Grouping grouping;
  grouping.selected.assign(static_cast<size_t>(rank), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return ProofResult::Unknown(absl::StrCat("dim ", d, " out of range for tile rank ", rank));
    }
    grouping.selected[d] = true;
  }
  for (int64_t i = 0; i < rank; ++i) {
    (grouping.selected[i] ? grouping.selected_sizes : grouping.other_sizes).push_back(tiles.dim(i));
  }
  for (int64_t s : grouping.other_sizes) grouping.num_groups *= s;
  for (int64_t s : grouping.selected_sizes) grouping.group_size *= s;
  grouping.dims_text = absl::StrCat("{", absl::StrJoin(dims, ","), "}");
  // Shapes first (concrete).
  if (groups.num_groups() != grouping.num_groups) {
    return ProofResult::Refuted(absl::StrCat(
        "G has ", groups.num_groups(), " groups; grouping along dims ", grouping.dims_text, " has ",
        grouping.num_groups, " groups of ", grouping.group_size));
  }
  std::vector<int64_t> table;  // Explicit groups, row-major (g, p).
  if (!groups.is_iota()) {
    table.reserve(static_cast<size_t>(grouping.num_groups * grouping.group_size));
    for (int64_t g = 0; g < grouping.num_groups; ++g) {
      std::vector<int64_t> members = groups.group(g);
      if (static_cast<int64_t>(members.size()) != grouping.group_size) {
        return ProofResult::Refuted(absl::StrCat(
            "group ", g, " of G has ", members.size(), " devices; grouping along dims ",
            grouping.dims_text, " has groups of ", grouping.group_size));
      }
      table.insert(table.end(), members.begin(), members.end());
    }
  } else if (groups.first_group_size() != grouping.group_size) {
    return ProofResult::Refuted(absl::StrCat("groups of G have ", groups.first_group_size(),
                                             " devices; grouping along dims ", grouping.dims_text,
                                             " has groups of ", grouping.group_size));
  }
  const int64_t entries = grouping.num_groups * grouping.group_size;
  return DecideFact(
      options, entries, absl::StrCat(grouping.num_groups, " groups of ", grouping.group_size),
      "prove groups", [&] { return EnumerateGroups(tiles, grouping, groups, table); },
      [&] { return Z3Groups(tiles, grouping, groups, table, options.timeout_ms); });
}

ProofResult ProvePairs(const HloSharding& from, const HloSharding& to,
                       const SourceTargetPairs& pairs, int64_t timeout_ms) {
  return ProvePairs(from, to, pairs, FactOptions{timeout_ms, Procedure::kAuto});
}

ProofResult ProvePairs(const HloSharding& from, const HloSharding& to,
                       const SourceTargetPairs& pairs, const FactOptions& options) {
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
  const PairsFacts facts(from, to, pairs);
  return DecideFact(
      options, std::max<int64_t>(tt.num_elements(), static_cast<int64_t>(pairs.size())),
      absl::StrCat(tt.num_elements(), " tile positions and ", pairs.size(), " pairs"),
      "prove pairs", [&] { return facts.Enumerate(); },
      [&] { return facts.Z3(options.timeout_ms); });
}

}  // namespace spmdcheck::smt
