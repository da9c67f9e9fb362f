# The HTML walkthrough in a real browser: `report` on the CartPole script, opened in headless
# Chromium (Debian's `chromium`; the test skips itself, exit 77, when it is not installed).
add_test(NAME viz.report_chromium
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/report_chromium.sh $<TARGET_FILE:fxplain> scripts/cartpole.fx
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(viz.report_chromium PROPERTIES LABELS "viz" SKIP_RETURN_CODE 77 TIMEOUT 300)

# Refused-candidate edges routed around the fusion boxes that hold neither end, measured on the SVG
# of 16 pictures (teaching scripts, real modules, both pipelines): at most 12 cross one (33 before
# the candidates that follow the data were ranked with it).
add_test(NAME viz.refused_edges_around_boxes
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/refused_edges.sh $<TARGET_FILE:fxplain> 5
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(viz.refused_edges_around_boxes PROPERTIES LABELS "viz" TIMEOUT 300)
