# Hostile input, generated (issue 17): every integer attribute of every opcode's instruction
# (tests/hlo/data/all_ops.hlo) replaced by hostile values, each mutant loaded, interpreted, stepped
# through the pipeline, emitted and compiled with --check; each must end in exit 0 or 1 with no
# crash and no sanitizer report (the ASan/UBSan build runs it too). The hand-made reproductions
# are in tests/hlo/errors, tests/repl/command_errors.txt and tests/hostile/test_hostile.c.
find_program(FXPLAIN_PYTHON3 python3)
if(FXPLAIN_PYTHON3)
  add_test(NAME hostile.attribute_mutants
           COMMAND ${FXPLAIN_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/mutate_attrs.py $<TARGET_FILE:fxplain> --compile
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
else()
  add_test(NAME hostile.attribute_mutants COMMAND sh -c "echo 'skipped: python3 was not found'; exit 77")
endif()
set_tests_properties(hostile.attribute_mutants PROPERTIES LABELS "fuzz;hostile" SKIP_RETURN_CODE 77 TIMEOUT 900)
