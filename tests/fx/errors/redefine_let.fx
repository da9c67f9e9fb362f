let n = 4
let n = 5
