param x: u8[4]
y = x + 300
