echo nested script
load tests/repl/data/bad_command.fx
echo not reached
