package kernels

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// stTensor is one F32 tensor of a safetensors file.
type stTensor struct {
	Shape []int
	Data  []float32
}

// readSafetensors is a minimal safetensors reader for the tests: an 8-byte
// little-endian header length, a JSON header mapping names to {dtype, shape,
// data_offsets} (offsets relative to the end of the header), then raw
// little-endian data. Only F32 is supported; __metadata__ is skipped.
func readSafetensors(path string) (map[string]stTensor, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) < 8 {
		return nil, fmt.Errorf("%s: file too short", path)
	}
	hl := binary.LittleEndian.Uint64(raw[:8])
	if hl > uint64(len(raw)-8) {
		return nil, fmt.Errorf("%s: header length %d beyond the file", path, hl)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+hl], &hdr); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	data := raw[8+hl:]
	out := make(map[string]stTensor, len(hdr))
	for name, msg := range hdr {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			Dtype       string `json:"dtype"`
			Shape       []int  `json:"shape"`
			DataOffsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		if e.Dtype != "F32" {
			return nil, fmt.Errorf("%s: tensor %s: dtype %s, only F32 supported", path, name, e.Dtype)
		}
		n := 1
		for _, s := range e.Shape {
			n *= s
		}
		lo, hi := e.DataOffsets[0], e.DataOffsets[1]
		if lo < 0 || hi < lo || hi > len(data) || hi-lo != 4*n {
			return nil, fmt.Errorf("%s: tensor %s: data_offsets %v do not hold %d floats (data %d bytes)", path, name, e.DataOffsets, n, len(data))
		}
		t := stTensor{Shape: e.Shape, Data: make([]float32, n)}
		for i := range t.Data {
			t.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[lo+4*i:]))
		}
		out[name] = t
	}
	return out, nil
}
