module github.com/capstan-ml/capstan/asm/_gen

go 1.26
