// Whole-file reads and writes with errors as values: every error names the path and says why
// (the system's reason when there is one), with a code that says what kind of failure it is
// (NotFound, PermissionDenied, FailedPrecondition for a directory, ResourceExhausted for a file
// over the size limit, Unavailable for other I/O failures).
#ifndef SPMDCHECK_BASE_FILE_H_
#define SPMDCHECK_BASE_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace spmdcheck::base {

// Files over this many bytes are not read whole (1 GiB; the HLO parser's input limit too).
inline constexpr size_t kMaxFileBytes = size_t{1} << 30;

// The whole file at `path`: "PATH: no such file" (NotFound), "PATH: is a directory"
// (FailedPrecondition), "PATH: the file is N bytes; files over M bytes are not read"
// (ResourceExhausted), "PATH: cannot read: REASON" otherwise.
absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes = kMaxFileBytes);

// The last `max_bytes` bytes of the file at `path` (all of it when shorter): for logs that may
// have run away. Errors as ReadFile.
absl::StatusOr<std::string> ReadFileTail(const std::string& path, size_t max_bytes);

// Creates or truncates the file at `path` and writes `text` ("PATH: cannot write: REASON").
// Its directory must exist.
absl::Status WriteFile(const std::string& path, absl::string_view text);

// Replaces the file at `path` by `text` all at once: written to `PATH.tmp-PID`, synced, renamed
// over `path`, the directory synced. Readers see the old content or the new, never a part; a
// failed write leaves no temporary file. Creates the directories on the way.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view text);

// Appends `text` to the file at `path`, creating it.
absl::Status AppendFile(const std::string& path, absl::string_view text);

}  // namespace spmdcheck::base

#endif  // SPMDCHECK_BASE_FILE_H_
