# conv.fx — a convolution layer, relu(conv2d(x, k) + b): where the cuDNN boundary sits.
#
#   build/fxplain scripts/conv.fx           the whole walkthrough
#   build/fxplain -i scripts/conv.fx        pause at each step, then stay in the shell

param x: f32[8, 56, 56, 64]        # NHWC
param k: f32[3, 3, 64, 64]         # HWIO
param b: f32[64]
c = conv2d(x, k, stride=1, pad="same")
z = c + b
y = maximum(z, 0)
out y

echo == a convolution layer: relu(conv2d(x, k) + b) ==
echo The convolution is a library call (cuDNN): the bias and ReLU cannot go inside it here.
show graph
pause
step all
why c z
show graph
render
passes --changed
