#include "smt/chain_prover.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "ir/sharding_algebra.h"
#include "smt/chain_encoding.h"
#include "smt/chain_model.h"
#include "smt/tile_encoding.h"
#include "smt/z3_guard.h"

namespace spmdcheck::smt {
namespace {

std::string IndexText(absl::Span<const int64_t> index) {
  return absl::StrCat("[", absl::StrJoin(index, ","), "]");
}

// One end of a chain in one module, checked and modelled.
struct PreparedChain {
  const HloInstruction* end = nullptr;
  std::optional<ChainModel> model;
};

absl::StatusOr<PreparedChain> Prepare(const HloModule& module, const ChainProofOptions& options,
                                      int64_t num_partitions) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("module has no entry");
  if (module.replica_count() > 1) {
    return absl::UnimplementedError(
        absl::StrCat("replica_count=", module.replica_count(), " (only 1 is covered)"));
  }
  const HloComputation& entry = *module.entry();
  PreparedChain chain;
  chain.end = options.to.empty() ? entry.root() : entry.FindInstruction(options.to);
  if (chain.end == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no instruction named '", options.to, "' in ", entry.name()));
  }
  const HloInstruction* cut = nullptr;
  if (!options.from.empty()) {
    cut = entry.FindInstruction(options.from);
    if (cut == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("no instruction named '", options.from, "' in ", entry.name()));
    }
  }
  absl::StatusOr<ChainModel> model = ChainModel::Build(chain.end, cut, num_partitions);
  if (!model.ok()) return model.status();
  if (cut != nullptr) {
    bool reached = false;
    for (const ChainInput& input : model->inputs()) reached |= input.instruction == cut;
    if (!reached) {
      return absl::InvalidArgumentError(
          absl::StrCat(chain.end->name(), " does not depend on ", options.from));
    }
  }
  const InstructionFacts& facts = model->facts(chain.end);
  if (facts.domain != ValueDomain::kData || !facts.depends_on_input) {
    return absl::InvalidArgumentError(
        absl::StrCat(chain.end->name(), " does not depend on any chain input"));
  }
  chain.model = *std::move(model);
  return chain;
}

std::string StatusText(const absl::Status& status) { return std::string(status.message()); }

z3::params SolverParams(z3::context& ctx, int64_t timeout_ms) {
  z3::params params(ctx);
  params.set("timeout", Z3TimeoutParam(timeout_ms));
  return params;
}

// Preprocessing (equation solving, constant propagation, div/mod purification) before the SMT
// core: on chain formulas (uninterpreted inputs indexed by div/mod of the local index) this is
// several times faster than the default incremental solver.
z3::solver MakeSolver(z3::context& ctx, int64_t timeout_ms) {
  z3::tactic tactic = z3::tactic(ctx, "simplify") & z3::tactic(ctx, "propagate-values") &
                      z3::tactic(ctx, "solve-eqs") & z3::tactic(ctx, "elim-uncnstr") &
                      z3::tactic(ctx, "purify-arith") & z3::tactic(ctx, "smt");
  z3::solver solver = tactic.mk_solver();
  solver.set(SolverParams(ctx, timeout_ms));
  return solver;
}

std::string UnknownReason(z3::solver& solver) { return Z3UnknownReason(solver.reason_unknown()); }

// Smallest values of `vars`, in order (lexicographically), among the solver's models; each
// variable is fixed once minimised. Stops early when Z3 stops answering (the solver then still
// has a model of the last sat check).
void Minimize(z3::solver& solver, const std::vector<z3::expr>& vars) {
  z3::model model = solver.get_model();
  for (const z3::expr& v : vars) {
    int64_t hi = ModelInt(model, v);
    int64_t lo = 0;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      solver.push();
      solver.add(v <= solver.ctx().int_val(mid));
      const z3::check_result r = solver.check();
      if (r == z3::sat) {
        model = solver.get_model();
        hi = ModelInt(model, v);
        solver.pop();
      } else {
        solver.pop();
        if (r != z3::unsat) break;
        lo = mid + 1;
      }
    }
    solver.add(v == solver.ctx().int_val(hi));
  }
}

