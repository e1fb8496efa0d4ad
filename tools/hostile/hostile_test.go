package hostile

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// memLimitKB is the address-space limit of every tool run (ulimit -v, in
// KiB): a 4 GB board.
const memLimitKB = 4000000

// buildTools builds the commands into a temporary directory.
func buildTools(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -v and the tool binaries are tested on linux")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set ulimit -v")
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../train", "../infer", "../dump", "../quantize", "../sweep")
	cmd.Env = append(os.Environ(), "GOFLAGS=") // the tags of this test run (noasm) do not matter here
	if out, err := cmd.CombinedOutput(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			t.Skipf("no go command to build the tools: %v", err)
		}
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// config returns the JSON of preset name with edit applied to its map.
func config(t *testing.T, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(capsnet.Presets()[name].JSON()), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func caps0(m map[string]any) map[string]any { return m["caps"].([]any)[0].(map[string]any) }

func write(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// safetensorsHeader returns a safetensors file of header h and data bytes.
func safetensorsHeader(h string, data int) []byte {
	for len(h)%8 != 0 {
		h += " "
	}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(h)))
	b.WriteString(h)
	b.Write(make([]byte, data))
	return b.Bytes()
}

// idx returns an IDX file header of dims (magic for uint8 data) and the
// given payload.
func idx(dims []uint32, payload []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(payload)
	return b.Bytes()
}

func gz(b []byte) []byte {
	var o bytes.Buffer
	w, _ := gzip.NewWriterLevel(&o, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return o.Bytes()
}

// pngHeader is a PNG signature and IHDR chunk declaring w×h 8-bit gray,
// with no image data.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.Write([]byte("\x89PNG\r\n\x1a\n"))
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 0
	binary.Write(&b, binary.BigEndian, uint32(13))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// TestHostileInputUnderMemoryLimit: every case exits non-zero with one
// line on stderr that names the culprit, under ulimit -v 4000000.
func TestHostileInputUnderMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the tools (-short)")
	}
	bin := buildTools(t)
	dir := t.TempDir()
	emptyData := filepath.Join(dir, "nodata")
	os.MkdirAll(emptyData, 0o755)

	var f hostileFiles
	f.writeConfigs(t, dir)
	f.writeCheckpoints(t, dir)
	f.writeData(t, dir)
	f.writeInt8(t, dir)
	f.writeSweep(t, dir)

	for _, tc := range hostileCases(dir, &f) {
		t.Run(tc.name, func(t *testing.T) {
			runHostile(t, bin, dir, emptyData, tc)
		})
	}
}

// hostileFiles holds the paths of the hostile inputs of
// TestHostileInputUnderMemoryLimit, written under one directory.
type hostileFiles struct {
	iters, decoder, decoder2, channels, pad, capsOut string
	cfgJSON                                          []byte
	hugeTensor, metaCk, hugeBatch                    string
	bombDir, countDir, cifarDir                      string
	goodCk, bigPNG                                   string
	hugeI8, bigI8                                    string
	longLine, threads, batch, grid                   string
}

// writeConfigs writes the model configs into dir.
func (f *hostileFiles) writeConfigs(t *testing.T, dir string) {
	t.Helper()
	// Configs that would need terabytes, or panic in the graph.
	f.iters = write(t, filepath.Join(dir, "iters.json"), config(t, "sabour-small", func(m map[string]any) { caps0(m)["iters"] = 1000000000 }))
	f.decoder = write(t, filepath.Join(dir, "decoder.json"), config(t, "sabour-small", func(m map[string]any) { m["decoder"] = []int64{1 << 40, 1 << 20} }))
	f.decoder2 = write(t, filepath.Join(dir, "decoder2.json"), config(t, "sabour-small", func(m map[string]any) { m["decoder"] = []int{1 << 16, 1 << 16} }))
	f.channels = write(t, filepath.Join(dir, "channels.json"), config(t, "sabour-small", func(m map[string]any) {
		m["convs"].([]any)[0].(map[string]any)["out"] = 1 << 30
	}))
	f.pad = write(t, filepath.Join(dir, "pad.json"), config(t, "sabour-small", func(m map[string]any) {
		m["convs"].([]any)[0].(map[string]any)["pad"] = 1 << 28
	}))
	f.capsOut = write(t, filepath.Join(dir, "capsout.json"), config(t, "sabour-small", func(m map[string]any) { caps0(m)["dim"] = 1 << 24 }))
}

