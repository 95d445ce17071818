// `spmdcheck fmt FILE [--fragment] [--no-metadata] [-o OUT]`: prints canonical HLO text.
#include <optional>
#include <string>
#include <vector>

#include "base/file.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] = "usage: spmdcheck fmt FILE [--fragment] [--no-metadata] [-o OUT]\n";

constexpr char kDescription[] =
    R"(Prints the module as canonical HLO text: shardings in XLA's iota form whenever the device array
is an iota, attributes in a fixed order, unknown attributes kept verbatim.)";

}  // namespace

int RunFmt(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("fmt", kUsage, kDescription, "Exit codes: 0 printed, 2 bad input.");
  CLI::App& app = command.app();
  std::string path;
  app.add_option("FILE", path, "the module (HLO text, or StableHLO/MLIR)")->required();
  bool fragment = false, no_metadata = false;
  std::optional<std::string> output;
  app.add_flag("--fragment", fragment,
               "the file holds pasted statements (see `spmdcheck parse --fragment`)");
  app.add_flag("--no-metadata", no_metadata, "leave out metadata= attributes");
  AddOptional(app, "-o", output, "write to OUT instead of standard output")->type_name("OUT");
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  absl::StatusOr<std::string> text = ReadModuleText(path);
  if (!text.ok()) return BadInput(err, "fmt", text.status().message());
  ParseOptions options;
  options.path = path;
  options.fragment = fragment;
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(*text, options);
  if (!parsed.ok()) return BadInput(err, "fmt", parsed.status().message());
  for (const std::string& warning : parsed->warnings) err << warning << "\n";
  PrintOptions print_options;
  print_options.print_metadata = !no_metadata;
  const std::string printed = PrintModule(*parsed->module, print_options);
  if (output.has_value()) {
    if (absl::Status written = base::WriteFile(*output, printed); !written.ok()) {
      return BadInput(err, "fmt", written.message());
    }
  } else {
    out << printed;
  }
  return kExitHolds;
}

}  // namespace spmdcheck::cli
