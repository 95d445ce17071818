#include "oracle/op_registry.h"

namespace spmdcheck::oracle {

const OpRegistry& OpRegistry::Default() {
  static const OpRegistry* const kRegistry = [] {
    auto* registry = new OpRegistry();
    RegisterElementwiseOps(*registry);
    RegisterShapeOps(*registry);
    RegisterReductionOps(*registry);
    RegisterContractionOps(*registry);
    RegisterIndexingOps(*registry);
    RegisterSortOps(*registry);
    RegisterMiscOps(*registry);
    RegisterCollectiveOps(*registry);
    return registry;
  }();
  return *kRegistry;
}

}  // namespace spmdcheck::oracle
