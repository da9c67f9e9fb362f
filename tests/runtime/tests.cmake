# Runtime: the differential test (random computations through every stage of every pipeline on the
# native CPU backend, compared with the reference interpreter). Compiled kernels are cached in the
# build tree. Under the sanitizers the interpreter is slower, so fewer graphs run.
add_executable(runtime_diff ${CMAKE_CURRENT_LIST_DIR}/diff.c)
target_link_libraries(runtime_diff PRIVATE fxrepl)
if(FXPLAIN_SANITIZE)
  set(FX_DIFF_COUNT 300)
else()
  set(FX_DIFF_COUNT 1000)
endif()
add_test(NAME runtime.differential COMMAND runtime_diff ${FX_DIFF_COUNT} 1 WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runtime.differential PROPERTIES LABELS "runtime"
                     ENVIRONMENT "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache" TIMEOUT 900)

# Every corpus module that fits runs with --check on the CPU (the last stage of each pipeline
# against the interpreter on stage 0). Heavy: labelled slow.
add_executable(runtime_corpus ${CMAKE_CURRENT_LIST_DIR}/corpus.c)
target_link_libraries(runtime_corpus PRIVATE fxrepl)
add_test(NAME runtime.corpus_check COMMAND runtime_corpus WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runtime.corpus_check PROPERTIES LABELS "runtime;slow"
                     ENVIRONMENT "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache" TIMEOUT 3600)
# The same check on tests/xla/programs: sorts made CUB calls (their synthetic keys, packed argsort
# pairs), stable sorts with their tie-breaking iota fused in, vmapped gathers and scatters.
add_test(NAME runtime.programs_check COMMAND runtime_corpus tests/xla/programs WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runtime.programs_check PROPERTIES LABELS "runtime"
                     ENVIRONMENT "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache" TIMEOUT 600)

# Every teaching script runs with --check on the CPU (the last stage of both pipelines against the
# interpreter; the CartPole programs at 40 steps). A few minutes in Release: labelled slow.
add_test(NAME runtime.scripts_check COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/scripts_check.sh $<TARGET_FILE:fxplain>
         ${CMAKE_SOURCE_DIR} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runtime.scripts_check PROPERTIES LABELS "runtime;slow"
                     ENVIRONMENT "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache" TIMEOUT 1200)

# A bitcast that changes the element type (u32 -> f32: what XLA's simplifier makes of jax.random's
# bitcast-convert) fused into a CPU kernel reads the bits, not the value.
add_test(NAME runtime.bitcast_element_type
         COMMAND fxplain -e "load tests/repl/data/bitcast_types.hlo; pipeline priority; step all; run --backend cpu --check"
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(runtime.bitcast_element_type PROPERTIES LABELS "runtime"
                     PASS_REGULAR_EXPRESSION "check: every output agrees with the reference interpreter")
