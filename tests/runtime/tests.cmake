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