struct Position {
  int64_t device = 0;
  std::vector<int64_t> index;
};

// Up to this many devices, the search runs one query per device (the device is a constant in
// each, so device tables fold away and only the index stays symbolic); above it, one query with
// a symbolic device.
constexpr int64_t kMaxDevicesSplit = 4096;

// A builder of "something is wrong at (device, index)"; nullopt when the encoding ran out of its
// budget (kMaxEvaluationsPerQuery).
using ViolationBuilder = std::function<std::optional<z3::expr>(const z3::expr& device,
                                                               const std::vector<z3::expr>& index)>;

// Instruction evaluations allowed in one query's formula (nested all-reduces over big groups
// multiply); beyond it the answer is `unknown`, a resource limit.
constexpr int64_t kMaxEvaluationsPerQuery = 2'000'000;

std::string BudgetReason() {
  return absl::StrCat("resource limit: the chain's formula needs more than ",
                      kMaxEvaluationsPerQuery,
                      " instruction evaluations (nested collectives over large groups)");
}

struct Search {
  z3::check_result result = z3::unknown;
  Position at;  // When sat: the smallest device, then the smallest index.
  std::string reason;
};

// Looks for a device in [0, p) and a local index of `local` dims where `violation` holds.
Search FindViolation(z3::context& ctx, int64_t p, absl::Span<const int64_t> local,
                     int64_t timeout_ms, const ViolationBuilder& violation) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto remaining_ms = [&]() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
        .count();
  };
  z3::solver solver = MakeSolver(ctx, timeout_ms);
  std::vector<z3::expr> index;
  for (size_t k = 0; k < local.size(); ++k) {
    index.push_back(ctx.int_const(absl::StrCat("i", k).c_str()));
    solver.add(index.back() >= 0 && index.back() < ctx.int_val(local[k]));
  }
  Search search;
  auto finish = [&](const std::vector<z3::expr>& vars) {
    Minimize(solver, vars);
    if (solver.check() != z3::sat) {
      search.result = z3::unknown;
      search.reason = "Z3 found a counterexample but lost it while minimising";
      return;
    }
    z3::model model = solver.get_model();
    search.result = z3::sat;
    for (const z3::expr& e : index) search.at.index.push_back(ModelInt(model, e));
  };
  auto unknown = [&](z3::solver& s) {
    search.result = z3::unknown;
    search.reason = UnknownReason(s);
  };
  if (p <= kMaxDevicesSplit) {
    for (int64_t d = 0; d < p; ++d) {
      if (remaining_ms() <= 0) {
        search.reason = absl::StrCat("timed out after ", timeout_ms, " ms at device ", d, " of ", p,
                                     " (every device before it holds)");
        return search;
      }
      // A fresh solver per device (the device is a constant in its formula).
      z3::solver device_solver = MakeSolver(ctx, remaining_ms());
      for (size_t k = 0; k < local.size(); ++k) {
        device_solver.add(index[k] >= 0 && index[k] < ctx.int_val(local[k]));
      }
      std::optional<z3::expr> wrong = violation(ctx.int_val(d), index);
      if (!wrong.has_value()) {
        search.reason = BudgetReason();
        return search;
      }
      device_solver.add(wrong->simplify());
      switch (device_solver.check()) {
        case z3::unsat:
          continue;
        case z3::unknown:
          unknown(device_solver);
          return search;
        case z3::sat:
          search.at.device = d;
          solver.set(SolverParams(ctx, std::max<int64_t>(remaining_ms(), 1000)));
          solver.add(*wrong);
          if (solver.check() != z3::sat) {
            unknown(solver);
            return search;
          }
          finish(index);
          return search;
      }
    }
    search.result = z3::unsat;
    return search;
  }
  z3::expr device = ctx.int_const("device");
  solver.add(device >= 0 && device < ctx.int_val(p));
  std::optional<z3::expr> wrong = violation(device, index);
  if (!wrong.has_value()) {
    search.reason = BudgetReason();
    return search;
  }
  solver.add(*wrong);
  switch (solver.check()) {
    case z3::unsat:
      search.result = z3::unsat;
      return search;
    case z3::unknown:
      unknown(solver);
      return search;
    case z3::sat:
      break;
  }
  std::vector<z3::expr> vars = {device};
  vars.insert(vars.end(), index.begin(), index.end());
  finish(vars);
  if (search.result == z3::sat) search.at.device = ModelInt(solver.get_model(), device);
  return search;
}

