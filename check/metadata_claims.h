// What XLA's partitioned module claims to hold, read from its metadata, for the oracle's
// localisation of the first divergence (oracle::EquivOptions::claims).
#ifndef SPMDCHECK_CHECK_METADATA_CLAIMS_H_
#define SPMDCHECK_CHECK_METADATA_CLAIMS_H_

#include <map>
#include <string>

#include "ir/hlo_module.h"
#include "oracle/equivalence.h"

namespace spmdcheck::check {

// Claims from XLA's metadata: the last partitioned instruction made from global instruction X
// (same op_name) whose shape is the tile shape of the sharding XLA propagated to X holds X's
// value under that sharding. Any opcode: XLA's handler for X often ends in another op (the
// all-reduce of a reduce's or a dot's partial results, the dynamic-slice that cuts a padded
// window), and the op of X's own opcode before it holds a partial value, which used to be named
// as the first divergence. A collective-permute that leaves a partition without data (a halo
// exchange) holds a neighbour's edge and claims nothing. Other instructions named after X with
// the whole shape of X, else of an operand of X, claim tentatively to hold all of it
// (EquivOptions::HeldValue::tentative).
// `judged` is the module XLA received, `propagated` the same after sharding propagation (none:
// no claims), `partitioned` XLA's partitioned module.
std::map<std::string, oracle::EquivOptions::HeldValue> ClaimsFromMetadata(
    const HloModule& judged, const HloModule* propagated, const HloModule& partitioned);

}  // namespace spmdcheck::check

#endif  // SPMDCHECK_CHECK_METADATA_CLAIMS_H_
