// libFuzzer target: sharding and replica-group parsers, round trip through ToString().
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "fuzz/targets/fuzz_common.h"
#include "ir/hlo_parser.h"

using spmdcheck::fuzz_targets::FuzzFail;
using spmdcheck::fuzz_targets::kMaxFuzzInputBytes;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxFuzzInputBytes) return 0;
  absl::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto sharding = spmdcheck::ParseSharding(text); sharding.ok()) {
    const std::string printed = sharding->ToString();
    auto reparsed = spmdcheck::ParseSharding(printed);
    if (!reparsed.ok()) {
      FuzzFail("printed sharding does not parse", printed,
               std::string(reparsed.status().message()));
    }
    const std::string reprinted = reparsed->ToString();
    if (reprinted != printed) FuzzFail("sharding round trip differs", printed, reprinted);
  }

  if (auto groups = spmdcheck::ParseReplicaGroups(text); groups.ok()) {
    const std::string printed = groups->ToString();
    auto reparsed = spmdcheck::ParseReplicaGroups(printed);
    if (!reparsed.ok()) {
      FuzzFail("printed replica groups do not parse", printed,
               std::string(reparsed.status().message()));
    }
    const std::string reprinted = reparsed->ToString();
    if (reprinted != printed) FuzzFail("replica groups round trip differs", printed, reprinted);
  }
  return 0;
}
