// Parser for HLO text as XLA dumps it (`--xla_dump_to`) and as XLA's tests write it, plus
// standalone parsers for shapes, shardings, replica groups and literals.
#ifndef SPMDCHECK_IR_HLO_PARSER_H_
#define SPMDCHECK_IR_HLO_PARSER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "ir/replica_groups.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck {

// Limits that turn hostile input into clear errors.
inline constexpr int kMaxNestingDepth = 64;
inline constexpr size_t kMaxInputBytes = size_t{1} << 30;  // 1 GiB

struct ParseOptions {
  // Shown in messages as `PATH:LINE:COL`.
  std::string path;
  // Accept statements without a surrounding module/computation (a paste from a bug report):
  // undefined operands become parameters, missing called computations become opaque ones.
  bool fragment = false;
  // A first-line comment `// ... num_devices=N ...` sets num_partitions when the header has none.
  bool honor_num_devices_comment = true;
};

struct ParsedModule {
  std::unique_ptr<HloModule> module;
  // Non-fatal findings (fragment mode: opaque computations, inferred parameters, cut-off
  // statements), each formatted as `PATH:LINE:COL: warning: ...`.
  std::vector<std::string> warnings;
};

// Parses a whole module. Errors are InvalidArgument with `PATH:LINE:COL: error: ...`, the
// offending line and a caret.
absl::StatusOr<ParsedModule> ParseHloModule(absl::string_view text,
                                            const ParseOptions& options = {});

// Standalone pieces (errors are `<input>:1:COL: error: ...`).
absl::StatusOr<Shape> ParseShape(absl::string_view text);
absl::StatusOr<HloSharding> ParseSharding(absl::string_view text);
// `{{0,1},{2,3}}` or `[2,4]<=[4,2]T(1,0)`.
absl::StatusOr<ReplicaGroups> ParseReplicaGroups(absl::string_view text);
// A literal in XLA's text form for `shape`, e.g. `{{1, 2}, {3, 4}}`; or `SHAPE VALUES` when
// `shape` is invalid (Shape()).
absl::StatusOr<Literal> ParseLiteral(absl::string_view text, const Shape& shape = Shape());

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_HLO_PARSER_H_
