param x: f32[4]
const c = x