// The verdict of a search that found no counterexample (proved, or unknown with the reason);
// nullopt when it found one.
std::optional<ProofResult> WithoutCounterexample(const Search& search) {
  if (search.result == z3::unsat) return ProofResult::Proved();
  if (search.result == z3::unknown) return ProofResult::Unknown(search.reason);
  return std::nullopt;
}

// Checks `to`'s sharding and returns its layout and the global dims positions map into.
absl::StatusOr<ShardingLayout> EndLayout(const PreparedChain& chain, int64_t num_partitions) {
  const std::optional<HloSharding>& sharding = chain.end->sharding();
  if (!sharding.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(chain.end->name(), " has no sharding= annotation to check against"));
  }
  absl::StatusOr<ShardingLayout> layout =
      MakeShardingLayout(*sharding, num_partitions, chain.end->shape().rank());
  if (!layout.ok()) {
    return base::WithContext(layout.status(), chain.end->name());
  }
  return layout;
}

std::vector<std::string> InputNames(const std::vector<std::string>& keys,
                                    absl::Span<const ChainModel* const> models) {
  std::vector<std::string> names;
  for (const std::string& key : keys) {
    std::string name = key;
    for (const ChainModel* model : models) {
      bool found = false;
      for (const ChainInput& input : model->inputs()) {
        if (input.key == key) {
          name = input.instruction->name();
          found = true;
          break;
        }
      }
      if (found) break;
    }
    names.push_back(name);
  }
  return names;
}

std::vector<int64_t> ConcreteIds(ConcreteDomain& dom, const ChainModel& model) {
  std::vector<int64_t> ids;
  for (const ChainInput& input : model.inputs()) ids.push_back(dom.InputId(input.key));
  return ids;
}

std::vector<int64_t> SymbolicIds(Z3Domain& dom, const ChainModel& model) {
  std::vector<int64_t> ids;
  for (const ChainInput& input : model.inputs()) {
    ids.push_back(dom.InputId(input.key, static_cast<int64_t>(input.global_dims.size())));
  }
  return ids;
}

// What ProveChain compares a position with: the expected source, or nullopt when the position
// is outside the global value (padding).
struct ExpectedSource {
  std::vector<int64_t> global;  // Index into `to`'s global value.
  std::optional<SourceSum> source;
};

ExpectedSource ConcreteExpected(ChainEvaluator<ConcreteDomain>& eval, ConcreteDomain& dom,
                                const ChainModel& model, const std::vector<int64_t>& ids,
                                const ShardingLayout& layout, const HloInstruction* end,
                                const Position& at) {
  const GlobalMeaning& meaning = model.facts(end).meaning;
  ExpectedSource expected;
  expected.global = eval.GlobalIndex(layout, end->shape().dimensions(), at.device, at.index);
  for (size_t k = 0; k < expected.global.size(); ++k) {
    if (expected.global[k] >= meaning.global_dims[k]) return expected;
  }
  expected.source =
      dom.Input(ids[meaning.input], eval.InputIndexOf(meaning.steps, expected.global));
  return expected;
}

// A chain that does not compute a guessed global meaning is not known to be wrong.
ProofResult GuessedUnknown(const GlobalMeaning& meaning, const std::string& counterexample) {
  return ProofResult::Unknown(absl::StrCat(
      "the chain does not compute ", meaning.text, " (", counterexample,
      "), but that global meaning is a guess: ", meaning.guess,
      "; check the chain against its global program with `spmdcheck equiv`, or against another "
      "chain with `prove equiv-chain`"));
}

}  // namespace

