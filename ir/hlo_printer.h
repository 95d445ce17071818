// Printer: canonical HLO text for modules, computations and instructions. Output parses back
// with ParseHloModule, and printing is idempotent: fmt(parse(fmt(x))) == fmt(x).
#ifndef SPMDCHECK_IR_HLO_PRINTER_H_
#define SPMDCHECK_IR_HLO_PRINTER_H_

#include <string>

#include "ir/hlo_module.h"

namespace spmdcheck {

struct PrintOptions {
  bool print_layouts = true;
  bool print_metadata = true;  // metadata= on instructions and inside shardings.
  // Shardings with tile assignments held as iota whenever the device array is one (XLA's V2
  // form); otherwise in the form they were written.
  bool canonical_shardings = true;
  // Named-mesh shardings (XLA's V3, `{mesh['x'=2], [{'x'}]}`) as they were written; false prints
  // their V2 meaning, which XLAs before V3 (jaxlib 0.10) read.
  bool named_shardings = true;
};

std::string PrintModule(const HloModule& module, const PrintOptions& options = {});
std::string PrintComputation(const HloComputation& computation, bool is_entry,
                             const PrintOptions& options = {});
// One statement without indentation or ROOT: `add.1 = f32[8]{0} add(a, b), sharding=...`.
std::string PrintInstruction(const HloInstruction& instruction, const PrintOptions& options = {});

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_HLO_PRINTER_H_
