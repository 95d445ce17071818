#include "ir/data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace spmdcheck {

std::string SpmdcheckDataDir() {
  if (const char* env = std::getenv("SPMDCHECK_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return ".";
  const std::filesystem::path dir =
      std::filesystem::canonical(exe.parent_path().parent_path() / "share" / "spmdcheck", error);
  return error ? "." : dir.string();
}

}  // namespace spmdcheck
