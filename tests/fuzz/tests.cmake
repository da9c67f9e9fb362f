# Fuzz targets (issue: hold up under bad input). In the normal build each target is linked with
# replay_main.c and replays its seeds and every saved crash input as a test. With
# -DFXPLAIN_FUZZ=ON (clang) they are real libFuzzer binaries: scripts/fuzz.sh runs them.
set(FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(FUZZ_SEEDS_hlo ${CMAKE_SOURCE_DIR}/tests/hlo/errors ${CMAKE_SOURCE_DIR}/tests/hlo/data ${FUZZ_DIR}/regress/hlo)
set(FUZZ_SEEDS_fx ${CMAKE_SOURCE_DIR}/tests/fx/errors ${CMAKE_SOURCE_DIR}/scripts ${FUZZ_DIR}/regress/fx)
set(FUZZ_SEEDS_pipeline ${CMAKE_SOURCE_DIR}/tests/hlo/data ${FUZZ_DIR}/regress/pipeline)
foreach(t hlo fx pipeline)
  if(FXPLAIN_FUZZ)
    add_executable(fuzz_${t} ${FUZZ_DIR}/fuzz_${t}.c)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(fuzz_${t} ${FUZZ_DIR}/fuzz_${t}.c ${FUZZ_DIR}/replay_main.c)
    add_test(NAME fuzz.replay_${t} COMMAND fuzz_${t} ${FUZZ_SEEDS_${t}})
    set_tests_properties(fuzz.replay_${t} PROPERTIES LABELS "fuzz")
  endif()
  target_link_libraries(fuzz_${t} PRIVATE fxrepl)
endforeach()
