// Realistic partitioner bugs that can be switched on at run time (`--inject-bug NAME`) to measure
// whether the property suite and the fuzz campaign find them. Off by default; a bug is only
// reachable through PartitionOptions::inject_bug naming it exactly.
#ifndef SPMDCHECK_PARTITIONER_INJECTED_BUGS_H_
#define SPMDCHECK_PARTITIONER_INJECTED_BUGS_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace spmdcheck::partitioner {

struct InjectedBug {
  absl::string_view name;
  absl::string_view description;
};

// Every bug that can be injected, in a stable order.
const std::vector<InjectedBug>& InjectedBugs();
bool IsInjectedBug(absl::string_view name);

}  // namespace spmdcheck::partitioner

#endif  // SPMDCHECK_PARTITIONER_INJECTED_BUGS_H_
