// Scale of the device-algebra proofs (issue 6): `prove sharding` and `prove groups` on iota tile
// assignments over 8192 and 65536 devices, timed against brute-force enumeration of every
// device in the same run. Prints seconds and the ratio brute force / proof.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ir/hlo_parser.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "smt/device_algebra.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Every device in [0, n) appears exactly once in the expanded tile assignment.
bool BruteForceSharding(const spmdcheck::HloSharding& sharding, int64_t n) {
  std::vector<int64_t> devices = sharding.tile_assignment().Devices();
  std::vector<char> seen(n, 0);
  for (int64_t d : devices) {
    if (d < 0 || d >= n || seen[d]) return false;
    seen[d] = 1;
  }
  return static_cast<int64_t>(devices.size()) == n;
}

bool BruteForceGroups(const spmdcheck::HloSharding& sharding, const std::vector<int64_t>& dims,
                      const spmdcheck::ReplicaGroups& groups) {
  return sharding.GroupsAlongDims(dims) == groups.groups();
}

void Run(const std::string& sharding_text, int64_t n, const std::vector<int64_t>& dims,
         const std::string& groups_text) {
  spmdcheck::HloSharding sharding = *spmdcheck::ParseSharding(sharding_text);
  spmdcheck::ReplicaGroups groups = *spmdcheck::ParseReplicaGroups(groups_text);
  Clock::time_point t = Clock::now();
  spmdcheck::smt::ProofResult s = spmdcheck::smt::ProveSharding(sharding, n, 60000);
  const double prove_sharding = Seconds(t);
  t = Clock::now();
  const bool brute_sharding = BruteForceSharding(sharding, n);
  const double brute_sharding_s = Seconds(t);
  t = Clock::now();
  spmdcheck::smt::ProofResult g = spmdcheck::smt::ProveGroups(sharding, dims, groups, 60000);
  const double prove_groups = Seconds(t);
  t = Clock::now();
  const bool brute_groups = BruteForceGroups(sharding, dims, groups);
  const double brute_groups_s = Seconds(t);
  std::printf("%6lld devices %s\n", static_cast<long long>(n), sharding_text.c_str());
  std::printf("  prove sharding: %s in %.3fs; brute force %s in %.3fs (ratio brute/proof %.2f)\n",
              spmdcheck::smt::FormatProofResult(s).c_str(), prove_sharding,
              brute_sharding ? "holds" : "fails", brute_sharding_s,
              brute_sharding_s / prove_sharding);
  std::printf("  prove groups:   %s in %.3fs; brute force %s in %.3fs (ratio brute/proof %.2f)\n",
              spmdcheck::smt::FormatProofResult(g).c_str(), prove_groups,
              brute_groups ? "holds" : "fails", brute_groups_s, brute_groups_s / prove_groups);
}

}  // namespace

int main() {
  // 8192 = 8 x 16 x 64 and 65536 = 16 x 64 x 64 devices, transposed iota; groups along dim 1.
  Run("{devices=[8,16,64]<=[64,8,16]T(1,2,0)}", 8192, {1}, "[512,16]<=[64,8,16]T(1,0,2)");
  Run("{devices=[16,64,64]<=[64,16,64]T(1,2,0)}", 65536, {1}, "[1024,64]<=[64,16,64]T(1,0,2)");
  return 0;
}
