// The version matrix: a finding of one of XLA's partitioners tried on other jaxlibs. The jaxlib
// under test is the project's .venv (the newest jax on PyPI, pinned); older pins stay as
// .venv-jaxV environments (workers/xla/requirements-jaxV.txt, made by scripts/common.sh), or
// are named with --xla-venv A,B,... / SPMDCHECK_XLA_MATRIX.
#ifndef SPMDCHECK_CHECK_VERSION_MATRIX_H_
#define SPMDCHECK_CHECK_VERSION_MATRIX_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "check/check_pipeline.h"
#include "ir/hlo_module.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::check {

// One other jaxlib's answer.
struct VersionCheck {
  std::string venv;      // Its python.
  std::string versions;  // "jax 0.10.2, jaxlib 0.10.2" once known.
  // "reproduces", "does not reproduce (holds)", "fails differently: SIG", "unknown: <why>".
  std::string verdict;
};

// The pythons of the matrix when none are named: $SPMDCHECK_XLA_MATRIX (comma-separated
// virtual environments), else every .venv-jax*/ of the checkout that has a python, newest
// first; none when SPMDCHECK_XLA_VENV or SPMDCHECK_XLA_PYTHON picks another jaxlib (that
// jaxlib is then the one under test, and the matrix is what --xla-venv names).
std::vector<std::string> DefaultMatrixPythons();

// Tries `spec`'s finding with `signature` on `module` under each python's jaxlib. Partitioners
// are made once per (python, spec) and kept in `cache` for later findings.
class VersionMatrix {
 public:
  VersionMatrix(std::vector<std::string> pythons, target::TargetOptions options)
      : pythons_(std::move(pythons)), options_(std::move(options)) {}
  bool empty() const { return pythons_.empty(); }
  const std::vector<std::string>& pythons() const { return pythons_; }
  std::vector<VersionCheck> Try(const std::string& spec, const HloModule& module,
                                const std::string& signature, const CheckOptions& check);

 private:
  std::vector<std::string> pythons_;
  target::TargetOptions options_;
  std::map<std::string, std::unique_ptr<target::PartitionerUnderTest>> cache_;
};

}  // namespace spmdcheck::check

#endif  // SPMDCHECK_CHECK_VERSION_MATRIX_H_
