// Programs at the level JAX users write them for Shardy: StableHLO with the sdy dialect, in the
// form `jax.jit(f).lower(...).as_text()` prints, compiled by XLA the way jax.jit compiles it
// (target/xla_partitioner.h). Each program has a mesh with named axes and draws on the sdy
// constructs JAX programs carry: argument and result shardings with open (`?`) and closed dims,
// priorities (`p0`), sub-axes (`"x":(1)2`) and uneven dims; sharding constraints
// (with_sharding_constraint), explicit reshards (jax.sharding.reshard, which jax 0.12 lowers to
// a constraint with closed dims: XLA's import refuses the sdy.reshard op), sharding groups
// (shard_alike), unreduced axes after a dot (P(..., unreduced=...)), and manual computations
// (shard_map, over all or some axes) with collectives inside (psum, all_gather, ppermute).
// Every program is meaningful whatever Shardy chooses: values leave a manual computation only
// as the concatenation of per-device values the out_shardings name, so the global result is
// defined.
#ifndef SPMDCHECK_FUZZ_SDY_PROGRAM_GEN_H_
#define SPMDCHECK_FUZZ_SDY_PROGRAM_GEN_H_

#include <cstdint>
#include <set>
#include <string>

namespace spmdcheck::fuzz {

struct SdyProgramOptions {
  int64_t max_devices = 8;  // 2, 4 or 8 devices (at most this many).
  int64_t max_ops = 7;      // Ops besides parameters and the return.
};

struct SdyProgram {
  std::string text;  // The module, as jax prints it (without locations).
  int64_t num_devices = 0;
  // The sdy constructs the program uses ("open-dim", "priority", "sub-axis", "uneven",
  // "constraint", "reshard", "sharding-group", "unreduced", "manual", "manual-partial",
  // "all-reduce", "all-gather", "collective-permute", "unsharded-result", ...).
  std::set<std::string> constructs;
};

// The program for `seed` (the same seed gives the same text).
SdyProgram GenerateSdyProgram(uint64_t seed, const SdyProgramOptions& options = {});

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_SDY_PROGRAM_GEN_H_
