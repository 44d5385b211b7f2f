module gpusched.example/place

go 1.19
