# GPU tests. Label "nvrtc": compiles kernels with NVRTC and reads their ptxas figures; needs the
# CUDA toolkit, not a GPU, so it runs in CI. Label "gpu": runs on a real GPU (`ctest -L gpu`);
# without one each test prints why and exits 77, which ctest reports as skipped.
set_property(TEST unit.test_cuda APPEND PROPERTY LABELS nvrtc)

add_executable(gpu_run ${CMAKE_CURRENT_LIST_DIR}/gpu_run.c)
target_include_directories(gpu_run PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gpu_run PRIVATE fxrepl)

# Every kernel of every teaching script, test graph and corpus module (first and last stage of the
# classic pipeline) compiles with NVRTC for sm_75, sm_80 and sm_90. The normal run covers a representative subset (reductions,
# layer norm, attention, a scan loop, in-place updates, sort, dots, a real model
# fragment); the "slow" run every module (about 3 minutes of NVRTC per architecture).
add_executable(nvrtc_kernels ${CMAKE_CURRENT_LIST_DIR}/nvrtc_kernels.c)
target_link_libraries(nvrtc_kernels PRIVATE fxrepl)
set(FXPLAIN_CORPUS_DIR ${CMAKE_SOURCE_DIR}/tests/data/hlo-corpus)
if(DEFINED ENV{FXPLAIN_HLO_CORPUS})
  set(FXPLAIN_CORPUS_DIR $ENV{FXPLAIN_HLO_CORPUS})
endif()
set(FXPLAIN_NVRTC_SUBSET
    layer_norm_1x4096x768_bf16.hlo mean_axis_1x4096x1024_bf16.hlo sum_axis_1x4096x1024_bf16.hlo
    mha_block_1x12x128x64_bf16.hlo bench_scan_N2000_M3.hlo
    in_place_dynamic_update_slice_fusion.hlo argsort_axis_1024x512_bf16.hlo xnn.parallel_dots.optimized.hlo
    gpu_hlo.hlo jax.b380442861.hlo jax.issue.33666.linx.frag_0428.module_0002.hlo)
set(FXPLAIN_NVRTC_FILES)
foreach(f ${FXPLAIN_NVRTC_SUBSET})
  list(APPEND FXPLAIN_NVRTC_FILES ${FXPLAIN_CORPUS_DIR}/${f})
endforeach()
file(GLOB FXPLAIN_SCRIPTS ${CMAKE_SOURCE_DIR}/scripts/*.fx)
# Walkthroughs are shell command scripts that load the others, not programs of their own.
list(FILTER FXPLAIN_SCRIPTS EXCLUDE REGEX "walkthrough")
add_test(NAME nvrtc.scripts COMMAND nvrtc_kernels --arch sm_75 --arch sm_80 --arch sm_90 ${FXPLAIN_SCRIPTS}
         tests/gpu/loop_dot_rng.hlo tests/gpu/conv.hlo tests/hlo/data/all_ops.hlo tests/pipeline/golden/small.hlo
         tests/repl/data/small.hlo WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(nvrtc.scripts PROPERTIES LABELS "nvrtc" SKIP_RETURN_CODE 77 ENVIRONMENT
                     "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache")
add_test(NAME nvrtc.corpus COMMAND nvrtc_kernels --arch sm_75 --arch sm_80 --arch sm_90 ${FXPLAIN_NVRTC_FILES}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(nvrtc.corpus PROPERTIES LABELS "nvrtc" SKIP_RETURN_CODE 77 ENVIRONMENT
                     "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache")
add_test(NAME nvrtc.corpus_all COMMAND nvrtc_kernels --arch sm_75 --arch sm_80 --arch sm_90 ${FXPLAIN_CORPUS_DIR}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(nvrtc.corpus_all PROPERTIES LABELS "nvrtc;slow" SKIP_RETURN_CODE 77 ENVIRONMENT
                     "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache")

# On a GPU: launches, loops, libraries, and whole modules against the interpreter: the NVRTC subset
# less two modules whose check cannot finish in a test's time (measured on an H200, 2026-11-27):
# jax.b380442861 loops 1,000,000 times over a reduce of 1,000,000 elements (10^12 operations for
# the reference interpreter), in_place_dynamic_update_slice_fusion is a 100,000-trip scalar loop
# (millions of launches; not done in 140 s).
set(FXPLAIN_GPU_RUN_FILES ${FXPLAIN_NVRTC_FILES})
list(FILTER FXPLAIN_GPU_RUN_FILES EXCLUDE REGEX "jax\\.b380442861|in_place_dynamic_update_slice_fusion")
add_test(NAME gpu.runtime
         COMMAND gpu_run tests/gpu/loop_dot_rng.hlo tests/gpu/conv.hlo ${FXPLAIN_SCRIPTS} ${FXPLAIN_GPU_RUN_FILES}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(gpu.runtime PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77 ENVIRONMENT
                     "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache")

# On a GPU: the differential generator's random graphs, every stage of every pipeline, on the GPU
# backend against the interpreter.
add_test(NAME gpu.differential COMMAND runtime_diff 200 1 gpu WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(gpu.differential PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77 TIMEOUT 900
                     ENVIRONMENT "FXPLAIN_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache")

# Without a GPU: cuRAND's own Philox4_32_10 code (compiled for the host by nvcc) and the GPU
# backend's generated rng kernels draw exactly the interpreter's stream. Skipped without nvcc.
add_executable(rng_dump ${CMAKE_CURRENT_LIST_DIR}/rng_dump.c)
target_link_libraries(rng_dump PRIVATE fxruntime)
find_program(FXPLAIN_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
if(NOT FXPLAIN_NVCC)
  set(FXPLAIN_NVCC "")
endif()
add_test(NAME nvrtc.curand_match
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/curand_match.sh $<TARGET_FILE:rng_dump> "${FXPLAIN_NVCC}"
                 ${CMAKE_C_COMPILER} ${CMAKE_CURRENT_BINARY_DIR}/curand_match
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(nvrtc.curand_match PROPERTIES LABELS "nvrtc" SKIP_RETURN_CODE 77)
