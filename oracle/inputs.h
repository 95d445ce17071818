// Input generation for runs and equivalence checks: deterministic from a seed, small integer
// values by default (so float sums are exact in any order), out-of-range values for operands
// that feed indices.
#ifndef SPMDCHECK_ORACLE_INPUTS_H_
#define SPMDCHECK_ORACLE_INPUTS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "ir/hlo_module.h"
#include "ir/literal.h"

namespace spmdcheck::oracle {

enum class InputStyle {
  kSmallIntegers,  // Values in [-3, 3] ([0, 6] unsigned): exact float arithmetic in any order.
  kReals,          // Uniform reals in [-1, 1] for float types (`--float`).
};

// What the values of parameter i should look like.
struct ParameterProfile {
  // The parameter (transitively) feeds a gather/scatter/dynamic-slice/dynamic-update-slice
  // index: its values cover [-2, index_bound + 2] so that XLA's clamping decides answers.
  bool feeds_index = false;
  int64_t index_bound = 0;
};

// Profiles of the entry parameters of `module`.
std::vector<ParameterProfile> ProfileParameters(const HloModule& module);

// A random literal of `shape` (tuples recursively).
Literal RandomLiteral(const Shape& shape, const ParameterProfile& profile, InputStyle style,
                      std::mt19937_64& rng);

// The global inputs of trial `trial` of a check seeded with `seed`: one RandomLiteral per entry
// parameter of `global`, drawn in order from TrialSeed(seed, trial). CheckEquivalence draws the
// same, so other executors (XLA) can run a trial on identical inputs.
std::vector<Literal> TrialInputs(const HloModule& global, uint64_t seed, int64_t trial,
                                 InputStyle style);

// Independent, well-mixed seed for trial `trial` of a run seeded with `seed`.
uint64_t TrialSeed(uint64_t seed, int64_t trial);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_INPUTS_H_
