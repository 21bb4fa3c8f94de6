module github.com/omprpc/omprpc/bindings/go

go 1.24
