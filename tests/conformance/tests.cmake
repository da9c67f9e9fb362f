# XLA's own GPU fusion unit tests as a conformance suite (label xla; issue 14, item 4). Each
# tests/conformance/NAME.txt ports one XLA test file (its HLO and its assertions as facts; sources in
# SOURCE.md); `conformance` runs each case through the matching fxplain pass and prints per file
# passed/total and every failing case with the reason. The floors are the counts reached: a change
# that loses a passing case fails the test; raise them as conformance grows.
add_executable(conformance ${CMAKE_CURRENT_LIST_DIR}/conformance.c)
target_link_libraries(conformance PRIVATE fxruntime fxcompiler)
set(FXPLAIN_CONFORMANCE_FLOORS
    # FuseProducerConsumerMergedNotTooLarge comes from an XLA newer than the jaxlib 0.10.2 one the
    # corpus references were made with: it no longer limits basic-block splits, which 0.10.2 still
    # does (dropping the limit loses 457 of XLA's ineligible verdicts in tests/xla's replay).
    --at-least priority_fusion.txt=35
    --at-least multi_output_fusion.txt=49
    --at-least instruction_fusion.txt=26
    --at-least fusion_merger.txt=12
    --at-least multi_output_fusion_2021.txt=26
    --at-least horizontal_loop_fusion.txt=11
    --at-least fusion_pipeline.txt=3
    --at-least gpu_fusible_2021.txt=42
    --at-least gpu_fusible_today.txt=69)
set(FXPLAIN_CONFORMANCE_FILES)
file(GLOB FXPLAIN_CONFORMANCE_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.txt)
add_test(NAME xla.conformance
         COMMAND conformance ${FXPLAIN_CONFORMANCE_FLOORS} ${FXPLAIN_CONFORMANCE_FILES}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(xla.conformance PROPERTIES LABELS "xla")
