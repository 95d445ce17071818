// `spmdcheck fmt FILE [--fragment] [--no-metadata] [-o OUT]`: prints canonical HLO text.
#include <fstream>

#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kFmtHelp[] = R"(usage: spmdcheck fmt FILE [--fragment] [--no-metadata] [-o OUT]

Prints the module as canonical HLO text: shardings in XLA's iota form whenever the device array
is an iota, attributes in a fixed order, unknown attributes kept verbatim.
  --fragment     the file holds pasted statements (see `spmdcheck parse --fragment`)
  --no-metadata  leave out metadata= attributes
  -o OUT         write to OUT instead of standard output
)";

}  // namespace

int RunFmt(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Args> args = Args::Parse(argv, {"-o"}, {"--fragment", "--no-metadata", "--help"});
  if (!args.ok()) return BadInput(err, "fmt", args.status().message());
  if (args->Has("--help")) {
    out << kFmtHelp;
    return kExitHolds;
  }
  if (args->positional().size() != 1) {
    err << kFmtHelp;
    return kExitBadInput;
  }
  const std::string& path = args->positional()[0];
  absl::StatusOr<std::string> text = ReadModuleText(path);
  if (!text.ok()) return BadInput(err, "fmt", text.status().message());
  ParseOptions options;
  options.path = path;
  options.fragment = args->Has("--fragment");
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(*text, options);
  if (!parsed.ok()) return BadInput(err, "fmt", parsed.status().message());
  for (const std::string& warning : parsed->warnings) err << warning << "\n";
  PrintOptions print_options;
  print_options.print_metadata = !args->Has("--no-metadata");
  const std::string printed = PrintModule(*parsed->module, print_options);
  if (std::optional<std::string> output = args->Get("-o")) {
    std::ofstream file(*output);
    if (!file) return BadInput(err, "fmt", *output + ": error: cannot write");
    file << printed;
  } else {
    out << printed;
  }
  return kExitHolds;
}

}  // namespace spmdcheck::cli
