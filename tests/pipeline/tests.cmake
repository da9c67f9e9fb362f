# The pipelines on the real corpus: every module through classic and priority, every stage
# verified and planned (slow: the largest modules are ~20,000 instructions).
add_executable(pipeline_corpus ${CMAKE_CURRENT_LIST_DIR}/pipeline_corpus.c)
target_link_libraries(pipeline_corpus PRIVATE fxcompiler fxexplain)
add_test(NAME pipeline.corpus COMMAND pipeline_corpus WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(pipeline.corpus PROPERTIES LABELS "slow" TIMEOUT 1800)
