// libFuzzer target: literal (`SHAPE VALUES`) and shape parsers, round trip through ToString().
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

  if (auto literal = spmdcheck::ParseLiteral(text, spmdcheck::Shape()); literal.ok()) {
    const std::string printed = literal->ToString();
    auto reparsed = spmdcheck::ParseLiteral(printed, spmdcheck::Shape());
    if (!reparsed.ok()) {
      FuzzFail("printed literal does not parse", printed, std::string(reparsed.status().message()));
    }
    const std::string reprinted = reparsed->ToString();
    if (reprinted != printed) FuzzFail("literal round trip differs", printed, reprinted);
  }

  if (auto shape = spmdcheck::ParseShape(text); shape.ok()) {
    const std::string printed = shape->ToString();
    auto reparsed = spmdcheck::ParseShape(printed);
    if (!reparsed.ok()) {
      FuzzFail("printed shape does not parse", printed, std::string(reparsed.status().message()));
    }
    const std::string reprinted = reparsed->ToString();
    if (reprinted != printed) FuzzFail("shape round trip differs", printed, reprinted);
    if (!(*reparsed == *shape)) FuzzFail("reparsed shape != shape", printed, reprinted);
  }
  return 0;
}
