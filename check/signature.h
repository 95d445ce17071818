// Failure signatures: what kind of failure a check outcome is, and where, in one short string
// that the campaign deduplicates on and the reducer keeps while it shrinks a module.
//
//   reference:    wrong-result.<op>, crash.<op>
//   XLA (xla./shardy. prefix, or cmd:... sanitised):
//     miscompile.<op>           XLA's sharded executable differs from its one-device run
//     wrong-result.<op>         our oracle's verdict for a partitioner without executables
//     crash.<file>              XLA aborted (the source file of its CHECK failure)
//     xla-rejects-valid.<file>  XLA refused a module our verifier accepts
//     timeout
//     oracle-only.<op>, oracle-disagrees.<op>, reads-input-padding.<op>   (to investigate)
//     wasteful.<pattern>        correct but costlier (see campaign.h)
// <op> names the root cause when our oracle localised the failure (the first wrong value among
// the claims, and the unclaimed instructions that made it, oracle/equivalence.h suspects):
//   ours: the op of the partitioned program that made it (the first collective among the
//         suspects, else the first dynamic-slice/-update-slice or slice (a static slice that
//         cuts every device's part at one offset is named dynamic-slice), else the wrong
//         instruction); the
//         reference partitioner claims every reshard step, so this is the step that broke;
//   XLA:  the source op of the earliest suspect (its metadata op_name), i.e. the handler that
//         made the first wrong value, not the op that first showed it.
// XLA's execution names the wrong output: the divergence is the first in that output's cone
// (CauseDivergence). Otherwise the first diverging global instruction's opcode, else the
// root's.
#ifndef SPMDCHECK_CHECK_SIGNATURE_H_
#define SPMDCHECK_CHECK_SIGNATURE_H_

#include <string>

#include "check/check_pipeline.h"
#include "ir/hlo_module.h"

namespace spmdcheck::check {

struct FailureSignature {
  std::string text;    // Empty: no failure (holds, or a plain unknown).
  bool claim = false;  // A bug claim (false: a difference to investigate, a timeout).
};

// `spec` is the partitioner's spec; `program` the global module that was checked.
FailureSignature SignatureOf(const std::string& spec, const CheckOutcome& outcome,
                             const HloModule& program);

// The oracle's divergence that explains a failure: the first one, unless XLA's execution named
// the wrong output; then the first divergence in that output's cone, or none (nullptr; also when
// the oracle found no divergence). A partitioned program can hold two wrong values, and XLA's
// execution confirms only those that reach the results it compares; a divergence elsewhere (or a
// claim that is wrong) is not the bug XLA showed.
const oracle::Divergence* CauseDivergence(const CheckOutcome& outcome, const HloModule& program);

// The signature prefix of a partitioner spec (`xla`, `shardy`, `cmd_...`; empty for ours).
std::string SignaturePrefix(const std::string& spec);

// A signature as a file or folder name.
std::string SanitizedName(const std::string& text);

// The condition of the check that failed in XLA's message (`input->sharding().IsManual()` of
// "RET_CHECK failure (.../custom_call_handler.cc:1298) input->sharding().IsManual()", the text
// after "Check failed: " of a CHECK, less a CHECK_EQ's "(2 vs. 3)"), without the line number
// or the values; empty when the message names
// none. A crash signature names XLA's source file only: two checks of one file are two bugs, and
// a reduction must keep the one it started from.
std::string FailedCheckOf(const std::string& message);

}  // namespace spmdcheck::check

#endif  // SPMDCHECK_CHECK_SIGNATURE_H_
