// HloInstruction, HloComputation and HloModule: the program graph. A module owns its
// computations, a computation owns its instructions; operands and called computations are
// non-owning pointers into the same module.
#ifndef SPMDCHECK_IR_HLO_MODULE_H_
#define SPMDCHECK_IR_HLO_MODULE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "ir/hlo_attributes.h"
#include "ir/hlo_opcode.h"
#include "ir/literal.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck {

class HloCloner;
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

namespace hlo_internal {

// A set of named objects looked up by name, keyed by each object's own name (no copies).
template <typename T>
struct NameHash {
  using is_transparent = void;
  size_t operator()(absl::string_view name) const { return absl::HashOf(name); }
  size_t operator()(const T* x) const { return absl::HashOf(absl::string_view(x->name())); }
};
template <typename T>
struct NameEq {
  using is_transparent = void;
  static absl::string_view Name(absl::string_view name) { return name; }
  static absl::string_view Name(const T* x) { return x->name(); }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return Name(a) == Name(b);
  }
};
template <typename T>
using NameIndex = absl::flat_hash_set<T*, NameHash<T>, NameEq<T>>;

}  // namespace hlo_internal

// An immutable value shared by several holders through an intrusive reference count (one
// pointer per holder). Holders that need to change the value copy it first unless they are its
// only holder (see HloInstruction::mutable_shape()).
template <typename T>
class SharedValue {
 public:
  SharedValue() = default;
  template <typename... Args>
  static SharedValue Make(Args&&... args) {
    SharedValue v;
    v.block_ = new Block{{1}, T(std::forward<Args>(args)...)};
    return v;
  }
  SharedValue(const SharedValue& other) : block_(other.block_) { Ref(); }
  SharedValue(SharedValue&& other) noexcept : block_(other.block_) { other.block_ = nullptr; }
  SharedValue& operator=(const SharedValue& other) {
    if (this == &other) return *this;
    SharedValue copy(other);
    std::swap(block_, copy.block_);
    return *this;
  }
  SharedValue& operator=(SharedValue&& other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  ~SharedValue() { Unref(); }

  explicit operator bool() const { return block_ != nullptr; }
  const T& operator*() const { return block_->value; }
  const T* operator->() const { return &block_->value; }
  const T* get() const { return block_ != nullptr ? &block_->value : nullptr; }
  // True when this is the only holder.
  bool unique() const {
    return block_ != nullptr && block_->refs.load(std::memory_order_acquire) == 1;
  }
  // The value, for changing it in place; only when unique().
  T* mutable_get() { return &block_->value; }
  void reset() {
    Unref();
    block_ = nullptr;
  }

 private:
  struct Block {
    std::atomic<int32_t> refs;
    T value;
  };
  void Ref() {
    if (block_ != nullptr) block_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void Unref() {
    if (block_ != nullptr && block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete block_;
    }
  }
  Block* block_ = nullptr;
};

// Instructions keep their shape, sharding, literal and structured attributes as SharedValues:
// the parser hands identical values (the same shape or sharding text) to many instructions
// without copying them, and an instruction without attributes, sharding or literal pays one null
// pointer for each. The accessors behave as plain members would; a reference returned by
// shape()/attrs()/sharding()/literal() stays valid until that part of the same instruction is
// next changed.
class HloInstruction {
 public:
  HloInstruction(HloOpcode opcode, std::string name, Shape shape);
  // Same, sharing an existing shape (copied on the first mutable_shape()); an empty `shape`
  // means the invalid Shape().
  HloInstruction(HloOpcode opcode, std::string name, SharedValue<Shape> shape);
  // A copy outside any computation (parent() null, index -1), with the same operands and called
  // computations.
  HloInstruction(const HloInstruction& other);
  // Takes `other`'s contents; keeps its own parent and position.
  HloInstruction& operator=(const HloInstruction& other);
  HloInstruction(HloInstruction&&) noexcept = default;
  HloInstruction& operator=(HloInstruction&&) noexcept = default;
  ~HloInstruction();

  HloOpcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  // Also updates the parent computation's name lookup.
  void set_name(std::string name);
  const Shape& shape() const { return *shape_; }
  Shape& mutable_shape();
  void set_shape(Shape shape);
  // Shares `shape` with other holders (copied on the first mutable_shape()).
  void set_shared_shape(SharedValue<Shape> shape);
  const SharedValue<Shape>& shared_shape() const { return shape_; }

  const std::vector<HloInstruction*>& operands() const { return operands_; }
  HloInstruction* operand(int64_t i) const { return operands_[i]; }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  void AppendOperand(HloInstruction* operand) { operands_.push_back(operand); }
  void ReplaceOperand(int64_t i, HloInstruction* operand) { operands_[i] = operand; }
  // Replaces the whole operand list.
  void set_operands(std::vector<HloInstruction*> operands) { operands_ = std::move(operands); }

  HloComputation* parent() const { return parent_; }
  // Position in parent()->instructions(); -1 when not in a computation.
  int64_t index_in_parent() const { return index_; }

  int64_t parameter_number() const { return parameter_number_; }
  void set_parameter_number(int64_t n) { parameter_number_ = n; }
  const std::optional<Literal>& literal() const { return literal_ ? *literal_ : NoLiteral(); }
  void set_literal(Literal literal);
  // Shares an (immutable) literal with other holders.
  void set_shared_literal(SharedValue<std::optional<Literal>> literal) {
    literal_ = std::move(literal);
  }
  const SharedValue<std::optional<Literal>>& shared_literal() const { return literal_; }

  const std::optional<HloSharding>& sharding() const {
    return sharding_ ? *sharding_ : NoSharding();
  }
  void set_sharding(HloSharding sharding);
  void clear_sharding() { sharding_.reset(); }
  // Shares an (immutable) sharding with other holders.
  void set_shared_sharding(SharedValue<std::optional<HloSharding>> sharding) {
    sharding_ = std::move(sharding);
  }
  const SharedValue<std::optional<HloSharding>>& shared_sharding() const { return sharding_; }

  const HloAttributes& attrs() const { return attrs_ ? *attrs_ : NoAttributes(); }
  // Allocates the attributes on first use; copies them first when they are shared.
  HloAttributes& mutable_attrs();
  bool has_attrs() const { return static_cast<bool>(attrs_); }
  // Shares attributes with other holders (copied on the first mutable_attrs()).
  void set_shared_attrs(SharedValue<HloAttributes> attrs) { attrs_ = std::move(attrs); }
  const SharedValue<HloAttributes>& shared_attrs() const { return attrs_; }

  const std::vector<CalledComputations>& called() const {
    return extras_ != nullptr ? extras_->called : NoCalled();
  }
  std::vector<CalledComputations>& mutable_called();
  // The single computation called in `role`, or nullptr.
  HloComputation* called_computation(absl::string_view role) const;
  // All called computations, in attribute order.
  std::vector<HloComputation*> AllCalledComputations() const;

  const std::vector<RawAttribute>& raw_attributes() const {
    return extras_ != nullptr ? extras_->raw_attributes : NoRawAttributes();
  }
  std::vector<RawAttribute>& mutable_raw_attributes();
  const RawAttribute* FindRawAttribute(absl::string_view name) const;

  const SourceLocation& location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }

 private:
  friend class HloComputation;
  friend class HloCloner;
  // What few instructions have, allocated on first use.
  struct Extras {
    std::vector<CalledComputations> called;
    std::vector<RawAttribute> raw_attributes;
  };
  static const std::optional<Literal>& NoLiteral();
  static const std::optional<HloSharding>& NoSharding();
  static const HloAttributes& NoAttributes();
  static const std::vector<CalledComputations>& NoCalled();
  static const std::vector<RawAttribute>& NoRawAttributes();
  Extras& mutable_extras();

  HloOpcode opcode_;
  int32_t index_ = -1;
  std::string name_;
  SharedValue<Shape> shape_;  // Never empty.
  std::vector<HloInstruction*> operands_;
  HloComputation* parent_ = nullptr;
  int64_t parameter_number_ = -1;
  SharedValue<std::optional<Literal>> literal_;
  SharedValue<std::optional<HloSharding>> sharding_;
  SharedValue<HloAttributes> attrs_;
  std::unique_ptr<Extras> extras_;
  SourceLocation location_;
};

class HloComputation {
 public:
  explicit HloComputation(std::string name);
  ~HloComputation();

