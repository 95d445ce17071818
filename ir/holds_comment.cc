#include "ir/holds_comment.h"

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "ir/hlo_parser.h"

namespace spmdcheck {

std::optional<HoldsComment> ParseHoldsComment(absl::string_view line) {
  const size_t comment = line.find("//");
  if (comment == absl::string_view::npos) return std::nullopt;
  absl::string_view note = line.substr(comment + 2);
  const size_t at = note.find("holds=");
  if (at == absl::string_view::npos) return std::nullopt;
  absl::string_view rest = note.substr(at + 6);
  HoldsComment result;
  result.holds = std::string(rest.substr(0, rest.find_first_of(" \t,")));
  const size_t sharding_at = rest.find("sharding=");
  if (sharding_at != absl::string_view::npos) {
    absl::string_view value = rest.substr(sharding_at + 9);
    int depth = 0;
    size_t stop = 0;
    for (; stop < value.size(); ++stop) {
      if (value[stop] == '{') ++depth;
      if (value[stop] == '}' && --depth == 0) break;
    }
    if (stop < value.size()) {
      absl::StatusOr<HloSharding> parsed = ParseSharding(value.substr(0, stop + 1));
      if (parsed.ok()) result.sharding = *std::move(parsed);
    }
  }
  return result;
}

}  // namespace spmdcheck
