// HloInstruction, HloComputation and HloModule: the program graph. A module owns its
// computations, a computation owns its instructions; operands and called computations are
// non-owning pointers into the same module.
#ifndef SPMDCHECK_IR_HLO_MODULE_H_
#define SPMDCHECK_IR_HLO_MODULE_H_

#include "absl/strings/string_view.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ir/hlo_attributes.h"
#include "ir/hlo_opcode.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck {

class HloComputation;
class HloModule;

// Where something was written: 1-based line and column; 0 when unknown.
struct SourceLocation {
  int64_t line = 0;
  int64_t column = 0;
};

// An attribute we keep as text (metadata, backend_config, frontend_attributes, and any
// attribute this tool does not interpret). Printed back verbatim as `name=text`.
struct RawAttribute {
  std::string name;
  std::string text;
};

// Computations an instruction calls, by attribute name (`to_apply`, `condition`, `body`,
// `true_computation`, `false_computation`, `branch_computations`, `calls`, `select`, `scatter`,
// `called_computations`). List-valued roles print as `{%a, %b}`.
struct CalledComputations {
  std::string role;
  std::vector<HloComputation*> computations;
  bool is_list = false;
};

class HloInstruction {
 public:
  HloInstruction(HloOpcode opcode, std::string name, Shape shape)
      : opcode_(opcode), name_(std::move(name)), shape_(std::move(shape)) {}

  HloOpcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }
  void set_shape(Shape shape) { shape_ = std::move(shape); }

  const std::vector<HloInstruction*>& operands() const { return operands_; }
  HloInstruction* operand(int64_t i) const { return operands_[i]; }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  void AppendOperand(HloInstruction* operand) { operands_.push_back(operand); }
  void ReplaceOperand(int64_t i, HloInstruction* operand) { operands_[i] = operand; }

  HloComputation* parent() const { return parent_; }

  int64_t parameter_number() const { return parameter_number_; }
  void set_parameter_number(int64_t n) { parameter_number_ = n; }
  const std::optional<Literal>& literal() const { return literal_; }
  void set_literal(Literal literal) { literal_ = std::move(literal); }

  const std::optional<HloSharding>& sharding() const { return sharding_; }
  void set_sharding(HloSharding sharding) { sharding_ = std::move(sharding); }
  void clear_sharding() { sharding_.reset(); }

  const HloAttributes& attrs() const { return attrs_; }
  HloAttributes& mutable_attrs() { return attrs_; }

  const std::vector<CalledComputations>& called() const { return called_; }
  std::vector<CalledComputations>& mutable_called() { return called_; }
  // The single computation called in `role`, or nullptr.
  HloComputation* called_computation(absl::string_view role) const;
  // All called computations, in attribute order.
  std::vector<HloComputation*> AllCalledComputations() const;

  const std::vector<RawAttribute>& raw_attributes() const { return raw_attributes_; }
  std::vector<RawAttribute>& mutable_raw_attributes() { return raw_attributes_; }
  const RawAttribute* FindRawAttribute(absl::string_view name) const;

  const SourceLocation& location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }

 private:
  friend class HloComputation;
  HloOpcode opcode_;
  std::string name_;
  Shape shape_;
  std::vector<HloInstruction*> operands_;
  HloComputation* parent_ = nullptr;
  int64_t parameter_number_ = -1;
  std::optional<Literal> literal_;
  std::optional<HloSharding> sharding_;
  HloAttributes attrs_;
  std::vector<CalledComputations> called_;
  std::vector<RawAttribute> raw_attributes_;
  SourceLocation location_;
};

class HloComputation {
 public:
  explicit HloComputation(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  HloModule* parent() const { return parent_; }

  // Takes ownership; the name must be unique in this computation (checked by the caller).
  HloInstruction* AddInstruction(std::unique_ptr<HloInstruction> instruction);
  const std::vector<std::unique_ptr<HloInstruction>>& instructions() const {
    return instructions_;
  }
  int64_t instruction_count() const { return static_cast<int64_t>(instructions_.size()); }
  HloInstruction* FindInstruction(absl::string_view name) const;
  // Removes every instruction after the first `count` (used to undo a half-parsed statement).
  void TruncateInstructions(int64_t count);

  HloInstruction* root() const { return root_; }
  void set_root(HloInstruction* root) { root_ = root; }
  // parameter(i) instructions, indexed by i (nullptr for gaps).
  std::vector<HloInstruction*> parameters() const;

  // A computation referenced by a pasted fragment but not present in it: only its name is known.
  bool is_opaque() const { return opaque_; }
  void set_opaque(bool opaque) { opaque_ = opaque; }
  const std::string& execution_thread() const { return execution_thread_; }
  void set_execution_thread(std::string thread) { execution_thread_ = std::move(thread); }
  const SourceLocation& location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }

  // Instructions in an order where every operand comes before its users (the text order when
  // it already is one). Empty when there is a cycle.
  std::vector<HloInstruction*> PostOrder() const;

 private:
  friend class HloModule;
  std::string name_;
  HloModule* parent_ = nullptr;
  std::vector<std::unique_ptr<HloInstruction>> instructions_;
  absl::flat_hash_map<std::string, HloInstruction*> by_name_;
  HloInstruction* root_ = nullptr;
  bool opaque_ = false;
  std::string execution_thread_;
  SourceLocation location_;
};

class HloModule {
 public:
  explicit HloModule(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  HloComputation* AddComputation(std::unique_ptr<HloComputation> computation);
  const std::vector<std::unique_ptr<HloComputation>>& computations() const {
    return computations_;
  }
  HloComputation* FindComputation(absl::string_view name) const;
  HloComputation* entry() const { return entry_; }
  void set_entry(HloComputation* entry) { entry_ = entry; }

  // Partition and replica counts; 1 when the header does not say.
  int64_t num_partitions() const { return num_partitions_.value_or(1); }
  int64_t replica_count() const { return replica_count_.value_or(1); }
  bool has_num_partitions() const { return num_partitions_.has_value(); }
  bool has_replica_count() const { return replica_count_.has_value(); }
  void set_num_partitions(int64_t n) { num_partitions_ = n; }
  void set_replica_count(int64_t n) { replica_count_ = n; }
  bool is_scheduled() const { return is_scheduled_; }
  void set_is_scheduled(bool scheduled) { is_scheduled_ = scheduled; }

  // Header attributes kept as text (entry_computation_layout, input_output_alias, ...).
  const std::vector<RawAttribute>& raw_header_attributes() const { return raw_header_; }
  std::vector<RawAttribute>& mutable_raw_header_attributes() { return raw_header_; }

  // The file the module was read from (for messages); may be empty.
  const std::string& source_path() const { return source_path_; }
  void set_source_path(std::string path) { source_path_ = std::move(path); }

 private:
  std::string name_;
  std::vector<std::unique_ptr<HloComputation>> computations_;
  absl::flat_hash_map<std::string, HloComputation*> by_name_;
  HloComputation* entry_ = nullptr;
  std::optional<int64_t> num_partitions_;
  std::optional<int64_t> replica_count_;
  bool is_scheduled_ = false;
  std::vector<RawAttribute> raw_header_;
  std::string source_path_;
};

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_HLO_MODULE_H_
