module planfold.example/host

go 1.19
