// Status helpers shared by the rooms: source locations in messages and context added to an
// error on its way up.
#ifndef SPMDCHECK_BASE_STATUS_H_
#define SPMDCHECK_BASE_STATUS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace spmdcheck::base {

// `PATH:LINE:COL`, the location prefix of every message about a place in a text file.
std::string SourceLocation(absl::string_view path, int64_t line, int64_t column);

// `status` with `CONTEXT: ` before its message and the same code (OK stays OK): what the caller
// was doing, around what went wrong (e.g. "cannot write the summary: PATH: cannot write: ...").
absl::Status WithContext(const absl::Status& status, absl::string_view context);

}  // namespace spmdcheck::base

#endif  // SPMDCHECK_BASE_STATUS_H_
