# The pipelines on the real corpus: every module through classic and priority, every stage
# verified and planned (slow: the largest modules are ~20,000 instructions).
add_executable(pipeline_corpus ${CMAKE_CURRENT_LIST_DIR}/pipeline_corpus.c)
target_link_libraries(pipeline_corpus PRIVATE fxcompiler fxexplain)
add_test(NAME pipeline.corpus COMMAND pipeline_corpus WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(pipeline.corpus PROPERTIES LABELS "slow" TIMEOUT 1800)

# The estimate cache of priority-fusion (fusion_analysis.c) against fresh analyses: with
# FXPLAIN_PERF_CACHE_CHECK=1 every cached cost analysis and estimate is recomputed and a
# difference aborts. Two real modules on the h100 profile, and the whole corpus (about 10 s).
foreach(m gemma3_1b_flax_call resnet50_keras_jax_f32)
  add_test(NAME pipeline.perf_cache_check.${m}
           COMMAND fxplain -e "load tests/data/hlo-corpus/${m}.hlo; set device h100; pipeline priority; step all"
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(pipeline.perf_cache_check.${m} PROPERTIES LABELS "pipeline"
                       ENVIRONMENT "FXPLAIN_PERF_CACHE_CHECK=1;FXPLAIN_HISTORY=/dev/null")
endforeach()
add_test(NAME pipeline.perf_cache_check.corpus COMMAND pipeline_corpus tests/data/hlo-corpus priority
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(pipeline.perf_cache_check.corpus PROPERTIES LABELS "pipeline" TIMEOUT 600
                     ENVIRONMENT "FXPLAIN_PERF_CACHE_CHECK=1")

# The reachability multi_output_fusion and horizontal fusion keep through their fusions
# (compiler/fusion/reachability.c) against the full search: with FXPLAIN_REACH_CHECK=1 every cycle check
# is answered both ways and a difference aborts. The whole corpus through both pipelines.
add_test(NAME pipeline.reach_check.corpus COMMAND pipeline_corpus tests/data/hlo-corpus classic priority
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(pipeline.reach_check.corpus PROPERTIES LABELS "pipeline" TIMEOUT 600
                     ENVIRONMENT "FXPLAIN_REACH_CHECK=1")