  const std::string& name() const { return name_; }
  // Also updates the parent module's name lookup.
  void set_name(std::string name);
  HloModule* parent() const { return parent_; }

  // Takes ownership; the name must be unique in this computation (checked by the caller).
  HloInstruction* AddInstruction(std::unique_ptr<HloInstruction> instruction);
  const std::vector<std::unique_ptr<HloInstruction>>& instructions() const { return instructions_; }
  int64_t instruction_count() const { return static_cast<int64_t>(instructions_.size()); }
  // The first instruction named `name`, or nullptr.
  HloInstruction* FindInstruction(absl::string_view name) const;
  // Removes every instruction after the first `count` (used to undo a half-parsed statement).
  void TruncateInstructions(int64_t count);
  // Removes the instructions `remove` selects (never the root); the rest keep their order. The
  // caller guarantees no kept instruction uses a removed one.
  void RemoveInstructionsIf(const std::function<bool(const HloInstruction*)>& remove);
  // Reserves room for `count` instructions.
  void ReserveInstructions(int64_t count) { instructions_.reserve(count); }
  // Releases unused room in instructions() (after the last AddInstruction of a parse).
  void ShrinkInstructions() { instructions_.shrink_to_fit(); }

  HloInstruction* root() const { return root_; }
  void set_root(HloInstruction* root) { root_ = root; }
  // parameter(i) instructions, indexed by i (nullptr for gaps).
  std::vector<HloInstruction*> parameters() const;

