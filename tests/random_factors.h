// RapidCheck helper shared by the device-algebra property tests: a random factorisation of n.
#ifndef SPMDCHECK_TESTS_RANDOM_FACTORS_H_
#define SPMDCHECK_TESTS_RANDOM_FACTORS_H_

#include <rapidcheck.h>

#include <cstdint>
#include <vector>

namespace spmdcheck::test_support {

// Factors >= 2 whose product is n (in random order and grouping); {1} for n == 1.
inline std::vector<int64_t> RandomFactors(int64_t n) {
  std::vector<int64_t> factors;
  while (n > 1) {
    std::vector<int64_t> divisors;
    for (int64_t d = 2; d <= n; ++d) {
      if (n % d == 0) divisors.push_back(d);
    }
    const int64_t d = *rc::gen::elementOf(divisors);
    factors.push_back(d);
    n /= d;
  }
  if (factors.empty()) factors.push_back(1);
  return factors;
}

}  // namespace spmdcheck::test_support

#endif  // SPMDCHECK_TESTS_RANDOM_FACTORS_H_
