module github.com/capstan-ml/capstan

go 1.26

require (
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/minio/simdjson-go v0.4.5
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/klauspost/compress v1.15.15 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
