param x: f32[4]
}
