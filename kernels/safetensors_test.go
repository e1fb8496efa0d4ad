package kernels

import "github.com/capstan-ml/capstan/capsnet/safetensors"

// stTensor is one F32 tensor of an oracle file.
type stTensor = safetensors.Tensor

// readSafetensors reads the tensors of an oracle file with the project's
// validating reader (capsnet/safetensors, a leaf package: no import cycle).
func readSafetensors(path string) (map[string]stTensor, error) {
	f, err := safetensors.Read(path)
	if err != nil {
		return nil, err
	}
	return f.Tensors, nil
}
