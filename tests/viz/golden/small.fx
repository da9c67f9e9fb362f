# The picture commands' errors: each names its place and leaves the session as it was.
param x: f32[4, 8]
y = exp(x) * 2
out y
render --format jpg
render out.gif
render --focus nope
render --computation nope
render --stage 7
render --decision 3
render --depth 0
render a.svg b.svg
render --bogus
show graph nope
report
step all
render - --format dot --focus y --depth 1
show graph
render --decision 1 - --format dot
