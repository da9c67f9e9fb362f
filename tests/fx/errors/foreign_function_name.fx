param x: f32[4, 8]
# TensorFlow's name for a sum over axes
r = reduce_sum(x, axis=1)
