// Moving values between the global view and per-device shards: the local shard a device holds
// of a global array under a sharding (padding filled with poison), and the comparison of a
// device's local value against its shard of a global value.
#ifndef SPMDCHECK_ORACLE_SHARDED_VALUES_H_
#define SPMDCHECK_ORACLE_SHARDED_VALUES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/literal.h"
#include "ir/sharding.h"

namespace spmdcheck::oracle {

// The value written into padding of input shards: NaN for floats, a recognisable integer
// (0x5A5A... truncated to the width) for integers, true for pred. A partitioned program that
// reads padding without masking it turns this into a wrong answer.
Literal PoisonLike(const Shape& shape);

// Device `device`'s local value of `global` under `sharding` (tuple shardings per leaf): its tile
// padded to ceil(dim / tiles), padding = poison. Replicated: the whole value. Maximal: the whole
// value on the owner, poison elsewhere. Manual: Unimplemented (no global view).
enum class PaddingFill { kPoison, kZero };
absl::StatusOr<Literal> ShardOf(const Literal& global, const HloSharding& sharding, int64_t device,
                                PaddingFill padding = PaddingFill::kPoison);

// How floats are compared.
struct Tolerance {
  // Relative and absolute error allowed for floating-point elements; 0 means exact.
  double relative = 0;
  double absolute = 0;
  // The comparisons below then scale `absolute` by the largest finite magnitude in the expected
  // array (at least 1): rounding errors follow the size of the summed terms, not of a cancelled
  // sum. For f32/f64 only: 64 ulps of a narrow float are already a coarse bound.
  bool absolute_scales_with_magnitude = false;
};

// The first element where `local` (device `device`'s value) differs from its shard of `global`
// under `sharding`; padding positions are not compared. nullopt when they agree. An error when
// the local shape does not match the shard shape.
struct ElementMismatch {
  std::vector<int64_t> global_index;
  std::vector<int64_t> local_index;
  std::string expected;
  std::string actual;
  std::string leaf;  // Tuple leaf path such as "{1}" (empty for arrays).
};
absl::StatusOr<std::optional<ElementMismatch>> CompareShard(const Literal& local,
                                                            const Literal& global,
                                                            const HloSharding& sharding,
                                                            int64_t device,
                                                            const Tolerance& tolerance);

// Device-by-device comparison of two local values of the same shape.
std::optional<ElementMismatch> CompareLiterals(const Literal& expected, const Literal& actual,
                                               const Tolerance& tolerance);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_SHARDED_VALUES_H_
