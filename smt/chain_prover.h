// Proofs about chains of instructions of partitioned modules: that a chain moves data exactly as
// the `sharding=` annotations at its two ends require (ProveChain), and that two chains give
// every device the same values (ProveEquivChain). Both hold for every device, every local index
// and every input value (inputs are uninterpreted functions); see smt/chain_encoding.h.
#ifndef SPMDCHECK_SMT_CHAIN_PROVER_H_
#define SPMDCHECK_SMT_CHAIN_PROVER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"
#include "smt/device_algebra.h"
#include "smt/proof_result.h"

namespace spmdcheck::smt {

struct ChainProofOptions {
  std::string from;
  std::string to;
  int64_t num_partitions = 0;
  int64_t timeout_ms = kDefaultTimeoutMs;
  // ProveChain and ProveReplicasAgree: look for violations only at elements of `to` that are real
  // whatever the global size is (a dim of local size L split T ways is at least (L-1)*T+1 long;
  // beyond that the element may be padding, whose value is arbitrary). Without it, the global
  // size is taken to be an even split of the annotation, as the chain model assumes.
  bool only_certain_elements = false;
  // ProveEquivChain: how its messages name the two chains.
  std::string a_name = "A";
  std::string b_name = "B";
};

// The instructions between `from` (default: entry parameters) and `to` (default: root) move data
// exactly as the sharding= annotations of from and to require, for every device and index.
//
// What "require" means: the global value at `to` is the global input (the array `from`'s
// annotation lays out) transformed by the global meaning of the chain's local ops — transposes,
// reshapes and broadcasts act on the global arrays, everything else (collectives, copies, masks,
// dynamic slices) only moves data between devices; where an annotation gives a smaller global
// shape than the chain so far (a reshape dropping a size-1 local dim that is sharded globally, or
// padding), the global value is the leading slice. The proof is that every device holds, at every
// local index its `to` annotation maps into that global value, exactly the input element the
// global meaning names. Refutations name the device, local index, expected and actual source.
// Where a step of that meaning is a guess (GlobalMeaning::guess), a chain that does not compute
// it is Unknown (with the position), not Refuted. See docs/prove.md.
ProofResult ProveChain(const HloModule& module, const ChainProofOptions& options);

// Two chains give every device the same values (same parameters, same root shape).
ProofResult ProveEquivChain(const HloModule& a, const HloModule& b,
                            const ChainProofOptions& options);

// Devices that hold the same tile of `to` under its sharding= (replicas) hold the same values, for
// every input: a necessary condition for the chain to implement its end's sharding that needs no
// global meaning. Refutations name two such devices, a local index and both values. As elsewhere in
// the chain model the end's tiling is taken to be even (no padding that replicas could fill
// differently).
ProofResult ProveReplicasAgree(const HloModule& module, const ChainProofOptions& options);

// Brute-force baseline for ProveChain: evaluates every device and every local index of `to`
// concretely. Same verdicts as ProveChain for chains it covers, at a cost proportional to
// devices x elements.
struct ChainEnumeration {
  ProofResult result;
  int64_t positions_checked = 0;
};
ChainEnumeration EnumerateChain(const HloModule& module, const ChainProofOptions& options);

// What ProveChain checks `to` against, e.g. `copy.428 = reshape(transpose(reshape(slice(param))))`
// with the global shapes; an error when the chain has no such meaning.
absl::StatusOr<std::string> DescribeChain(const HloModule& module,
                                          const ChainProofOptions& options);

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_CHAIN_PROVER_H_
