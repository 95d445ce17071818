// `spmdcheck report DIR [-o FILE]`: the issue an XLA engineer would want for a finding folder
// of `spmdcheck fuzz` (see docs/report.md).
#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file.h"
#include "nlohmann/json.hpp"
#include "target/partitioner_under_test.h"
#include "tools/cli.h"

namespace spmdcheck::cli {
namespace {

constexpr char kUsage[] = "usage: spmdcheck report DIR [-o FILE]\n";

constexpr char kDescription[] =
    R"(Writes the issue an XLA engineer would want for a finding folder of `spmdcheck fuzz` (DIR holds
finding.json, module.hlo and, when written, partitioned.hlo and repro.py), as Markdown: a title,
the jax/jaxlib versions where it reproduces and where it does not, the smallest repro (repro.py,
public jax API; else the HLO module), expected vs actual, the partitioned HLO around the first
wrong instruction, the pass that broke it when known, and how it was found. To stdout, or FILE.)";

std::optional<std::string> ReadText(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path.string());
  if (!text.ok()) return std::nullopt;
  return *std::move(text);
}

// `name` at the start of "name (line N) should hold ...".
std::string DivergingName(const std::string& divergence) {
  return divergence.substr(0, divergence.find(' '));
}

// The lines of `text` around the instruction `name` (its definition +- `context` lines), each
// prefixed, the instruction itself marked with `>`; empty when it is not there.
std::string Around(const std::string& text, const std::string& name, int context) {
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  const std::regex defines("^\\s*(ROOT\\s+)?" + std::regex_replace(name, std::regex("[.]"), "\\.") +
                           "\\s*=");
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!std::regex_search(lines[i], defines)) continue;
    const size_t from = i > static_cast<size_t>(context) ? i - context : 0;
    const size_t to = std::min(lines.size(), i + context + 1);
    std::string out;
    for (size_t k = from; k < to; ++k) {
      absl::StrAppend(&out, k == i ? "> " : "  ", lines[k], "\n");
    }
    return out;
  }
  return "";
}

// The module text without the `// ...` header the campaign writes above it.
std::string WithoutHeader(const std::string& module) {
  std::string out;
  bool body = false;
  for (absl::string_view line : absl::StrSplit(module, '\n')) {
    if (!body && absl::StartsWith(line, "//")) continue;
    body = true;
    absl::StrAppend(&out, line, "\n");
  }
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

std::string KindOf(const std::string& signature) {
  for (const char* kind :
       {"single-device-miscompile", "miscompile", "wrong-result", "crash", "xla-rejects-valid",
        "timeout", "oracle-only", "oracle-disagrees", "reads-input-padding", "wasteful"}) {
    if (absl::StrContains(signature, absl::StrCat(kind, "."))) return kind;
    if (absl::EndsWith(signature, kind)) return kind;
  }
  return "finding";
}

std::string Title(const nlohmann::json& f) {
  const std::string signature = f.value("signature", "");
  const std::string partitioner = f.value("partitioner", "");
  const std::string who = target::PartitionerTitle(partitioner);
  const std::string op = signature.substr(signature.rfind('.') + 1);
  const std::string kind = KindOf(signature);
  if (kind == "single-device-miscompile") {
    // Not the partitioner's: XLA's single-device compile computes what neither its sharded
    // executable nor spmdcheck's interpreter does.
    return absl::StrCat("[XLA:CPU] wrong results on one device, the sharded executable is right (",
                        op, ")");
  }
  std::string what = kind == "miscompile"          ? "wrong results"
                     : kind == "crash"             ? "a crash"
                     : kind == "xla-rejects-valid" ? "a valid module rejected"
                     : kind == "wrong-result"      ? "wrong results"
                     : kind == "timeout"           ? "a compile that does not finish"
                                                   : kind;
  return absl::StrCat("[SPMD] ", who, ": ", what, " (", op, ")");
}

}  // namespace

