# HLO text in and out: the corpus round trip (every real dump loads, verifies and prints to a fixed
# point) and the error corpus (every malformed input gives its exact located message).
add_executable(hlo_corpus ${CMAKE_CURRENT_LIST_DIR}/hlo_corpus.c)
target_link_libraries(hlo_corpus PRIVATE fxcompiler)
add_test(NAME hlo.corpus_roundtrip COMMAND hlo_corpus WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(hlo.corpus_roundtrip PROPERTIES LABELS "hlo")

add_executable(hlo_errors ${CMAKE_CURRENT_LIST_DIR}/hlo_errors.c)
target_link_libraries(hlo_errors PRIVATE fxcompiler)
add_test(NAME hlo.error_corpus COMMAND hlo_errors ${CMAKE_CURRENT_LIST_DIR}/errors)
set_tests_properties(hlo.error_corpus PROPERTIES LABELS "hlo")
