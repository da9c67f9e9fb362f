# The engine's own front end (front_end.c): drives explain/engine.h with no shell. It links the
# engine and the compiler only, so a call that needs repl/, viz/ or runtime/ fails to link.
add_executable(engine_front_end ${CMAKE_CURRENT_LIST_DIR}/front_end.c)
target_link_libraries(engine_front_end PRIVATE fxexplain)
add_test(NAME engine.front_end COMMAND engine_front_end WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(engine.front_end PROPERTIES LABELS "unit")