// writeCheckpoints writes the hostile float checkpoints and dump batch
// into dir, and keeps the JSON of the config that needs terabytes
// (f.cfgJSON).
func (f *hostileFiles) writeCheckpoints(t *testing.T, dir string) {
	t.Helper()
	// A checkpoint whose header declares one huge tensor, in a tiny file.
	f.hugeTensor = write(t, filepath.Join(dir, "huge", "checkpoint.safetensors"),
		safetensorsHeader(`{"conv1.weight":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}}`, 64))
	// A valid file whose metadata config needs terabytes.
	var meta bytes.Buffer
	f.cfgJSON = config(t, "sabour-small", func(m map[string]any) { m["decoder"] = []int{1 << 30, 1 << 20} })
	if err := safetensors.Encode(&meta, map[string]safetensors.Tensor{"x": {Shape: []int{1}, Data: []float32{0}}},
		map[string]string{"format": capsnet.CheckpointFormat, "config": string(f.cfgJSON), "epoch": "1", "step": "1", "optimizer": "optimizer-1.safetensors"}); err != nil {
		t.Fatal(err)
	}
	f.metaCk = write(t, filepath.Join(dir, "meta", "checkpoint.safetensors"), meta.Bytes())
	// A dump batch declaring a huge x.
	f.hugeBatch = write(t, filepath.Join(dir, "batch.safetensors"),
		safetensorsHeader(`{"x":{"dtype":"F32","shape":[1000000,1,28,28],"data_offsets":[0,3136000000]},"y":{"dtype":"F32","shape":[1000000],"data_offsets":[3136000000,3140000000]}}`, 8))
}

// writeData writes the hostile MNIST and CIFAR-10 directories, a valid
// checkpoint and a huge PNG into dir.
func (f *hostileFiles) writeData(t *testing.T, dir string) {
	t.Helper()
	// MNIST directories: a gzip bomb (declares and expands to 10^7 images),
	// and a raw file declaring 2^31 images in a few bytes.
	f.bombDir = filepath.Join(dir, "bomb")
	bomb := gz(idx([]uint32{10000000, 28, 28}, make([]byte, 10000000*784/50))) // 157 MB of zeros, truncated: 150 KB gzipped
	write(t, filepath.Join(f.bombDir, "train-images-idx3-ubyte.gz"), bomb)
	write(t, filepath.Join(f.bombDir, "train-labels-idx1-ubyte"), idx([]uint32{60000}, make([]byte, 60000)))
	write(t, filepath.Join(f.bombDir, "t10k-images-idx3-ubyte"), idx([]uint32{10, 28, 28}, make([]byte, 7840)))
	write(t, filepath.Join(f.bombDir, "t10k-labels-idx1-ubyte"), idx([]uint32{10}, make([]byte, 10)))
	f.countDir = filepath.Join(dir, "count")
	write(t, filepath.Join(f.countDir, "train-images-idx3-ubyte"), idx([]uint32{1 << 31, 28, 28}, make([]byte, 100)))
	write(t, filepath.Join(f.countDir, "train-labels-idx1-ubyte"), idx([]uint32{1 << 31}, make([]byte, 100)))
	write(t, filepath.Join(f.countDir, "t10k-images-idx3-ubyte"), idx([]uint32{10, 28, 28}, make([]byte, 7840)))
	write(t, filepath.Join(f.countDir, "t10k-labels-idx1-ubyte"), idx([]uint32{10}, make([]byte, 10)))
	f.cifarDir = filepath.Join(dir, "cifar")
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		write(t, filepath.Join(f.cifarDir, name), make([]byte, 3073*3+5))
	}
	// A valid checkpoint, for the cases where something else is hostile.
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	f.goodCk = filepath.Join(dir, "good", "checkpoint.safetensors")
	os.MkdirAll(filepath.Dir(f.goodCk), 0o755)
	if err := p.SaveCheckpoint(f.goodCk, map[string]string{"epoch": "1", "step": "1"}); err != nil {
		t.Fatal(err)
	}
	f.bigPNG = write(t, filepath.Join(dir, "big.png"), pngHeader(30000, 30000))
}

