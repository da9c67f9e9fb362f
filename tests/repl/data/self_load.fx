echo loading myself
load tests/repl/data/self_load.fx
