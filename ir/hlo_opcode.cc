#include "ir/hlo_opcode.h"

#include <array>

#include "absl/container/flat_hash_map.h"

namespace spmdcheck {
namespace {

struct OpcodeInfo {
  absl::string_view spelling;
  int arity;
};

constexpr OpcodeInfo kOpcodeInfo[] = {
#define SPMDCHECK_OPCODE_INFO(enum_name, spelling, arity) {spelling, arity},
    SPMDCHECK_HLO_OPCODES(SPMDCHECK_OPCODE_INFO)
#undef SPMDCHECK_OPCODE_INFO
};

}  // namespace

absl::string_view HloOpcodeString(HloOpcode opcode) {
  return kOpcodeInfo[static_cast<size_t>(opcode)].spelling;
}

std::optional<HloOpcode> StringToHloOpcode(absl::string_view spelling) {
  static const auto* const kBySpelling = [] {
    auto* map = new absl::flat_hash_map<absl::string_view, HloOpcode>();
    for (size_t i = 0; i < std::size(kOpcodeInfo); ++i) {
      map->emplace(kOpcodeInfo[i].spelling, static_cast<HloOpcode>(i));
    }
    return map;
  }();
  auto it = kBySpelling->find(spelling);
  if (it == kBySpelling->end()) return std::nullopt;
  return it->second;
}

int ElementwiseArity(HloOpcode opcode) { return kOpcodeInfo[static_cast<size_t>(opcode)].arity; }

bool IsCollective(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kRaggedAllToAll:
      return true;
    default:
      return false;
  }
}

}  // namespace spmdcheck