// writeInt8 writes the hostile int8 models into dir; it needs f.cfgJSON
// (writeCheckpoints).
func (f *hostileFiles) writeInt8(t *testing.T, dir string) {
	t.Helper()
	// int8 models: one declaring a huge I8 tensor in a tiny file, one whose
	// config needs terabytes.
	small, err := json.Marshal(string(capsnet.Presets()["tiny-deep"].JSON()))
	if err != nil {
		t.Fatal(err)
	}
	f.hugeI8 = write(t, filepath.Join(dir, "hugei8.int8.safetensors"), safetensorsHeader(`{"__metadata__":{"format":"capstan-int8/1","granularity":"capsule","config":`+string(small)+
		`},"convs.0.weight":{"dtype":"I8","shape":[1099511627776],"data_offsets":[0,1099511627776]}}`, 64))
	bigCfg, err := json.Marshal(string(f.cfgJSON))
	if err != nil {
		t.Fatal(err)
	}
	f.bigI8 = write(t, filepath.Join(dir, "bigcfg.int8.safetensors"), safetensorsHeader(`{"__metadata__":{"format":"capstan-int8/1","granularity":"capsule","config":`+string(bigCfg)+
		`},"dec.fc1.weight":{"dtype":"I8","shape":[1073741824,160],"data_offsets":[0,171798691840]}}`, 64))
}

// writeSweep writes the hostile sweep manifests and grid into dir.
func (f *hostileFiles) writeSweep(t *testing.T, dir string) {
	t.Helper()
	// Sweep manifests and grids: a line past the bound, tasks asking for a
	// million threads or a batch of 2^40, a grid of 10^9 tasks.
	task := `{"index":0,"model":"tiny-deep","arch":"tiny-deep","routing":"rba","seed":1,"data":"embedded","eval":"embedded","target":0,"epochs":1,"batch":64,"threads":1,"dir":"runs/0","result":"results/0.json"}`
	f.longLine = write(t, filepath.Join(dir, "long", "manifest.ndjson"), []byte(`{"index":0,"model":"`+strings.Repeat("x", 1<<20)+`"}`+"\n"))
	f.threads = write(t, filepath.Join(dir, "threads", "manifest.ndjson"), []byte(strings.Replace(task, `"threads":1`, `"threads":1000000`, 1)+"\n"))
	f.batch = write(t, filepath.Join(dir, "batch", "manifest.ndjson"), []byte(strings.Replace(task, `"batch":64`, `"batch":1099511627776`, 1)+"\n"))
	f.grid = write(t, filepath.Join(dir, "grid.json"), []byte(`{"depths":[1,2,3,4,5,6,7,8,9,10],"capsules":[`+strings.TrimSuffix(strings.Repeat("16,", 10000), ",")+`],"dims":[8],"routing":["rba"],"seeds":[`+strings.TrimSuffix(strings.Repeat("1,", 10000), ",")+`],"data":"embedded","eval":"embedded","epochs":1,"batch":64,"threads":1}`))
}

// hostileCase is one tool run of TestHostileInputUnderMemoryLimit.
type hostileCase struct {
	name string
	args []string
	want string // in the one line of stderr
}

