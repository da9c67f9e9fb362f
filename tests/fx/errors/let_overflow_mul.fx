let n = 4294967296
let m = n * n
