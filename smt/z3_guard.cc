#include "smt/z3_guard.h"

#include <z3++.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace spmdcheck::smt {
namespace {

constexpr int64_t kDefaultMemoryMb = 8192;
// What a fresh context and its first solver need (measured: a few MB), with room to spare.
constexpr int64_t kContextHeadroomMb = 32;

int64_t InitialLimit() {
  if (const char* env = std::getenv("SPMDCHECK_Z3_MEMORY_MB"); env != nullptr) {
    int64_t mb = 0;
    if (absl::SimpleAtoi(env, &mb) && mb >= 0) return mb;
  }
  return kDefaultMemoryMb;
}

std::atomic<int64_t>& Limit() {
  static std::atomic<int64_t> limit(InitialLimit());
  return limit;
}

std::mutex& ApplyMutex() {
  static std::mutex mu;
  return mu;
}

int64_t& Applied() {
  static int64_t applied = -1;
  return applied;
}

}  // namespace

void SetZ3MemoryLimitMb(int64_t megabytes) { Limit().store(megabytes < 0 ? 0 : megabytes); }

int64_t Z3MemoryLimitMb() { return Limit().load(); }

bool ApplyZ3Limits(std::string* reason) {
  const int64_t want = Limit().load();
  {
    std::lock_guard<std::mutex> lock(ApplyMutex());
    if (Applied() != want) {
      z3::set_param("memory_max_size", std::to_string(want).c_str());
      Applied() = want;
    }
  }
  if (want == 0) return true;
  const int64_t used_mb = static_cast<int64_t>(Z3_get_estimated_alloc_size() >> 20);
  if (used_mb + kContextHeadroomMb <= want) return true;
  *reason = absl::StrCat("Z3 is at its memory cap (", used_mb, " of ", want,
                         " MB in use, $SPMDCHECK_Z3_MEMORY_MB); not starting another proof");
  return false;
}

std::string Z3FailureReason(absl::string_view what, absl::string_view message) {
  if (message.find("memory") != absl::string_view::npos) {
    return absl::StrCat("Z3 ran out of memory in ", what, " (", message, "; the cap is ",
                        Z3MemoryLimitMb(), " MB, $SPMDCHECK_Z3_MEMORY_MB)");
  }
  return absl::StrCat("Z3 failed in ", what, ": ", message);
}

std::string Z3UnknownReason(absl::string_view why) {
  if (why.find("timeout") != absl::string_view::npos ||
      why.find("canceled") != absl::string_view::npos) {
    return absl::StrCat("Z3 timed out (", why, ")");
  }
  if (why.find("memory") != absl::string_view::npos) {
    return absl::StrCat("Z3 hit its memory cap of ", Z3MemoryLimitMb(), " MB (", why, ")");
  }
  if (why.find("resource") != absl::string_view::npos) {
    return absl::StrCat("Z3 hit a resource limit (", why, ")");
  }
  return absl::StrCat("Z3 gave up (", why, ")");
}

}  // namespace spmdcheck::smt