// hostileCases returns the tool runs on the inputs f written under dir.
func hostileCases(dir string, f *hostileFiles) []hostileCase {
	out := filepath.Join(dir, "out")
	// Where int has 32 bits, a decoder of 2^16×2^16 weights is past an
	// int: its config is refused, naming the file, before the memory limit.
	decoder2 := "CAPSTAN_MAX_MEMORY"
	if strconv.IntSize == 32 {
		decoder2 = "decoder2.json"
	}
	return []hostileCase{
		{"train config iters", []string{"train", "-model", f.iters, "-out", out}, "iters"},
		{"train config decoder", []string{"train", "-model", f.decoder, "-out", out}, "decoder.json"},
		{"train config decoder 2^16", []string{"train", "-model", f.decoder2, "-out", out}, decoder2},
		{"train config channels", []string{"train", "-model", f.channels, "-out", out}, "channels.json"},
		{"train config pad", []string{"train", "-model", f.pad, "-out", out}, "pad.json"},
		{"train config capsule dim", []string{"train", "-model", f.capsOut, "-out", out}, "capsout.json"},
		{"train -batch 100000", []string{"train", "-batch", "100000", "-out", out}, "-batch"},
		{"train -batch 2^40", []string{"train", "-batch", "1099511627776", "-out", out}, "-batch"},
		{"train -threads 10^6", []string{"train", "-threads", "1000000", "-out", out}, "-threads"},
		{"train -threads 4096 -batch 4096", []string{"train", "-threads", "4096", "-batch", "4096", "-out", out}, "-threads 4096 (-batch 4096)"},
		{"train -threads 256 -batch 65536", []string{"train", "-threads", "256", "-batch", "65536", "-out", out}, "-threads 256, -batch 65536"},
		{"infer -threads 1000 -batch 1000", []string{"infer", "-checkpoint", f.goodCk, "-threads", "1000", "-batch", "1000"}, "-threads 1000 (-batch 1000)"},
		// 256 replicas of 3907 images (tiny-deep's inference Nets hold
		// one chunk of 8 images of each intermediate convolution output,
		// so 100000 images fit under the limit of 1.9 GiB).
		{"infer -threads 256 -batch 1000000", []string{"infer", "-checkpoint", f.goodCk, "-threads", "256", "-batch", "1000000"}, "-threads 256, -batch 1000000"},
		{"quantize -threads 1000 -batch 1000", []string{"quantize", "-checkpoint", f.goodCk, "-threads", "1000", "-batch", "1000"}, "-threads 1000 (-batch 1000)"},
		{"train -epochs -1", []string{"train", "-epochs", "-1", "-out", out}, "-epochs"},
		{"train -lr inf", []string{"train", "-lr", "inf", "-out", out}, "-lr"},
		{"train -resume huge tensor", []string{"train", "-resume", filepath.Dir(f.hugeTensor)}, "checkpoint.safetensors"},
		{"train -resume huge config", []string{"train", "-resume", filepath.Dir(f.metaCk)}, "checkpoint.safetensors"},
		{"train gzip bomb", []string{"train", "-data", "mnist", "-data-dir", f.bombDir, "-out", out}, "train-images-idx3-ubyte"},
		{"train IDX count 2^31", []string{"train", "-data", "mnist", "-data-dir", f.countDir, "-out", out}, "train-images-idx3-ubyte"},
		{"train CIFAR size", []string{"train", "-data", "cifar10", "-data-dir", f.cifarDir, "-out", out}, "data_batch_1.bin"},
		{"infer huge tensor", []string{"infer", "-checkpoint", f.hugeTensor}, "checkpoint.safetensors"},
		{"infer huge config", []string{"infer", "-checkpoint", f.metaCk}, "checkpoint.safetensors"},
		{"infer -batch 2^40", []string{"infer", "-checkpoint", f.goodCk, "-batch", "1099511627776"}, "-batch"},
		{"infer huge PNG", []string{"infer", "-checkpoint", f.goodCk, "-image", f.bigPNG}, "big.png"},
		{"infer int8 huge tensor", []string{"infer", "-checkpoint", f.hugeI8}, "hugei8.int8.safetensors"},
		{"infer int8 huge config", []string{"infer", "-checkpoint", f.bigI8}, "bigcfg.int8.safetensors"},
		{"quantize huge tensor", []string{"quantize", "-checkpoint", f.hugeTensor}, "checkpoint.safetensors"},
		{"quantize huge config", []string{"quantize", "-checkpoint", f.metaCk}, "checkpoint.safetensors"},
		{"quantize int8 as float", []string{"quantize", "-checkpoint", f.hugeI8}, "hugei8.int8.safetensors"},
		{"quantize -calib-images 10^9", []string{"quantize", "-checkpoint", f.goodCk, "-calib-images", "1000000000"}, "-calib-images"},
		{"dump huge tensor", []string{"dump", "-weights", f.hugeTensor, "-batch", f.hugeBatch, "-out", filepath.Join(dir, "d.safetensors")}, "checkpoint.safetensors"},
		{"sweep run manifest line 1 MiB", []string{"sweep", "run", "-manifest", f.longLine, "-index", "0"}, "line 1: longer than"},
		{"sweep run manifest -threads 10^6", []string{"sweep", "run", "-manifest", f.threads, "-index", "0"}, "field threads"},
		{"sweep run manifest -batch 2^40", []string{"sweep", "run", "-manifest", f.batch, "-index", "0"}, "field batch"},
		{"sweep plan grid 10^9 tasks", []string{"sweep", "plan", "-grid", f.grid, "-out", out}, "tasks"},
		{"dump huge batch", []string{"dump", "-weights", f.goodCk, "-batch", f.hugeBatch, "-out", filepath.Join(dir, "d.safetensors")}, "batch.safetensors"},
	}
}

