// Reading, parsing and verifying a module for a subcommand, with messages in CLI form.
#ifndef SPMDCHECK_TOOLS_MODULE_LOADING_H_
#define SPMDCHECK_TOOLS_MODULE_LOADING_H_

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_module.h"

namespace spmdcheck::cli {

// Reads, parses and verifies `path`; prints warnings to `err`. Errors carry FILE:LINE:COL.
// StableHLO/MLIR text (what `jax.jit(f).lower(...).as_text()` prints, with mhlo.sharding or
// Shardy's sdy.sharding) is converted to HLO through jaxlib in the XLA worker first; without
// jax that is a FailedPrecondition error naming what is needed. Shardy's round-trip form is
// rewritten into GSPMD's (ir/sdy_sharding_round_trip.h).
// The module's text as HLO: the file as it is, or, for MLIR, jaxlib's conversion with Shardy's
// round-trip form rewritten as GSPMD's (for the subcommands that read text: parse, fmt, lint).
absl::StatusOr<std::string> ReadModuleText(const std::string& path);

// True when `text` is MLIR (a `module @name ... {` or `func.func` with a function), not HLO.
bool LooksLikeMlir(absl::string_view text);

absl::StatusOr<std::unique_ptr<HloModule>> LoadVerifiedModule(const std::string& path,
                                                              std::ostream& err);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_MODULE_LOADING_H_
