#include "ir/hlo_printer.h"

#include <functional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace spmdcheck {
namespace {

// `value` in double quotes as the lexer reads strings back (Lexer::ConsumeString): a quote or a
// backslash escaped, a newline or tab as \n or \t. A custom-call target read from a
// single-quoted string may hold a double quote (fuzz_hlo_parser: it ended the printed string
// early and the re-parse swallowed the computation's closing brace).
std::string Quoted(absl::string_view value) {
  std::string out = "\"";
  for (const char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  out += '"';
  return out;
}

std::string IntList(const std::vector<int64_t>& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

void Attr(std::vector<std::string>& out, absl::string_view name, absl::string_view value) {
  out.push_back(absl::StrCat(name, "=", value));
}

std::string ConstantPayload(const Literal& literal) {
  if (literal.shape().IsTuple() || literal.elided() || literal.shape().rank() > 0) {
    return literal.ValuesToString();
  }
  return literal.ElementToString(0);
}

}  // namespace

std::string PrintInstruction(const HloInstruction& instruction, const PrintOptions& options) {
  std::string out =
      absl::StrCat(instruction.name(), " = ", instruction.shape().ToString(options.print_layouts),
                   " ", HloOpcodeString(instruction.opcode()), "(");
  if (instruction.opcode() == HloOpcode::kParameter) {
    absl::StrAppend(&out, instruction.parameter_number());
  } else if (instruction.opcode() == HloOpcode::kConstant && instruction.literal().has_value()) {
    absl::StrAppend(&out, ConstantPayload(*instruction.literal()));
  } else {
    std::vector<std::string> names;
    for (const HloInstruction* operand : instruction.operands()) names.push_back(operand->name());
    absl::StrAppend(&out, absl::StrJoin(names, ", "));
  }
  out += ")";

  std::vector<std::string> attrs;
  const HloAttributes& a = instruction.attrs();
  const bool collective_dims = instruction.opcode() == HloOpcode::kAllGather ||
                               instruction.opcode() == HloOpcode::kAllGatherStart ||
                               instruction.opcode() == HloOpcode::kReduceScatter ||
                               instruction.opcode() == HloOpcode::kAllToAll;
  if (a.slice) Attr(attrs, "slice", SliceToString(*a.slice));
  if (a.dimensions && !collective_dims) Attr(attrs, "dimensions", IntList(*a.dimensions));
  if (a.dynamic_slice_sizes) Attr(attrs, "dynamic_slice_sizes", IntList(*a.dynamic_slice_sizes));
  if (a.padding) Attr(attrs, "padding", PaddingToString(*a.padding));
  if (a.iota_dimension) Attr(attrs, "iota_dimension", absl::StrCat(*a.iota_dimension));
  if (a.tuple_index) Attr(attrs, "index", absl::StrCat(*a.tuple_index));
  if (a.direction) Attr(attrs, "direction", ComparisonDirectionName(*a.direction));
  if (a.comparison_type) Attr(attrs, "type", *a.comparison_type);
  if (a.dot_dimension_numbers) {
    const DotDimensionNumbers& d = *a.dot_dimension_numbers;
    if (!d.lhs_batch.empty()) Attr(attrs, "lhs_batch_dims", IntList(d.lhs_batch));
    Attr(attrs, "lhs_contracting_dims", IntList(d.lhs_contracting));
    if (!d.rhs_batch.empty()) Attr(attrs, "rhs_batch_dims", IntList(d.rhs_batch));
    Attr(attrs, "rhs_contracting_dims", IntList(d.rhs_contracting));
  }
  if (a.window) Attr(attrs, "window", WindowToString(*a.window));
  if (a.dim_labels) Attr(attrs, "dim_labels", DimLabelsToString(*a.dim_labels));
  if (a.feature_group_count) {
    Attr(attrs, "feature_group_count", absl::StrCat(*a.feature_group_count));
  }
  if (a.batch_group_count) Attr(attrs, "batch_group_count", absl::StrCat(*a.batch_group_count));
  if (a.gather_dimension_numbers) {
    const GatherDimensionNumbers& d = *a.gather_dimension_numbers;
    Attr(attrs, "offset_dims", IntList(d.offset_dims));
    Attr(attrs, "collapsed_slice_dims", IntList(d.collapsed_slice_dims));
    Attr(attrs, "start_index_map", IntList(d.start_index_map));
    if (!d.operand_batching_dims.empty()) {
      Attr(attrs, "operand_batching_dims", IntList(d.operand_batching_dims));
    }
    if (!d.start_indices_batching_dims.empty()) {
      Attr(attrs, "start_indices_batching_dims", IntList(d.start_indices_batching_dims));
    }
    Attr(attrs, "index_vector_dim", absl::StrCat(d.index_vector_dim));
  }
  if (a.gather_slice_sizes) Attr(attrs, "slice_sizes", IntList(*a.gather_slice_sizes));
  if (a.scatter_dimension_numbers) {
    const ScatterDimensionNumbers& d = *a.scatter_dimension_numbers;
    Attr(attrs, "update_window_dims", IntList(d.update_window_dims));
    Attr(attrs, "inserted_window_dims", IntList(d.inserted_window_dims));
    Attr(attrs, "scatter_dims_to_operand_dims", IntList(d.scatter_dims_to_operand_dims));
    if (!d.input_batching_dims.empty()) {
      Attr(attrs, "input_batching_dims", IntList(d.input_batching_dims));
    }
    if (!d.scatter_indices_batching_dims.empty()) {
      Attr(attrs, "scatter_indices_batching_dims", IntList(d.scatter_indices_batching_dims));
    }
    Attr(attrs, "index_vector_dim", absl::StrCat(d.index_vector_dim));
  }
  if (a.indices_are_sorted) {
    Attr(attrs, "indices_are_sorted", *a.indices_are_sorted ? "true" : "false");
  }
  if (a.unique_indices) Attr(attrs, "unique_indices", *a.unique_indices ? "true" : "false");
  if (a.channel_id) Attr(attrs, "channel_id", absl::StrCat(*a.channel_id));
  if (a.replica_groups) Attr(attrs, "replica_groups", a.replica_groups->ToString());
  if (a.constrain_layout) Attr(attrs, "constrain_layout", *a.constrain_layout ? "true" : "false");
  if (a.dimensions && collective_dims) Attr(attrs, "dimensions", IntList(*a.dimensions));
  if (a.use_global_device_ids) {
    Attr(attrs, "use_global_device_ids", *a.use_global_device_ids ? "true" : "false");
  }
  if (a.source_target_pairs) {
    Attr(attrs, "source_target_pairs", SourceTargetPairsToString(*a.source_target_pairs));
  }
  if (a.is_stable) Attr(attrs, "is_stable", *a.is_stable ? "true" : "false");
  if (a.custom_call_target) {
    Attr(attrs, "custom_call_target", Quoted(*a.custom_call_target));
  }
  if (a.fusion_kind) Attr(attrs, "kind", *a.fusion_kind);
  if (a.distribution) Attr(attrs, "distribution", *a.distribution);
  for (const CalledComputations& called : instruction.called()) {
    std::vector<std::string> names;
    for (const HloComputation* c : called.computations) names.push_back(c->name());
    Attr(attrs, called.role,
         called.is_list ? absl::StrCat("{", absl::StrJoin(names, ", "), "}")
                        : absl::StrJoin(names, ", "));
  }
  if (instruction.sharding()) {
    HloSharding sharding = *instruction.sharding();
    if (!options.named_shardings) sharding = sharding.WithoutNamedForms();
    if (options.canonical_shardings) sharding = sharding.Canonical();
    Attr(attrs, "sharding", sharding.ToString(options.print_metadata));
  }
  for (const RawAttribute& raw : instruction.raw_attributes()) {
    if (!options.print_metadata && raw.name == "metadata") continue;
    Attr(attrs, raw.name, raw.text);
  }
  for (const std::string& attr : attrs) absl::StrAppend(&out, ", ", attr);
  return out;
}

std::string PrintComputation(const HloComputation& computation, bool is_entry,
                             const PrintOptions& options) {
  std::vector<std::string> params;
  for (const HloInstruction* p : computation.parameters()) {
    if (p != nullptr) {
      params.push_back(absl::StrCat(p->name(), ": ", p->shape().ToString(options.print_layouts)));
    }
  }
  std::string out = absl::StrCat(
      is_entry ? "ENTRY " : "", computation.name(), " (", absl::StrJoin(params, ", "), ") -> ",
      computation.root() != nullptr ? computation.root()->shape().ToString(options.print_layouts)
                                    : "()",
      " {\n");
  std::vector<HloInstruction*> order = computation.PostOrder();
  if (order.empty()) {
    for (const auto& instruction : computation.instructions()) order.push_back(instruction.get());
  }
  for (const HloInstruction* instruction : order) {
    absl::StrAppend(&out, "  ", instruction == computation.root() ? "ROOT " : "",
                    PrintInstruction(*instruction, options), "\n");
  }
  out += "}";
  if (!computation.execution_thread().empty()) {
    absl::StrAppend(&out, ", execution_thread=", Quoted(computation.execution_thread()));
  }
  return out;
}

std::string PrintModule(const HloModule& module, const PrintOptions& options) {
  std::string out = absl::StrCat("HloModule ", module.name());
  if (module.is_scheduled()) out += ", is_scheduled=true";
  for (const RawAttribute& raw : module.raw_header_attributes()) {
    absl::StrAppend(&out, ", ", raw.name, "=", raw.text);
  }
  if (module.has_replica_count()) absl::StrAppend(&out, ", replica_count=", module.replica_count());
  if (module.has_num_partitions()) {
    absl::StrAppend(&out, ", num_partitions=", module.num_partitions());
  }
  out += "\n";
  // Callees before callers (XLA's parser needs a computation defined before it is called).
  std::vector<const HloComputation*> order;
  absl::flat_hash_set<const HloComputation*> visited;
  std::function<void(const HloComputation*, int)> visit = [&](const HloComputation* c, int depth) {
    if (!visited.insert(c).second || depth > 4096) return;
    for (const auto& instruction : c->instructions()) {
      for (const HloComputation* callee : instruction->AllCalledComputations()) {
        visit(callee, depth + 1);
      }
    }
    order.push_back(c);
  };
  for (const auto& computation : module.computations()) visit(computation.get(), 0);
  for (const HloComputation* computation : order) {
    if (computation == module.entry() || computation->is_opaque()) continue;
    absl::StrAppend(&out, "\n", PrintComputation(*computation, false, options), "\n");
  }
  if (module.entry() != nullptr) {
    absl::StrAppend(&out, "\n", PrintComputation(*module.entry(), true, options), "\n");
  }
  return out;
}

}  // namespace spmdcheck
