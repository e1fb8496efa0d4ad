module github.com/capstan-ml/capstan/bench

// bench holds benchmark results and the committed training runs
// (bench/repro). It is a module of its own so that the module zip of
// github.com/capstan-ml/capstan, which go get downloads, leaves it out.

go 1.26.0
