package data

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"testing/fstest"

	"github.com/capstan-ml/capstan"
)

// writeMNISTDir writes the four standard files into dir: the train split
// raw, the test split gzipped (with .gz names), and returns the content.
func writeMNISTDir(t *testing.T, dir string, nTrain, nTest int) (tr, te *IDXImages, trL, teL []uint8) {
	t.Helper()
	tr, trL = randomIDX(10, nTrain, 28, 28)
	te, teL = randomIDX(11, nTest, 28, 28)
	a, b := idxBytes(t, tr, trL)
	writeFile(t, filepath.Join(dir, mnistTrainImages), a)
	writeFile(t, filepath.Join(dir, mnistTrainLabels), b)
	a, b = idxBytes(t, te, teL)
	writeFile(t, filepath.Join(dir, mnistTestImages+".gz"), gzipBytes(t, a))
	writeFile(t, filepath.Join(dir, mnistTestLabels+".gz"), gzipBytes(t, b))
	return
}

func checkAgainst(t *testing.T, d *Dataset, img *IDXImages, labels []uint8, name string) {
	t.Helper()
	if d.Name != name || d.N != img.N || d.C != 1 || d.H != 28 || d.W != 28 || d.Classes != 10 {
		t.Fatalf("%s: got %q %d×%d×%d×%d classes %d", name, d.Name, d.N, d.C, d.H, d.W, d.Classes)
	}
	for i, p := range img.Pix {
		if d.X[i] != float32(p)/255 {
			t.Fatalf("%s: pixel %d = %v, want %d/255", name, i, d.X[i], p)
		}
	}
	for i := range labels {
		if d.Y[i] != labels[i] {
			t.Fatalf("%s: label %d = %d, want %d", name, i, d.Y[i], labels[i])
		}
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadMNISTDir(t *testing.T) {
	dir := t.TempDir()
	tr, te, trL, teL := writeMNISTDir(t, dir, 9, 4)
	dtr, dte, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainst(t, dtr, tr, trL, "mnist-train")
	checkAgainst(t, dte, te, teL, "mnist-test")
	ftr, _, err := LoadFashionMNIST(dir)
	if err != nil || ftr.Name != "fashion-mnist-train" {
		t.Fatalf("fashion: %v", err)
	}

	s, err := dtr.Slice(2, 5)
	if err != nil || s.N != 3 || &s.X[0] != &dtr.X[2*784] || s.Y[0] != dtr.Y[2] {
		t.Errorf("Slice(2,5): %v", err)
	}
	if _, err := dtr.Slice(5, 10); err == nil {
		t.Error("Slice(5,10) of 9 images: no error")
	}
	im := dtr.Image(3)
	if im.H != 28 || &im.Pix[0] != &dtr.X[3*784] || len(im.Pix) != 784 {
		t.Error("Image(3) is not the view of image 3")
	}
}

func TestLoadMNISTErrors(t *testing.T) {
	// label count differs from image count
	dir := t.TempDir()
	writeMNISTDir(t, dir, 9, 4)
	_, lbl := idxBytes(t, nil, make([]uint8, 8))
	writeFile(t, filepath.Join(dir, mnistTrainLabels), lbl)
	_, _, err := LoadMNIST(dir)
	wantErr(t, err, filepath.Join(dir, mnistTrainLabels), filepath.Join(dir, mnistTrainImages), "8 labels", "9 images")

	// label out of range
	dir = t.TempDir()
	writeMNISTDir(t, dir, 9, 4)
	bad := make([]uint8, 9)
	bad[7] = 12
	_, lbl = idxBytes(t, nil, bad)
	writeFile(t, filepath.Join(dir, mnistTrainLabels), lbl)
	_, _, err = LoadMNIST(dir)
	wantErr(t, err, filepath.Join(dir, mnistTrainLabels), "label 12", "item 7", "0..9")

	// missing file
	dir = t.TempDir()
	writeMNISTDir(t, dir, 9, 4)
	_, _, err = LoadMNIST(filepath.Join(dir, "elsewhere"))
	wantErr(t, err, "elsewhere")
	writeFile(t, filepath.Join(dir, mnistTestImages+".gz"), []byte{1, 2, 3, 4, 5})
	_, _, err = LoadMNIST(dir)
	wantErr(t, err, filepath.Join(dir, mnistTestImages+".gz"), "bad magic", "mnist-test")
}

func TestEmbeddedMNIST(t *testing.T) {
	tr, te, err := LoadEmbeddedMNIST()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d *Dataset
		n int
	}{{tr, 6000}, {te, 1000}} {
		d := c.d
		if d.N != c.n || d.C != 1 || d.H != 28 || d.W != 28 {
			t.Fatalf("%s: %d×%d×%d×%d, want %d×1×28×28", d.Name, d.N, d.C, d.H, d.W, c.n)
		}
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
		var count [10]int
		for _, y := range d.Y {
			count[y]++
		}
		for k, n := range count {
			if n == 0 {
				t.Errorf("%s: no digit %d", d.Name, k)
			}
		}
		// real digits: some ink, mostly background, and full-intensity strokes
		var ink float64
		var maxv float32
		for _, v := range d.X[:784*100] {
			ink += float64(v)
			maxv = max(maxv, v)
		}
		if mean := ink / (784 * 100); mean < 0.05 || mean > 0.3 || maxv != 1 {
			t.Errorf("%s: mean pixel %.3f, max %v: not MNIST-like", d.Name, mean, maxv)
		}
	}
	// the well-known first labels of MNIST's splits
	if tr.Y[0] != 5 || tr.Y[1] != 0 || tr.Y[2] != 4 || te.Y[0] != 7 || te.Y[1] != 2 {
		t.Errorf("first labels %v / %v, want 5 0 4 … / 7 2 …", tr.Y[:3], te.Y[:2])
	}
}

// writeCIFAR writes files of the given record counts; record r of file f
// has label (f+r)%10 and pixel k = (f·7 + r·3 + k) % 256.
func writeCIFAR(t *testing.T, dir string, files []string, records []int) {
	t.Helper()
	for f, name := range files {
		raw := make([]byte, records[f]*cifarRecord)
		for r := 0; r < records[f]; r++ {
			rec := raw[r*cifarRecord : (r+1)*cifarRecord]
			rec[0] = byte((f + r) % 10)
			for k := 1; k < cifarRecord; k++ {
				rec[k] = byte((f*7 + r*3 + k - 1) % 256)
			}
		}
		writeFile(t, filepath.Join(dir, name), raw)
	}
}

func cifarNames() []string {
	var names []string
	for i := 1; i <= 5; i++ {
		names = append(names, "data_batch_"+strconv.Itoa(i)+".bin")
	}
	return append(names, "test_batch.bin")
}

func TestLoadCIFAR10(t *testing.T) {
	dir := t.TempDir()
	counts := []int{3, 2, 1, 2, 3, 4}
	writeCIFAR(t, dir, cifarNames(), counts)
	tr, te, err := LoadCIFAR10(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != 11 || te.N != 4 || tr.C != 3 || tr.H != 32 || tr.W != 32 || tr.Name != "cifar10-train" {
		t.Fatalf("got %s %d×%d×%d×%d and %d test images", tr.Name, tr.N, tr.C, tr.H, tr.W, te.N)
	}
	check := func(d *Dataset, i, f, r int) {
		t.Helper()
		if d.Y[i] != uint8((f+r)%10) {
			t.Errorf("%s image %d: label %d, want %d", d.Name, i, d.Y[i], (f+r)%10)
		}
		im := d.Image(i)
		// CHW: channel c, row y, column x is byte 1 + c·1024 + y·32 + x
		for _, c := range [][3]int{{0, 0, 0}, {1, 5, 7}, {2, 31, 31}} {
			k := c[0]*1024 + c[1]*32 + c[2]
			want := float32((f*7+r*3+k)%256) / 255
			if got := im.Pix[k]; got != want {
				t.Errorf("%s image %d (c,y,x)=%v: %v, want %v", d.Name, i, c, got, want)
			}
		}
	}
	check(tr, 0, 0, 0)
	check(tr, 4, 1, 1) // file 2's second record: after 3 records of file 1
	check(tr, 10, 4, 2)
	check(te, 3, 5, 3)
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}

	// the archive's own subdirectory is found
	sub := t.TempDir()
	writeCIFAR(t, filepath.Join(sub, "cifar-10-batches-bin"), cifarNames(), counts)
	if _, _, err := LoadCIFAR10(sub); err != nil {
		t.Error(err)
	}

	// truncated record: file 3 ends 100 bytes into its third record
	bad := t.TempDir()
	writeCIFAR(t, bad, cifarNames(), counts)
	p := filepath.Join(bad, "data_batch_3.bin")
	raw := make([]byte, 2*cifarRecord+100)
	writeFile(t, p, raw)
	_, _, err = LoadCIFAR10(bad)
	wantErr(t, err, p, "truncated", "record 2", "100 of 3073 bytes")

	// label out of range
	raw = make([]byte, cifarRecord)
	raw[0] = 10
	writeFile(t, p, raw)
	_, _, err = LoadCIFAR10(bad)
	wantErr(t, err, p, "record 0", "label 10")

	// missing file
	miss := t.TempDir()
	writeCIFAR(t, miss, cifarNames()[:5], counts)
	_, _, err = LoadCIFAR10(miss)
	wantErr(t, err, "test_batch.bin")
}

func TestNewDatasetAndValidate(t *testing.T) {
	if _, err := NewDataset("x", 1, 0, 2, 2, 10); err == nil {
		t.Error("zero channels: no error")
	}
	d, err := NewDataset("x", 3, 2, 4, 5, 10)
	if err != nil || len(d.X) != 120 || len(d.Y) != 3 {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range d.X {
		d.X[i] = rng.Float32()
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	d.X[7] = 1.5
	wantErr(t, d.Validate(), "pixel 7 of image 0")
	d.X[7] = 0
	d.Y[2] = 10
	wantErr(t, d.Validate(), "label 10 of image 2")
}

// mnistFS returns the four standard files of a small MNIST-format data set
// (the first nTrain and nTest digits of the embedded MNIST, raw), for
// fstest.MapFS tests.
func mnistFS(t testing.TB, nTrain, nTest int) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, s := range []struct {
		img, lbl string
		n        int
	}{{mnistTrainImages, mnistTrainLabels, nTrain}, {mnistTestImages, mnistTestLabels, nTest}} {
		img, err := ReadIDXImagesFS(capstan.EmbeddedMNIST, s.img+".gz")
		if err != nil {
			t.Fatal(err)
		}
		lbl, err := ReadIDXLabelsFS(capstan.EmbeddedMNIST, s.lbl+".gz")
		if err != nil {
			t.Fatal(err)
		}
		sub := &IDXImages{N: s.n, Rows: img.Rows, Cols: img.Cols, Pix: img.Pix[:s.n*img.Rows*img.Cols]}
		var a, b bytes.Buffer
		if err := WriteIDXImages(&a, sub); err != nil {
			t.Fatal(err)
		}
		if err := WriteIDXLabels(&b, lbl[:s.n]); err != nil {
			t.Fatal(err)
		}
		fsys[s.img] = &fstest.MapFile{Data: a.Bytes()}
		fsys[s.lbl] = &fstest.MapFile{Data: b.Bytes()}
	}
	return fsys
}

// TestLoadMNISTFSErrors: the embedded-data loader goes through the same
// readers: every bad file is an error naming it, a gzip bomb included.
func TestLoadMNISTFSErrors(t *testing.T) {
	good := mnistFS(t, 5, 3)
	tr, te, err := LoadMNISTFS(good, ".", "small")
	if err != nil || tr.N != 5 || te.N != 3 || tr.Y[0] != 5 || te.Y[0] != 7 {
		t.Fatalf("small set: %v", err)
	}
	with := func(name string, data []byte) fstest.MapFS {
		fsys := fstest.MapFS{}
		for k, v := range good {
			fsys[k] = v
		}
		fsys[name] = &fstest.MapFile{Data: data}
		return fsys
	}
	lbl := func(labels ...uint8) []byte {
		_, b := idxBytes(t, nil, labels)
		return b
	}
	gzImages := gzipBytes(t, good[mnistTestImages].Data)
	for _, c := range []struct {
		fsys fstest.MapFS
		want []string
	}{
		{with(mnistTrainLabels, lbl(1, 2, 3, 4)), []string{"loading small-train", "file train-labels-idx1-ubyte has 4 labels but file train-images-idx3-ubyte has 5 images"}},
		{with(mnistTestLabels, lbl(1, 2, 10)), []string{"loading small-test", "file t10k-labels-idx1-ubyte: label 10 of item 2 is outside 0..9"}},
		{with(mnistTrainLabels, idxHeader(20_000_000, 0, 0, true)), []string{"file train-labels-idx1-ubyte: declares 20000000 labels, more than the limit of 10000000 (data.MaxImages)"}},
		{with(mnistTestImages, good[mnistTestImages].Data[:1000]), []string{"file t10k-images-idx3-ubyte: truncated: declares 3 images of 28×28 but holds 1"}},
		{with(mnistTestImages, gzImages[:len(gzImages)-10]), []string{"file t10k-images-idx3-ubyte: truncated"}},
		{with(mnistTrainImages, good[mnistTrainLabels].Data), []string{"file train-images-idx3-ubyte: bad magic 2049"}},
	} {
		_, _, err := LoadMNISTFS(c.fsys, ".", "small")
		wantErr(t, err, c.want...)
		oneLine(t, err)
	}

	// a gzip bomb as the training images: about 100 KB declaring 10
	// images and expanding to 100 MB, refused without reading it whole
	if testing.Short() {
		return
	}
	fsys := with(mnistTrainImages, nil)
	delete(fsys, mnistTrainImages)
	fsys[mnistTrainImages+".gz"] = &fstest.MapFile{Data: zeroBomb(t, idxHeader(10, 28, 28, false), 100<<20)}
	alloc := allocated(func() { _, _, err = LoadMNISTFS(fsys, ".", "small") })
	wantErr(t, err, "file train-images-idx3-ubyte.gz: data after the 10 images of 28×28 the header declares")
	if alloc > 4<<20 {
		t.Errorf("gzip bomb through LoadMNISTFS: allocated %d bytes", alloc)
	}
}

// noSizeFS hides the size of its files (no Seek), as a pipe or a network
// file system would: readers must then read with a bound.
type noSizeFS struct{ fs.FS }

func (f noSizeFS) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return struct{ fs.File }{file}, nil
}

// cifarFS returns the six CIFAR-10 files with the given record counts.
func cifarFS(t testing.TB, counts []int) fstest.MapFS {
	fsys := fstest.MapFS{}
	for f, name := range cifarNames() {
		raw := make([]byte, counts[f]*cifarRecord)
		for r := 0; r < counts[f]; r++ {
			raw[r*cifarRecord] = byte((f + r) % 10)
			for k := 1; k < cifarRecord; k++ {
				raw[r*cifarRecord+k] = byte(f*7 + r*3 + k)
			}
		}
		fsys[name] = &fstest.MapFile{Data: raw}
	}
	return fsys
}

// TestCIFAR10Limits: record counts and file sizes are checked against
// MaxImages and MaxFileBytes before the records are read when the size is
// known, and with a bounded read otherwise; errors name the file.
func TestCIFAR10Limits(t *testing.T) {
	defer func(n int, b int64) { MaxImages, MaxFileBytes = n, b }(MaxImages, MaxFileBytes)
	fsys := cifarFS(t, []int{3, 2, 1, 2, 3, 4})
	for _, sized := range []bool{true, false} {
		var f fs.FS = fsys
		if !sized {
			f = noSizeFS{fsys}
		}
		MaxImages, MaxFileBytes = 1000, 1<<30
		tr, te, err := LoadCIFAR10FS(f)
		if err != nil || tr.N != 11 || te.N != 4 {
			t.Fatalf("sized %v: %v", sized, err)
		}
		if err := tr.Validate(); err != nil {
			t.Fatal(err)
		}

		MaxImages = 4 // the split's 4th and 5th records are in data_batch_2.bin
		_, _, err = LoadCIFAR10FS(f)
		wantErr(t, err, "loading cifar10-train", "file data_batch_2.bin: 2 records make the split more than the limit of 4 images (data.MaxImages)")
		oneLine(t, err)

		MaxImages, MaxFileBytes = 1000, 2*cifarRecord
		var alloc uint64
		alloc = allocated(func() { _, _, err = LoadCIFAR10FS(f) })
		wantErr(t, err, "file data_batch_1.bin: more than the limit of 6146 bytes (data.MaxFileBytes)")
		if alloc > 1<<20 {
			t.Errorf("sized %v: allocated %d bytes", sized, alloc)
		}
		MaxFileBytes = 1 << 30

		bad := cifarFS(t, []int{3, 2, 1, 2, 3, 4})
		bad["test_batch.bin"] = &fstest.MapFile{Data: bad["test_batch.bin"].Data[:3*cifarRecord+7]}
		f = bad
		if !sized {
			f = noSizeFS{bad}
		}
		_, _, err = LoadCIFAR10FS(f)
		wantErr(t, err, "loading cifar10-test", "file test_batch.bin: truncated: record 3 has 7 of 3073 bytes")
	}
}
