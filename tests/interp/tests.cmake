# The interpreter against XLA itself: complex numbers, the f8 types, select-and-scatter, variadic
# reduce-window and batch-grouped convolution, each lowered by jax to HLO and run by XLA:CPU and by
# `fxplain run --backend interp`. Needs python3 with jax; without it the test reports itself
# skipped (exit 77).
find_program(FXPLAIN_PYTHON3 python3)
if(FXPLAIN_PYTHON3)
  add_test(NAME interp.types_vs_xla
           COMMAND ${FXPLAIN_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/types_xla.py $<TARGET_FILE:fxplain>
                   ${CMAKE_CURRENT_BINARY_DIR}/types_xla)
else()
  add_test(NAME interp.types_vs_xla COMMAND sh -c "echo 'skipped: python3 was not found'; exit 77")
endif()
set_tests_properties(interp.types_vs_xla PROPERTIES LABELS "runtime" SKIP_RETURN_CODE 77 TIMEOUT 300)
