# The reference driver (scripts/xla_reference.py) and the device profiles it must agree with.
# Which python runs them: -DFXPLAIN_PYTHON=..., or $FXPLAIN_PYTHON when CMake configures (it wins
# over the cached value), or python3. The driver test needs that python to have real XLA:GPU (the
# pinned wheels scripts/test.sh installs); without them it reports itself skipped (exit 77).
if(DEFINED ENV{FXPLAIN_PYTHON} AND NOT "$ENV{FXPLAIN_PYTHON}" STREQUAL "")
  set(FXPLAIN_PYTHON "$ENV{FXPLAIN_PYTHON}" CACHE FILEPATH "python for the XLA tests" FORCE)
endif()
find_program(FXPLAIN_PYTHON python3)

if(FXPLAIN_PYTHON)
  add_test(NAME xla_driver.profiles_match_target_configs
           COMMAND ${FXPLAIN_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/profiles.py $<TARGET_FILE:fxplain>
                   ${CMAKE_SOURCE_DIR})
  foreach(device h100 a100)
    add_test(NAME xla_driver.reference_${device}
             COMMAND ${FXPLAIN_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/driver.py ${CMAKE_SOURCE_DIR} ${device}
                     ${CMAKE_CURRENT_BINARY_DIR}/xla_driver_${device})
  endforeach()
else()
  foreach(t profiles_match_target_configs reference_h100 reference_a100)
    add_test(NAME xla_driver.${t} COMMAND sh -c "echo 'skipped: python3 was not found'; exit 77")
  endforeach()
endif()
set_tests_properties(xla_driver.profiles_match_target_configs xla_driver.reference_h100
                     xla_driver.reference_a100 PROPERTIES LABELS "xla" SKIP_RETURN_CODE 77 TIMEOUT 300)
