# Writes OUT, a C++ source holding every RULES_DIR/*.rules file as a string (the built-in rewrite
# catalog, smt/builtin_rules.h). Run by the smt target's custom command whenever a rule changes.
file(GLOB rule_files "${RULES_DIR}/*.rules")
list(SORT rule_files)
set(body "")
foreach(rule_file ${rule_files})
  get_filename_component(name "${rule_file}" NAME)
  file(READ "${rule_file}" content)
  string(APPEND body "      {\"smt/rules/${name}\", R\"spmdrules(${content})spmdrules\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from smt/rules/*.rules by smt/rules/embed.cmake; do not edit.\n#include \"smt/builtin_rules.h\"\n\nnamespace spmdcheck::smt {\n\nconst std::vector<BuiltinRuleFile>& BuiltinRuleFiles() {\n  static const std::vector<BuiltinRuleFile>* files = new std::vector<BuiltinRuleFile>{\n${body}  };\n  return *files;\n}\n\n}  // namespace spmdcheck::smt\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
