// Reading, parsing and verifying a module for a subcommand, with messages in CLI form.
#ifndef SPMDCHECK_TOOLS_MODULE_LOADING_H_
#define SPMDCHECK_TOOLS_MODULE_LOADING_H_

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"

namespace spmdcheck::cli {

// Reads, parses and verifies `path`; prints warnings to `err`. Errors carry FILE:LINE:COL.
absl::StatusOr<std::unique_ptr<HloModule>> LoadVerifiedModule(const std::string& path,
                                                              std::ostream& err);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_MODULE_LOADING_H_
