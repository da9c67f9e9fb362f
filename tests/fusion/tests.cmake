# Fusion: both pipelines on every corpus module (every stage verified; kernel counts printed, and
# kept in docs/corpus-kernels.md via `corpus_kernels --markdown`).
add_executable(corpus_kernels ${CMAKE_CURRENT_LIST_DIR}/corpus_kernels.c)
target_link_libraries(corpus_kernels PRIVATE fxcompiler)
add_test(NAME fusion.corpus_pipelines COMMAND corpus_kernels WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(fusion.corpus_pipelines PROPERTIES LABELS "slow" TIMEOUT 1500)
