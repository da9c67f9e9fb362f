# mlp.fx — one MLP layer, relu(x @ w + b): where the cuBLAS boundary sits.
#
#   build/fxplain scripts/mlp.fx            the whole walkthrough
#   build/fxplain -i scripts/mlp.fx         pause at each step, then stay in the shell

let batch = 256
param x: f32[batch, 1024]
param w: f32[1024, 4096]
param b: f32[4096]
h = matmul(x, w)
z = h + b
y = maximum(z, 0)
out y

echo == an MLP layer: relu(x @ w + b) ==
echo The matrix product is a library call (cuBLAS on a GPU, BLAS on the CPU): an opaque kernel.
show graph
render
pause
step all
echo The bias add and the ReLU fuse into one loop kernel, but not into the matmul: the product
echo must be written to memory for the elementwise kernel to read it back.
why h z
show graph
render
render --decision 1
passes --changed