absl::StatusOr<std::string> DescribeChain(const HloModule& module,
                                          const ChainProofOptions& options) {
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.num_partitions();
  absl::StatusOr<PreparedChain> chain = Prepare(module, options, p);
  if (!chain.ok()) return chain.status();
  const GlobalMeaning& meaning = chain->model->facts(chain->end).meaning;
  if (!meaning.error.empty()) return absl::UnimplementedError(meaning.error);
  if (!meaning.opaque_since.empty()) {
    return absl::UnimplementedError(absl::StrCat("opaque reshape ", meaning.opaque_since));
  }
  const ChainInput& input = chain->model->inputs()[meaning.input];
  return absl::StrCat(chain->end->name(), DimsText(meaning.global_dims), " = ", meaning.text,
                      " with ", input.instruction->name(), DimsText(input.global_dims),
                      meaning.guess.empty() ? "" : absl::StrCat(" (guessed: ", meaning.guess, ")"));
}

namespace {

ProofResult ProveChainUnguarded(const HloModule& module, const ChainProofOptions& options) {
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.num_partitions();
  absl::StatusOr<PreparedChain> prepared = Prepare(module, options, p);
  if (!prepared.ok()) return ProofResult::Unknown(StatusText(prepared.status()));
  const PreparedChain& chain = *prepared;
  const ChainModel& model = *chain.model;
  const GlobalMeaning& meaning = model.facts(chain.end).meaning;
  if (!meaning.error.empty()) {
    return ProofResult::Unknown(
        absl::StrCat("cannot tell which global value the chain computes: ", meaning.error));
  }
  if (!meaning.opaque_since.empty()) {
    return ProofResult::Unknown(
        absl::StrCat("cannot tell which global value the chain computes: the local reshape ",
                     meaning.opaque_since,
                     " merges or splits sharded dims and no sharding= annotation follows"));
  }
  absl::StatusOr<ShardingLayout> layout = EndLayout(chain, p);
  if (!layout.ok()) return ProofResult::Unknown(StatusText(layout.status()));
  const std::vector<int64_t>& local = chain.end->shape().dimensions();
  if (meaning.global_dims.size() != local.size()) {
    return ProofResult::Unknown(
        absl::StrCat("global rank of ", chain.end->name(), " differs from its local rank"));
  }

  z3::context ctx;
  Z3Domain dom(ctx);
  const std::vector<int64_t> ids = SymbolicIds(dom, model);
  ChainEvaluator<Z3Domain> eval(model, dom, ids);
  const TileIndex end_counts = TileCounts(chain.end->sharding().value_or(HloSharding::Replicate()),
                                          chain.end->shape().rank());
  const ViolationBuilder violation = [&](const z3::expr& device,
                                         const std::vector<z3::expr>& index) {
    eval.set_budget(kMaxEvaluationsPerQuery);
    const std::vector<z3::expr> global = eval.GlobalIndex(*layout, local, device, index);
    z3::expr_vector wrong(ctx);
    for (size_t k = 0; k < global.size(); ++k) {
      wrong.push_back(global[k] < ctx.int_val(meaning.global_dims[k]));
      if (options.only_certain_elements && end_counts[k] > 1) {
        wrong.push_back(global[k] <= ctx.int_val((local[k] - 1) * end_counts[k]));
      }
    }
    z3::expr expected = dom.Input(ids[meaning.input], eval.InputIndexOf(meaning.steps, global));
    wrong.push_back(eval.EvalData(chain.end, device, index) != expected);
    if (eval.exhausted()) return std::optional<z3::expr>();
    return std::optional<z3::expr>(z3::mk_and(wrong));
  };
  const Search search = FindViolation(ctx, p, local, options.timeout_ms, violation);
  if (std::optional<ProofResult> settled = WithoutCounterexample(search)) return *settled;
  const Position& at = search.at;

  // Reproduce it concretely: the chain's source at that position vs the expected one.
  ConcreteDomain cdom;
  const std::vector<int64_t> cids = ConcreteIds(cdom, model);
  ChainEvaluator<ConcreteDomain> ceval(model, cdom, cids);
  const ExpectedSource want = ConcreteExpected(ceval, cdom, model, cids, *layout, chain.end, at);
  const SourceSum got = ceval.EvalData(chain.end, at.device, at.index);
  if (!want.source.has_value() || got == *want.source) {
    return ProofResult::Unknown(
        absl::StrCat("Z3 reported device ", at.device, " local index ", IndexText(at.index),
                     " but the concrete evaluation of the chain there is correct (encoding bug?)"));
  }
  const ChainModel* models[] = {&model};
  const std::vector<std::string> names = InputNames(cdom.input_keys(), models);
  const std::string counterexample =
      absl::StrCat("device ", at.device, ", local index ", IndexText(at.index), " of ",
                   chain.end->name(), " (global ", IndexText(want.global), "): expected ",
                   SourceSumText(*want.source, names), ", got ", SourceSumText(got, names));
  if (!meaning.guess.empty()) return GuessedUnknown(meaning, counterexample);
  return ProofResult::Refuted(counterexample);
}

}  // namespace

