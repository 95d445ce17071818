// Validity rate and speed of the program generator (fuzz/program_gen.h): generates N programs
// (N = SPMDCHECK_GEN_CASES, default 100000) from a fixed seed, checks that each verifies
// (ir/verifier.h) and that print -> parse -> print is a fixed point, and prints the rate, the
// generation speed and how often each opcode occurs. Exit code 1 when any program is invalid.
//
//   build/bench/program_gen_bench [--narrow] [--seed S] [--bytes]
//
// --bytes drives the generator from random byte strings (ProgramFromBytes) instead of RapidCheck.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fuzz/program_gen.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"

namespace {

using spmdcheck::fuzz::GeneratedProgram;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fuzz = spmdcheck::fuzz;
  bool narrow = false, bytes = false;
  uint64_t seed = 20261129;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--narrow") == 0)
      narrow = true;
    else if (std::strcmp(argv[i], "--bytes") == 0)
      bytes = true;
    else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
  }
  const int64_t cases = EnvInt("SPMDCHECK_GEN_CASES", 100000);
  fuzz::ProgramGenOptions options;
  if (narrow) options.op_weights = fuzz::ProgramGenOptions::NarrowOpWeights();
  const rc::Gen<fuzz::ProgramRecipe> gen = fuzz::GenProgramRecipe(options);
  rc::Random random(seed);
  std::mt19937_64 rng(seed);
  int64_t invalid = 0, not_fixed = 0, instructions = 0, max_instructions = 0;
  double gen_seconds = 0;
  std::map<std::string, int64_t> opcodes;
  std::string first_bad;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < cases; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<GeneratedProgram> p;
    if (bytes) {
      std::vector<uint8_t> data(rng() % 700);
      for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
      p = fuzz::ProgramFromBytes(data, options);
    } else {
      p = fuzz::BuildProgram(gen(random.split(), static_cast<int>(i % 101)).value(), options);
    }
    gen_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!p.ok()) {
      if (invalid++ == 0) first_bad = std::string(p.status().message());
      continue;
    }
    instructions += p->instruction_count;
    max_instructions = std::max(max_instructions, p->instruction_count);
    for (const auto& c : p->module->computations()) {
      for (const auto& instr : c->instructions())
        ++opcodes[std::string(spmdcheck::HloOpcodeString(instr->opcode()))];
    }
    const absl::Status verified = spmdcheck::VerifyModule(*p->module);
    if (!verified.ok()) {
      if (invalid++ == 0) first_bad = std::string(verified.message()) + "\n" + p->hlo_text;
      continue;
    }
    absl::StatusOr<spmdcheck::ParsedModule> parsed = spmdcheck::ParseHloModule(p->hlo_text);
    if (!parsed.ok() || !spmdcheck::VerifyModule(*parsed->module).ok() ||
        spmdcheck::PrintModule(*parsed->module) != p->hlo_text) {
      if (std::getenv("SPMDCHECK_GEN_VERBOSE") != nullptr) {
        std::printf("MISMATCH %s\n",
                    parsed.ok() ? "reprint differs"
                                : std::string(parsed.status().message()).substr(0, 200).c_str());
      }
      if (not_fixed++ == 0 && first_bad.empty()) {
        first_bad = (parsed.ok() ? spmdcheck::PrintModule(*parsed->module)
                                 : std::string(parsed.status().message())) +
                    "\n--- vs ---\n" + p->hlo_text;
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("driver: %s, ops: %s, seed %llu\n", bytes ? "bytes" : "rapidcheck",
              narrow ? "narrow" : "default", static_cast<unsigned long long>(seed));
  std::printf("validity: %lld/%lld verify (%.4f%%), %lld round-trip mismatches\n",
              static_cast<long long>(cases - invalid), static_cast<long long>(cases),
              100.0 * static_cast<double>(cases - invalid) / static_cast<double>(cases),
              static_cast<long long>(not_fixed));
  std::printf(
      "speed: %.0f programs/s generated (%.0f/s incl. verify + round trip), mean %.1f "
      "entry instructions, max %lld\n",
      static_cast<double>(cases) / gen_seconds, static_cast<double>(cases) / seconds,
      static_cast<double>(instructions) / static_cast<double>(cases),
      static_cast<long long>(max_instructions));
  std::printf("opcodes:");
  for (const auto& [name, count] : opcodes)
    std::printf(" %s=%lld", name.c_str(), static_cast<long long>(count));
  std::printf("\n");
  if (!first_bad.empty()) std::printf("first problem:\n%s\n", first_bad.c_str());
  return invalid == 0 && not_fixed == 0 ? 0 : 1;
}
