// libFuzzer target: HLO module / fragment parser, verifier and printer round trip.
// The first byte selects the mode (odd: fragment); the rest is the text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "fuzz/targets/fuzz_common.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"

using spmdcheck::fuzz_targets::FuzzFail;
using spmdcheck::fuzz_targets::kMaxFuzzInputBytes;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > kMaxFuzzInputBytes) return 0;
  spmdcheck::ParseOptions options;
  options.path = "fuzz";
  options.fragment = (data[0] & 1) != 0;
  absl::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  auto parsed = spmdcheck::ParseHloModule(text, options);
  if (!parsed.ok()) return 0;
  const spmdcheck::HloModule& module = *parsed->module;
  // Printing is promised to round-trip for valid modules; an invalid one (e.g. two parameters
  // with one number) may print a signature that re-parses differently.
  for (const spmdcheck::VerifierDiagnostic& d : spmdcheck::VerifyModuleDiagnostics(module)) {
    if (!d.is_warning) return 0;
  }

  const std::string printed = spmdcheck::PrintModule(module);
  auto reparsed = spmdcheck::ParseHloModule(printed, options);
  if (!reparsed.ok()) {
    FuzzFail("printed module does not parse", printed, std::string(reparsed.status().message()));
  }
  const std::string reprinted = spmdcheck::PrintModule(*reparsed->module);
  if (reprinted != printed) FuzzFail("print(parse(print(m))) != print(m)", printed, reprinted);
  return 0;
}