namespace {

ProofResult ProveEquivChainUnguarded(const HloModule& a, const HloModule& b,
                                     const ChainProofOptions& options) {
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : a.num_partitions();
  if (options.num_partitions <= 0 && a.num_partitions() != b.num_partitions()) {
    return ProofResult::Unknown(absl::StrCat("the modules have different num_partitions (",
                                             a.num_partitions(), " vs ", b.num_partitions(), ")"));
  }
  absl::StatusOr<PreparedChain> chain_a = Prepare(a, options, p);
  if (!chain_a.ok()) {
    return ProofResult::Unknown(absl::StrCat(options.a_name, ": ", StatusText(chain_a.status())));
  }
  absl::StatusOr<PreparedChain> chain_b = Prepare(b, options, p);
  if (!chain_b.ok()) {
    return ProofResult::Unknown(absl::StrCat(options.b_name, ": ", StatusText(chain_b.status())));
  }
  const ChainModel& model_a = *chain_a->model;
  const ChainModel& model_b = *chain_b->model;
  const std::vector<int64_t>& local = chain_a->end->shape().dimensions();
  if (chain_b->end->shape().dimensions() != local) {
    return ProofResult::Unknown(absl::StrCat(
        "the chains end in different local shapes: ", chain_a->end->shape().ToString(false), " vs ",
        chain_b->end->shape().ToString(false)));
  }
  for (const ChainInput& x : model_a.inputs()) {
    for (const ChainInput& y : model_b.inputs()) {
      if (x.key != y.key) continue;
      if (x.local_dims != y.local_dims || !(x.sharding == y.sharding)) {
        return ProofResult::Unknown(
            absl::StrCat(x.key, " differs: ", x.instruction->shape().ToString(false), " ",
                         x.sharding.ToString(false), " vs ", y.instruction->shape().ToString(false),
                         " ", y.sharding.ToString(false)));
      }
    }
  }

  z3::context ctx;
  Z3Domain dom(ctx);
  ChainEvaluator<Z3Domain> eval_a(model_a, dom, SymbolicIds(dom, model_a));
  ChainEvaluator<Z3Domain> eval_b(model_b, dom, SymbolicIds(dom, model_b));
  const ViolationBuilder violation = [&](const z3::expr& device,
                                         const std::vector<z3::expr>& index) {
    eval_a.set_budget(kMaxEvaluationsPerQuery / 2);
    eval_b.set_budget(kMaxEvaluationsPerQuery / 2);
    z3::expr wrong = eval_a.EvalData(chain_a->end, device, index) !=
                     eval_b.EvalData(chain_b->end, device, index);
    if (eval_a.exhausted() || eval_b.exhausted()) return std::optional<z3::expr>();
    return std::optional<z3::expr>(wrong);
  };
  const Search search = FindViolation(ctx, p, local, options.timeout_ms, violation);
  if (std::optional<ProofResult> settled = WithoutCounterexample(search)) return *settled;
  const Position& at = search.at;

  ConcreteDomain cdom;
  ChainEvaluator<ConcreteDomain> ceval_a(model_a, cdom, ConcreteIds(cdom, model_a));
  ChainEvaluator<ConcreteDomain> ceval_b(model_b, cdom, ConcreteIds(cdom, model_b));
  const SourceSum got_a = ceval_a.EvalData(chain_a->end, at.device, at.index);
  const SourceSum got_b = ceval_b.EvalData(chain_b->end, at.device, at.index);
  if (got_a == got_b) {
    return ProofResult::Unknown(
        absl::StrCat("Z3 reported device ", at.device, " local index ", IndexText(at.index),
                     " but the concrete evaluations of both chains agree there (encoding bug?)"));
  }
  const ChainModel* models[] = {&model_a, &model_b};
  const std::vector<std::string> names = InputNames(cdom.input_keys(), models);
  std::string global;
  if (chain_a->end->sharding().has_value()) {
    absl::StatusOr<ShardingLayout> layout = EndLayout(*chain_a, p);
    if (layout.ok()) {
      global = absl::StrCat(" (global ",
                            IndexText(ceval_a.GlobalIndex(*layout, local, at.device, at.index)),
                            " under ", options.a_name, "'s sharding)");
    }
  }
  return ProofResult::Refuted(absl::StrCat(
      "device ", at.device, ", local index ", IndexText(at.index), " of ", chain_a->end->name(),
      " / ", chain_b->end->name(), global, ": ", options.a_name, " gives ",
      SourceSumText(got_a, names), ", ", options.b_name, " gives ", SourceSumText(got_b, names)));
}

}  // namespace