  // A computation referenced by a pasted fragment but not present in it: only its name is known.
  bool is_opaque() const { return opaque_; }
  void set_opaque(bool opaque) { opaque_ = opaque; }
  const std::string& execution_thread() const {
    return execution_thread_ != nullptr ? *execution_thread_ : NoExecutionThread();
  }
  void set_execution_thread(std::string thread);
  const SourceLocation& location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }

  // Instructions in an order where every operand comes before its users (the text order when
  // it already is one). Empty when there is a cycle.
  std::vector<HloInstruction*> PostOrder() const;

 private:
  friend class HloModule;
  friend class HloInstruction;
  friend class HloCloner;
  // Small computations are searched linearly; larger ones keep a name index.
  static constexpr size_t kIndexThreshold = 16;
  static const std::string& NoExecutionThread();
  void IndexInstruction(HloInstruction* instruction);
  void UnindexInstruction(HloInstruction* instruction);
  void RenameInstruction(HloInstruction* instruction, std::string name);

  std::string name_;
  HloModule* parent_ = nullptr;
  std::vector<std::unique_ptr<HloInstruction>> instructions_;
  // Null while there are at most kIndexThreshold instructions.
  std::unique_ptr<hlo_internal::NameIndex<HloInstruction>> by_name_;
  HloInstruction* root_ = nullptr;
  std::unique_ptr<std::string> execution_thread_;  // Null when empty.
  SourceLocation location_;
  bool opaque_ = false;
};

class HloModule {
 public:
  explicit HloModule(std::string name);
  ~HloModule();

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  HloComputation* AddComputation(std::unique_ptr<HloComputation> computation);
  const std::vector<std::unique_ptr<HloComputation>>& computations() const { return computations_; }
  HloComputation* FindComputation(absl::string_view name) const;
  // Reserves room for `count` computations.
  void ReserveComputations(int64_t count) { computations_.reserve(count); }
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

  // The StableHLO text the module was converted from (what `jax.jit(f).lower(...).as_text()`
  // printed), while the module is that conversion: XLA's partitioners then compile this text
  // the way jax.jit does instead of the module (target/xla_partitioner.h). Empty otherwise.
  // Clone() does not copy it: a copy is made to be changed, and a changed module is another
  // program.
  const std::string& jax_source() const { return jax_source_; }
  void set_jax_source(std::string text) { jax_source_ = std::move(text); }

  // A deep copy: new computations and instructions in the same order and with the same names,
  // operands, roots, called computations and the entry pointing into the copy; header, source
  // path and locations kept. Shapes, shardings, literals and attributes are shared with this
  // module as immutable values (each side copies on its first change), so the two modules are
  // independent. Pointers to instructions or computations outside this module are kept as they
  // are.
  std::unique_ptr<HloModule> Clone() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<HloComputation>> computations_;
  hlo_internal::NameIndex<HloComputation> by_name_;
  HloComputation* entry_ = nullptr;
  std::optional<int64_t> num_partitions_;
  std::optional<int64_t> replica_count_;
  bool is_scheduled_ = false;
  std::vector<RawAttribute> raw_header_;
  std::string source_path_;
  std::string jax_source_;
  friend class HloComputation;
  friend class HloCloner;
};

// Deep copies of computations and instructions into another module (HloModule::Clone, or a
// module assembled from parts of others): every copy's operands and called computations are
// replaced by their copies where this cloner made or was told of one, and kept otherwise.
class HloCloner {
 public:
  // Adds copies of `computations` to `module` in this order. All of them are created before any
  // instruction is copied, so calls among them resolve to the copies whatever their order.
  std::vector<HloComputation*> CloneComputations(
      const std::vector<const HloComputation*>& computations, HloModule& module);
  // A copy of `instruction` outside any computation, its operands and called computations
  // remapped.
  std::unique_ptr<HloInstruction> CloneInstruction(const HloInstruction& instruction) const;
  // Records `to` as the copy of `from` (e.g. a new parameter standing for an instruction).
  void MapInstruction(const HloInstruction* from, HloInstruction* to) { instructions_[from] = to; }
  void MapComputation(const HloComputation* from, HloComputation* to) { computations_[from] = to; }
  // The copy of `from`, or nullptr.
  HloInstruction* FindInstruction(const HloInstruction* from) const;
  HloComputation* FindComputation(const HloComputation* from) const;

 private:
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> instructions_;
  absl::flat_hash_map<const HloComputation*, HloComputation*> computations_;
};

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_HLO_MODULE_H_
