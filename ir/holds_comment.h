// The `// holds=NAME [sharding={...}]` comments of XLA-style dumps after SPMD partitioning (and of
// our seed cases): the global value an instruction of a partitioned program holds, and the
// sharding it holds it under. `// claimed: holds=...` reads the same.
#ifndef SPMDCHECK_IR_HOLDS_COMMENT_H_
#define SPMDCHECK_IR_HOLDS_COMMENT_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "ir/sharding.h"

namespace spmdcheck {

struct HoldsComment {
  std::string holds;
  std::optional<HloSharding> sharding;  // Absent when not written or not parseable.
};

// The holds comment of one source line, or nullopt when the line has none.
std::optional<HoldsComment> ParseHoldsComment(absl::string_view line);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_HOLDS_COMMENT_H_