int RunReport(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Command command("report", kUsage, kDescription,
                  "Exit codes: 0 written, 2 bad input (no finding there).");
  std::string dir_text;
  std::optional<std::string> output;
  command.app().add_option("DIR", dir_text, "a finding folder of `spmdcheck fuzz`")->required();
  AddOptional(command.app(), "-o", output, "write the Markdown to FILE")->type_name("FILE");
  if (std::optional<int> done = command.Parse(argv, out, err)) return *done;
  const std::filesystem::path dir(dir_text);
  std::optional<std::string> json_text = ReadText(dir / "finding.json");
  if (!json_text.has_value()) {
    return BadInput(err, "report",
                    absl::StrCat(dir.string(),
                                 " has no finding.json: give a finding folder of "
                                 "`spmdcheck fuzz`"));
  }
  const nlohmann::json f = nlohmann::json::parse(*json_text, nullptr, false);
  if (!f.is_object() || !f.contains("signature")) {
    return BadInput(err, "report", absl::StrCat((dir / "finding.json").string(), ": malformed"));
  }
  const std::optional<std::string> module = ReadText(dir / "module.hlo");
  const std::optional<std::string> mlir = ReadText(dir / "module.mlir");
  const std::optional<std::string> repro = ReadText(dir / "repro.py");
  const std::optional<std::string> partitioned = ReadText(dir / "partitioned.hlo");

  std::ostringstream md;
  md << "# " << Title(f) << "\n\n";
  const std::string version = f.value("partitioner_version", "");
  md << "**Signature**: `" << f.value("signature", "") << "`"
     << (f.value("bug_claim", true) ? "" : " (to investigate: not a bug claim)") << "  \n";
  md << "**Reproduces on**: " << (version.empty() ? f.value("partitioner", "") : version)
     << " (found there)";
  if (f.contains("other_versions")) {
    for (const nlohmann::json& v : f["other_versions"]) {
      md << "; " << v.value("versions", v.value("venv", "")) << ": " << v.value("verdict", "");
    }
  }
  if (!f.value("other_versions_note", "").empty()) {
    md << "; other versions " << f.value("other_versions_note", "");
  }
  md << "\n\n";

  md << "## What happens\n\n" << f.value("message", "") << "\n\n";
  if (repro.has_value()) {
    md << "## Reproduce (public jax API: `python repro.py` exits 1 while the bug is there)\n\n"
       << "```python\n"
       << absl::StripTrailingAsciiWhitespace(*repro) << "\n```\n\n";
  }
  if (mlir.has_value()) {
    md << "## The program (StableHLO as jax lowers it; `spmdcheck check module.mlir`)\n\n"
       << "```mlir\n"
       << absl::StripTrailingAsciiWhitespace(*mlir) << "\n```\n\n";
  } else if (module.has_value()) {
    md << "## The module (HLO" << (repro.has_value() ? ", what repro.py compiles" : "")
       << ")\n\n```\n"
       << WithoutHeader(*module) << "\n```\n\n";
  }
  const std::string divergence = f.value("first_divergence", "");
  if (!divergence.empty()) {
    md << "## The first wrong value\n\n" << divergence << "\n\n";
    const std::string excerpt =
        partitioned.has_value() ? Around(*partitioned, DivergingName(divergence), 6) : "";
    if (!excerpt.empty()) {
      md << "The partitioned module around it (`>`):\n\n```\n" << excerpt << "```\n\n";
    }
  }
  const std::string broken_by = f.value("broken_by_pass", "");
  md << "## Where\n\n"
     << (broken_by.empty()
             ? (divergence.empty()
                    ? std::string("The pass is not known.")
                    : std::string("The module after spmd-partitioning already computes the "
                                  "wrong value (spmdcheck's oracle)."))
             : absl::StrCat("Broken by: ", broken_by))
     << "\n\n";
  md << "## How it was found\n\n"
     << "`" << f.value("campaign", "") << "` (case " << f.value("first_case", int64_t{0})
     << ", case seed " << f.value("case_seed", uint64_t{0}) << "); " << f.value("reduction", "")
     << ".  \n"
     << "Check it again: `" << f.value("reproduce", "") << "`\n";

  if (const std::optional<std::string>& path = output) {
    if (absl::Status written = base::WriteFile(*path, md.str()); !written.ok()) {
      return BadInput(err, "report", written.message());
    }
    out << "wrote " << *path << "\n";
  } else {
    out << md.str();
  }
  return kExitHolds;
}

}  // namespace spmdcheck::cli
