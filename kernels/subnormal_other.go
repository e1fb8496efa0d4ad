//go:build !amd64 || noasm

package kernels

func flushSubnormals() func() { return func() {} }

// subnormalsFlushed reports whether the calling thread flushes subnormals:
// never here.
func subnormalsFlushed() bool { return false }
