u = rand(4)