namespace {

ProofResult ProveReplicasAgreeUnguarded(const HloModule& module, const ChainProofOptions& options) {
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.num_partitions();
  absl::StatusOr<PreparedChain> chain = Prepare(module, options, p);
  if (!chain.ok()) return ProofResult::Unknown(StatusText(chain.status()));
  const HloInstruction* end = chain->end;
  if (!end->sharding().has_value()) {
    return ProofResult::Unknown(absl::StrCat(end->name(), " has no sharding= annotation"));
  }
  const HloSharding& sharding = *end->sharding();
  if (!IsPlannable(sharding) || !end->shape().IsArray()) {
    return ProofResult::Unknown(
        absl::StrCat(end->name(), ": only tiled and replicated array shardings are covered"));
  }
  const int64_t rank = end->shape().rank();
  // Each device's representative: the first device holding the same tile.
  std::vector<int64_t> representative(p);
  std::map<std::vector<int64_t>, int64_t> first;
  bool replicated = false;
  for (int64_t d = 0; d < p; ++d) {
    const TileIndex place = PlaceOf(sharding, rank, d).data_index;
    auto [it, inserted] = first.emplace(std::vector<int64_t>(place.begin(), place.end()), d);
    representative[d] = it->second;
    replicated |= !inserted;
  }
  if (!replicated) return ProofResult::Proved();
  const TileIndex counts = TileCounts(sharding, rank);
  std::vector<std::vector<int64_t>> tile_index(rank, std::vector<int64_t>(p, 0));
  for (int64_t d = 0; d < p; ++d) {
    const TileIndex place = PlaceOf(sharding, rank, d).data_index;
    for (int64_t k = 0; k < rank; ++k) tile_index[k][d] = place[k];
  }
  const ChainModel& model = *chain->model;
  z3::context ctx;
  Z3Domain dom(ctx);
  ChainEvaluator<Z3Domain> eval(model, dom, SymbolicIds(dom, model));
  const std::vector<int64_t>& local = end->shape().dimensions();
  const ViolationBuilder violation = [&](const z3::expr& device,
                                         const std::vector<z3::expr>& index) {
    eval.set_budget(kMaxEvaluationsPerQuery);
    const z3::expr partner = TableLookup(ctx, device, representative);
    z3::expr_vector wrong(ctx);
    wrong.push_back(eval.EvalData(end, device, index) != eval.EvalData(end, partner, index));
    if (options.only_certain_elements) {
      for (int64_t k = 0; k < rank; ++k) {
        if (counts[k] <= 1) continue;
        const z3::expr global =
            TableLookup(ctx, device, tile_index[k]) * ctx.int_val(local[k]) + index[k];
        wrong.push_back(global <= ctx.int_val((local[k] - 1) * counts[k]));
      }
    }
    if (eval.exhausted()) return std::optional<z3::expr>();
    return std::optional<z3::expr>(z3::mk_and(wrong));
  };
  const Search search = FindViolation(ctx, p, local, options.timeout_ms, violation);
  if (std::optional<ProofResult> settled = WithoutCounterexample(search)) return *settled;
  const Position& at = search.at;
  ConcreteDomain cdom;
  ChainEvaluator<ConcreteDomain> ceval(model, cdom, ConcreteIds(cdom, model));
  const int64_t other = representative[at.device];
  const SourceSum got = ceval.EvalData(end, at.device, at.index);
  const SourceSum want = ceval.EvalData(end, other, at.index);
  if (got == want) {
    return ProofResult::Unknown(absl::StrCat("Z3 reported devices ", at.device, " and ", other,
                                             " at local index ", IndexText(at.index),
                                             " but they agree there (encoding bug?)"));
  }
  const ChainModel* models[] = {&model};
  const std::vector<std::string> names = InputNames(cdom.input_keys(), models);
  return ProofResult::Refuted(
      absl::StrCat("devices ", other, " and ", at.device, " hold the same tile of ", end->name(),
                   " under ", sharding.ToString(false), " but differ at local index ",
                   IndexText(at.index), ": device ", other, " has ", SourceSumText(want, names),
                   ", device ", at.device, " has ", SourceSumText(got, names)));
}

}  // namespace

