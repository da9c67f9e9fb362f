# The shell's own tests (repl/): the interactive shell driven in a pseudo-terminal, and the
# command error corpus (each malformed command's exact message and exit status).
find_library(UTIL_LIBRARY util)
add_executable(pty_shell ${CMAKE_CURRENT_LIST_DIR}/pty_shell.c)
if(UTIL_LIBRARY)
  target_link_libraries(pty_shell PRIVATE ${UTIL_LIBRARY})
endif()
add_test(NAME repl.pty_shell
         COMMAND pty_shell $<TARGET_FILE:fxplain> ${CMAKE_BINARY_DIR}/pty_shell_home
                 ${CMAKE_SOURCE_DIR}/tests/repl/data/small.hlo ${CMAKE_SOURCE_DIR}/scripts/cartpole.fx
                 ${CMAKE_SOURCE_DIR}/tests/data/hlo-corpus/gemma2_2b_keras_jax.hlo
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(repl.pty_shell PROPERTIES LABELS "repl" SKIP_RETURN_CODE 77 TIMEOUT 120)

add_test(NAME repl.command_errors
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_corpus.sh $<TARGET_FILE:fxplain>
                 ${CMAKE_CURRENT_LIST_DIR}/command_errors.txt
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(repl.command_errors PROPERTIES LABELS "repl" TIMEOUT 300)

# The command parser's fuzz target: a libFuzzer binary with -DFXPLAIN_FUZZ=ON (clang), else a
# replay of its seeds and of the command error corpus's inputs as a test.
if(FXPLAIN_FUZZ)
  add_executable(fuzz_commands ${CMAKE_CURRENT_LIST_DIR}/fuzz_commands.c)
  target_link_options(fuzz_commands PRIVATE -fsanitize=fuzzer)
else()
  add_executable(fuzz_commands ${CMAKE_CURRENT_LIST_DIR}/fuzz_commands.c
                               ${CMAKE_SOURCE_DIR}/tests/fuzz/replay_main.c)
  add_test(NAME fuzz.replay_commands
           COMMAND fuzz_commands ${CMAKE_CURRENT_LIST_DIR}/fuzz_seeds ${CMAKE_CURRENT_LIST_DIR}/data
                   ${CMAKE_CURRENT_LIST_DIR}/command_errors.txt)
  set_tests_properties(fuzz.replay_commands PROPERTIES LABELS "fuzz;repl")
endif()
target_link_libraries(fuzz_commands PRIVATE fxrepl)
