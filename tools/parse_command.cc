// `spmdcheck parse FILE|DIR... [--fragment] [--num-partitions N] [--quiet]`: parses and
// verifies HLO modules; directories are searched for *.hlo files. Prints one line per file and,
// for several files, a summary.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "tools/cli.h"
#include "tools/module_loading.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] =
    "usage: spmdcheck parse FILE|DIR... [--fragment] [--num-partitions N] [--quiet]\n";

constexpr char kDescription[] =
    "Parses each HLO module (XLA dump or test text) and runs the verifier; directories are\n"
    "searched for *.hlo files.";

std::vector<std::string> ExpandPaths(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) {
      std::vector<std::string> found;
      for (auto it = std::filesystem::recursive_directory_iterator(input, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file() && it->path().extension() == ".hlo") {
          found.push_back(it->path().string());
        }
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(input);
    }
  }
  return files;
}

}  // namespace

int RunParse(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("parse", kUsage, kDescription,
                  "Exit code: 0 when every file parses and verifies, 2 otherwise.");
  CLI::App& app = command.app();
  std::vector<std::string> inputs;
  app.add_option("FILE|DIR", inputs, "modules, or directories of *.hlo files")->required();
  bool fragment = false, quiet = false;
  int64_t num_partitions = 0;
  app.add_flag("--fragment", fragment,
               "the file holds pasted statements, not a whole module: undefined operands\n"
               "become parameters, missing called computations stay opaque references");
  app.add_option("--num-partitions", num_partitions,
                 "partition count when the module header has none")
      ->type_name("N")
      ->transform(DecimalInt64());
  app.add_flag("--quiet", quiet, "print only errors and the summary");
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  const std::vector<std::string> files = ExpandPaths(inputs);
  int64_t ok = 0, failed = 0, instructions_total = 0;
  for (const std::string& path : files) {
    absl::StatusOr<std::string> text = ReadModuleText(path);
    if (!text.ok()) {
      BadInput(err, "parse", text.status().message());  // Said as any bad input; the run goes on.
      ++failed;
      continue;
    }
    ParseOptions options;
    options.path = path;
    options.fragment = fragment;
    absl::StatusOr<ParsedModule> parsed = ParseHloModule(*text, options);
    if (!parsed.ok()) {
      err << parsed.status().message() << "\n";
      ++failed;
      continue;
    }
    for (const std::string& warning : parsed->warnings) err << warning << "\n";
    HloModule& module = *parsed->module;
    if (num_partitions > 0 && !module.has_num_partitions()) {
      module.set_num_partitions(num_partitions);
    }
    bool has_error = false;
    for (const VerifierDiagnostic& diagnostic : VerifyModuleDiagnostics(module)) {
      err << FormatDiagnostic(module, diagnostic) << "\n";
      has_error |= !diagnostic.is_warning;
    }
    if (has_error) {
      ++failed;
      continue;
    }
    int64_t instructions = 0;
    for (const auto& c : module.computations()) instructions += c->instruction_count();
    instructions_total += instructions;
    ++ok;
    if (!quiet) {
      out << path << ": ok: module " << module.name() << ", " << module.computations().size()
          << " computations, " << instructions
          << " instructions, num_partitions=" << module.num_partitions()
          << ", replica_count=" << module.replica_count() << "\n";
    }
  }
  if (files.size() > 1 || quiet) {
    out << "parsed " << files.size() << " files: " << ok << " ok, " << failed << " failed ("
        << instructions_total << " instructions)\n";
  }
  return failed == 0 ? kExitHolds : kExitBadInput;
}

}  // namespace spmdcheck::cli
