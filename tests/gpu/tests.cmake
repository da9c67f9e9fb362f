# GPU tests. Label "nvrtc": compiles kernels with NVRTC and reads their ptxas figures; needs the
# CUDA toolkit, not a GPU, so it runs in CI. Label "gpu": runs on a real GPU (`ctest -L gpu`);
# without one each test prints why and exits 77, which ctest reports as skipped.
set_property(TEST unit.test_cuda APPEND PROPERTY LABELS nvrtc)

add_executable(gpu_run ${CMAKE_CURRENT_LIST_DIR}/gpu_run.c)
target_include_directories(gpu_run PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gpu_run PRIVATE fxrepl)
add_test(NAME gpu.runtime COMMAND gpu_run WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(gpu.runtime PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
