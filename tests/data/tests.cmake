# Test data kept in the repository. The HLO corpus (tests/data/hlo-corpus, Apache-2.0 data from
# openxla/xla: see its SOURCE.md) is read by the corpus tests in hlo/, pipeline/, fusion/, runtime/,
# gpu/ and unit/; this checks every file is there and unchanged.
add_test(NAME data.hlo_corpus COMMAND sha256sum --check --quiet --strict SHA256SUMS
         WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/hlo-corpus)
set_tests_properties(data.hlo_corpus PROPERTIES LABELS "data")
