#include "partitioner/injected_bugs.h"

#include <vector>

namespace spmdcheck::partitioner {

const std::vector<InjectedBug>& InjectedBugs() {
  static const auto* const kBugs = new std::vector<InjectedBug>{
      {"all-gather-group-order",
       "all-gather groups list their members in reverse tile order (wrong concatenation order, "
       "as when groups of a transposed iota are built from the untransposed one)"},
      {"replicate-dim-ignored",
       "last_tile_dim_replicate ignored when forming all-gather groups: replicas join the "
       "group as if they held other tiles"},
      {"all-to-all-wrong-merge",
       "after an all-to-all the received chunks are merged minor instead of major (wrong "
       "interleaving of the moved dim)"},
      {"permute-pairs-inverted",
       "collective-permute source/target pairs inverted (each device sends where it should "
       "receive from)"},
      {"uneven-offset-off-by-one",
       "the per-device offset of an uneven dim is one element short for every tile after the "
       "first (dynamic-slice from a gathered or replicated value)"},
      {"reduce-padding-unmasked",
       "padding of a tiled reduced dim is not masked with the init value before the local reduce"},
      {"dot-padding-unmasked",
       "padding of a tiled contracting dim is not zeroed before the local dot"},
      {"all-reduce-wrong-axis",
       "partial sums of a reduce are all-reduced over the devices of the kept dims instead of "
       "the reduced dims"},
  };
  return *kBugs;
}

bool IsInjectedBug(absl::string_view name) {
  for (const InjectedBug& bug : InjectedBugs()) {
    if (bug.name == name) return true;
  }
  return false;
}

}  // namespace spmdcheck::partitioner
