# XLA's own dumps as stages (load DIR, the `xla` pipeline, XLA's decision log, find): the committed
# fixture always runs; the real dumps made with JAX need the pinned wheels (label xla, skipped
# without them; FXPLAIN_PYTHON as in tests/xla_driver).
add_test(NAME xla_dumps.fixture COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fixture_test.sh $<TARGET_FILE:fxplain>
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(xla_dumps.fixture PROPERTIES LABELS "repl")
if(DEFINED ENV{FXPLAIN_PYTHON} AND NOT "$ENV{FXPLAIN_PYTHON}" STREQUAL "")
  set(FXPLAIN_PYTHON "$ENV{FXPLAIN_PYTHON}" CACHE FILEPATH "python for the XLA tests" FORCE)
endif()
find_program(FXPLAIN_PYTHON python3)
if(FXPLAIN_PYTHON)
  add_test(NAME xla_dumps.jax_programs
           COMMAND ${FXPLAIN_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/jax_test.py $<TARGET_FILE:fxplain> ${CMAKE_SOURCE_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/xla_dumps_jax)
else()
  add_test(NAME xla_dumps.jax_programs COMMAND sh -c "echo 'skipped: python3 was not found'; exit 77")
endif()
set_tests_properties(xla_dumps.jax_programs PROPERTIES LABELS "xla" SKIP_RETURN_CODE 77 TIMEOUT 600)
add_test(NAME xla_dumps.forms COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/forms_test.sh $<TARGET_FILE:fxplain>
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(xla_dumps.forms PROPERTIES LABELS "hlo")
