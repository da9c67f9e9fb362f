# Random numbers against XLA itself: rng-bit-generator's new state and bits for random states,
# shapes and element types, compared with jax.lax.rng_bit_generator on XLA:CPU. Needs python3
# with jax; without it the test reports itself skipped (exit 77).
find_program(FXPLAIN_PYTHON3 python3)
if(FXPLAIN_PYTHON3)
  add_test(NAME rng.bit_generator_vs_xla
           COMMAND ${FXPLAIN_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/rbg_xla.py $<TARGET_FILE:fxplain>
                   ${CMAKE_CURRENT_BINARY_DIR}/rbg_xla 40)
else()
  add_test(NAME rng.bit_generator_vs_xla COMMAND sh -c "echo 'skipped: python3 was not found'; exit 77")
endif()
set_tests_properties(rng.bit_generator_vs_xla PROPERTIES LABELS "rng" SKIP_RETURN_CODE 77 TIMEOUT 300)
