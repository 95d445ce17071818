// `reference`: spmdcheck's own partitioner (partitioner/) behind the seam, with its injectable
// bugs (`reference+bug=NAME`, `--inject-bug NAME`).
#ifndef SPMDCHECK_TARGET_REFERENCE_PARTITIONER_H_
#define SPMDCHECK_TARGET_REFERENCE_PARTITIONER_H_

#include <string>

#include "target/partitioner_under_test.h"

namespace spmdcheck::target {

class ReferencePartitioner : public PartitionerUnderTest {
 public:
  explicit ReferencePartitioner(std::string inject_bug) : inject_bug_(std::move(inject_bug)) {}
  std::string spec() const override { return kDefaultPartitionerSpec; }
  std::string full_spec() const override { return PartitionerSpec{spec(), inject_bug_}.ToString(); }
  static PartitionerCapabilities Capabilities();
  PartitionerCapabilities capabilities() const override { return Capabilities(); }
  absl::StatusOr<PartitionOutput> Partition(const HloModule& global,
                                            int64_t num_partitions) override;

 private:
  std::string inject_bug_;
};

}  // namespace spmdcheck::target

#endif  // SPMDCHECK_TARGET_REFERENCE_PARTITIONER_H_