// runHostile runs tc with the tools in bin under ulimit -v memLimitKB, in
// dir with CAPSTAN_DATA=emptyData, and checks it exits non-zero (not by a
// signal, a panic or running out of memory) with one line on stderr that
// contains tc.want.
func runHostile(t *testing.T, bin, dir, emptyData string, tc hostileCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"-c", `ulimit -v ` + itoa(memLimitKB) + ` && exec "$0" "$@"`, filepath.Join(bin, tc.args[0])}, tc.args[1:]...)
	cmd := exec.CommandContext(ctx, "sh", args...)
	cmd.Env = append(os.Environ(), "CAPSTAN_DATA="+emptyData, "HOME="+dir)
	cmd.Dir = dir
	var stderr, stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	err := cmd.Run()
	msg := strings.TrimSpace(stderr.String())
	var ee *exec.ExitError
	switch {
	case err == nil:
		t.Fatalf("exit 0; want a refusal. stdout:\n%s", stdout.String())
	case errors.Is(err, syscall.ENOEXEC) || strings.Contains(msg, "Exec format error"):
		t.Skipf("cannot run the built tools here (qemu-user without binfmt): %v", err)
	case !errors.As(err, &ee):
		t.Fatalf("%v", err)
	case ctx.Err() != nil:
		t.Fatalf("still running after 2 minutes; stderr:\n%s", msg)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("killed by %v; stderr:\n%s", ws.Signal(), msg)
	}
	for _, bad := range []string{"panic", "fatal error", "goroutine ", "out of memory"} {
		if strings.Contains(msg, bad) {
			t.Fatalf("died (%q), exit %d:\n%s", bad, ee.ExitCode(), msg)
		}
	}
	if strings.Count(msg, "\n") != 0 || msg == "" {
		t.Errorf("stderr is not one line:\n%s", msg)
	}
	if !strings.Contains(msg, tc.want) {
		t.Errorf("stderr %q does not name %q", msg, tc.want)
	}
	t.Logf("exit %d: %s", ee.ExitCode(), msg)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
