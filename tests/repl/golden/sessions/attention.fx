# attention.fx — one attention head, softmax(q k^T / sqrt(d)) v: the engineer session of tests/repl/golden/sessions
let t = 512
let d = 64
param q: f32[t, d]
param k: f32[t, d]
param v: f32[t, d]
scores = matmul(q, transpose(k, [1, 0])) * 0.125
mx = max(scores, axis=1, keepdims=true)
p = exp(scores - mx)
l = sum(p, axis=1, keepdims=true)
w = p / l
o = matmul(w, v)
out o
