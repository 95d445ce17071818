#include "check/version_matrix.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "check/signature.h"
#include "ir/data_dir.h"
#include "target/xla_partitioner.h"
#include "target/xla_worker.h"

namespace spmdcheck::check {

using target::CapabilitiesOfSpec;
using target::MakePartitioner;
using target::PartitionerCapabilities;
using target::PartitionerUnderTest;
using target::TargetOptions;
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.substr(0, 160);
}

}  // namespace

std::vector<std::string> DefaultMatrixPythons() {
  std::vector<std::string> pythons;
  if (std::string matrix = Env("SPMDCHECK_XLA_MATRIX"); !matrix.empty()) {
    for (absl::string_view venv : absl::StrSplit(matrix, ',', absl::SkipEmpty())) {
      pythons.push_back(absl::StrCat(venv, "/bin/python"));
    }
    return pythons;
  }
  if (!Env("SPMDCHECK_XLA_VENV").empty() || !Env("SPMDCHECK_XLA_PYTHON").empty()) return pythons;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(SpmdcheckDataDir(), error)) {
    const std::string name = entry.path().filename().string();
    const std::filesystem::path python = entry.path() / "bin" / "python";
    if (name.rfind(".venv-jax", 0) == 0 && std::filesystem::exists(python, error)) {
      pythons.push_back(python.string());
    }
  }
  // Newest first (".venv-jax0.10.2" after ".venv-jax0.11.0"): by the version's numbers.
  auto numbers = [](const std::string& python) {
    std::vector<int> out;
    const std::string dir = std::filesystem::path(python).parent_path().parent_path().filename();
    for (absl::string_view piece : absl::StrSplit(dir.substr(9), '.')) {
      out.push_back(std::atoi(std::string(piece).c_str()));
    }
    return out;
  };
  std::sort(pythons.begin(), pythons.end(),
            [&](const std::string& a, const std::string& b) { return numbers(a) > numbers(b); });
  return pythons;
}

std::vector<VersionCheck> VersionMatrix::Try(const std::string& spec, const HloModule& module,
                                             const std::string& signature,
                                             const CheckOptions& check) {
  std::vector<VersionCheck> out;
  absl::StatusOr<PartitionerCapabilities> capabilities = CapabilitiesOfSpec(spec);
  if (!capabilities.ok() || !capabilities->xla_findings) return out;
  for (const std::string& python : pythons_) {
    VersionCheck v;
    v.venv = python;
    std::unique_ptr<PartitionerUnderTest>& other = cache_[absl::StrCat(python, "\n", spec)];
    if (other == nullptr) {
      TargetOptions t = options_;
      t.python = python;
      absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> made = MakePartitioner(spec, t);
      if (!made.ok()) {
        v.verdict = absl::StrCat("unknown: ", made.status().message());
        out.push_back(v);
        continue;
      }
      other = *std::move(made);
    }
    absl::StatusOr<CheckOutcome> o = CheckPartitioning(module, *other, check);
    v.versions = o.ok() ? o->self_report.version : "";
    if (!o.ok()) {
      v.verdict = absl::StrCat("unknown: ", o.status().message());
    } else {
      const FailureSignature s = SignatureOf(spec, *o, module);
      if (s.text == signature) {
        v.verdict = "reproduces";
      } else if (o->status == CheckStatus::kHolds) {
        v.verdict = "does not reproduce (holds)";
      } else if (!s.text.empty()) {
        v.verdict = absl::StrCat("fails differently: ", s.text);
      } else {
        v.verdict = absl::StrCat("unknown: ", FirstLine(o->message));
      }
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace spmdcheck::check
