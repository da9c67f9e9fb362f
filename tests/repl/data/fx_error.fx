param x: f32[4]
echo defined x
y = x * 2
z = y + undefined_name
out z