ProofResult ProveChain(const HloModule& module, const ChainProofOptions& options) {
  return GuardZ3("prove chain", [&] { return ProveChainUnguarded(module, options); });
}

ProofResult ProveEquivChain(const HloModule& a, const HloModule& b,
                            const ChainProofOptions& options) {
  return GuardZ3("prove equiv-chain", [&] { return ProveEquivChainUnguarded(a, b, options); });
}

ProofResult ProveReplicasAgree(const HloModule& module, const ChainProofOptions& options) {
  return GuardZ3("the replica check", [&] { return ProveReplicasAgreeUnguarded(module, options); });
}

ChainEnumeration EnumerateChain(const HloModule& module, const ChainProofOptions& options) {
  ChainEnumeration out;
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.num_partitions();
  absl::StatusOr<PreparedChain> prepared = Prepare(module, options, p);
  if (!prepared.ok()) {
    out.result = ProofResult::Unknown(StatusText(prepared.status()));
    return out;
  }
  const ChainModel& model = *prepared->model;
  const GlobalMeaning& meaning = model.facts(prepared->end).meaning;
  if (!meaning.error.empty() || !meaning.opaque_since.empty()) {
    out.result = ProofResult::Unknown(meaning.error.empty()
                                          ? absl::StrCat("opaque reshape ", meaning.opaque_since)
                                          : meaning.error);
    return out;
  }
  absl::StatusOr<ShardingLayout> layout = EndLayout(*prepared, p);
  if (!layout.ok()) {
    out.result = ProofResult::Unknown(StatusText(layout.status()));
    return out;
  }
  ConcreteDomain dom;
  const std::vector<int64_t> ids = ConcreteIds(dom, model);
  ChainEvaluator<ConcreteDomain> eval(model, dom, ids);
  const std::vector<int64_t>& local = prepared->end->shape().dimensions();
  int64_t count = 1;
  for (int64_t d : local) count *= d;
  const ChainModel* models[] = {&model};
  for (int64_t device = 0; device < p; ++device) {
    for (int64_t linear = 0; linear < count; ++linear) {
      Position at{device, MultiIndex(local, linear)};
      const ExpectedSource want =
          ConcreteExpected(eval, dom, model, ids, *layout, prepared->end, at);
      if (!want.source.has_value()) continue;
      ++out.positions_checked;
      const SourceSum got = eval.EvalData(prepared->end, device, at.index);
      if (got != *want.source) {
        const std::vector<std::string> names = InputNames(dom.input_keys(), models);
        const std::string counterexample =
            absl::StrCat("device ", device, ", local index ", IndexText(at.index), " of ",
                         prepared->end->name(), " (global ", IndexText(want.global), "): expected ",
                         SourceSumText(*want.source, names), ", got ", SourceSumText(got, names));
        out.result = meaning.guess.empty() ? ProofResult::Refuted(counterexample)
                                           : GuessedUnknown(meaning, counterexample);
        return out;
      }
    }
  }
  out.result = ProofResult::Proved();
  return out;
}

}  // namespace spmdcheck::smt
