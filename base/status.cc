#include "base/status.h"

#include "absl/strings/str_cat.h"

namespace spmdcheck::base {

std::string SourceLocation(absl::string_view path, int64_t line, int64_t column) {
  return absl::StrCat(path, ":", line, ":", column);
}

absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

}  // namespace spmdcheck::base
