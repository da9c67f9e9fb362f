# The HTML walkthrough in a real browser: `report` on the CartPole script, opened in headless
# Chromium (Debian's `chromium`; the test skips itself, exit 77, when it is not installed).
add_test(NAME viz.report_chromium
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/report_chromium.sh $<TARGET_FILE:fxplain> scripts/cartpole.fx
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(viz.report_chromium PROPERTIES LABELS "viz" SKIP_RETURN_CODE 77 TIMEOUT 300)
