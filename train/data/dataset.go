package data

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/capstan-ml/capstan"
)

// Dataset is a labelled image set held in memory: N images of C×H×W
// float32 pixels in [0,1], NCHW (image after image, channel planes of H
// rows of W pixels), and one label per image in 0..Classes-1.
type Dataset struct {
	Name       string // e.g. "mnist-train"; used in reports and errors
	N, C, H, W int
	Classes    int       // number of classes (10 for every dataset here)
	X          []float32 // len N·C·H·W, NCHW, values in [0,1]
	Y          []uint8   // len N, values in 0..Classes-1
}

// NewDataset allocates a zeroed dataset of n images of c×h×w pixels.
func NewDataset(name string, n, c, h, w, classes int) (*Dataset, error) {
	if n < 0 || c <= 0 || h <= 0 || w <= 0 || classes <= 0 || classes > 256 {
		return nil, fmt.Errorf("data: NewDataset %q: bad shape n=%d c=%d h=%d w=%d classes=%d", name, n, c, h, w, classes)
	}
	return &Dataset{
		Name: name, N: n, C: c, H: h, W: w, Classes: classes,
		X: make([]float32, n*c*h*w),
		Y: make([]uint8, n),
	}, nil
}

// ImageSize is the number of float32 values of one image, C·H·W.
func (d *Dataset) ImageSize() int { return d.C * d.H * d.W }

// Image returns image i as a view into d.X (not a copy). It panics if i is
// out of range, like a slice index.
func (d *Dataset) Image(i int) Image {
	sz := d.ImageSize()
	return Image{C: d.C, H: d.H, W: d.W, Pix: d.X[i*sz : (i+1)*sz : (i+1)*sz]}
}

// Slice returns the images lo..hi-1 as a dataset sharing d's memory, named
// after d with the range appended. Use it to split a validation set off
// the training set.
func (d *Dataset) Slice(lo, hi int) (*Dataset, error) {
	if lo < 0 || hi < lo || hi > d.N {
		return nil, fmt.Errorf("data: %s: slice [%d:%d] out of range of %d images", d.Name, lo, hi, d.N)
	}
	sz := d.ImageSize()
	return &Dataset{
		Name: d.Name + "[" + strconv.Itoa(lo) + ":" + strconv.Itoa(hi) + "]",
		N:    hi - lo, C: d.C, H: d.H, W: d.W, Classes: d.Classes,
		X: d.X[lo*sz : hi*sz : hi*sz],
		Y: d.Y[lo:hi:hi],
	}, nil
}

// Validate checks that the slices match the shape, the pixels are in [0,1]
// and the labels in range.
func (d *Dataset) Validate() error {
	if d.N < 0 || d.C <= 0 || d.H <= 0 || d.W <= 0 || d.Classes <= 0 {
		return fmt.Errorf("data: %s: bad shape n=%d c=%d h=%d w=%d classes=%d", d.Name, d.N, d.C, d.H, d.W, d.Classes)
	}
	if len(d.X) != d.N*d.ImageSize() || len(d.Y) != d.N {
		return fmt.Errorf("data: %s: %d pixels and %d labels for %d images of %d×%d×%d", d.Name, len(d.X), len(d.Y), d.N, d.C, d.H, d.W)
	}
	for i, v := range d.X {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("data: %s: pixel %d of image %d is %v, outside [0,1]", d.Name, i%d.ImageSize(), i/d.ImageSize(), v)
		}
	}
	for i, y := range d.Y {
		if int(y) >= d.Classes {
			return fmt.Errorf("data: %s: label %d of image %d is outside 0..%d", d.Name, y, i, d.Classes-1)
		}
	}
	return nil
}

// byteToUnit maps a uint8 pixel to float32 in [0,1] (p/255).
var byteToUnit = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(i) / 255
	}
	return
}()

// MNISTFiles lists the four standard MNIST / Fashion-MNIST file names
// (train images, train labels, test images, test labels), without the
// optional .gz suffix.
func MNISTFiles() []string {
	return []string{mnistTrainImages, mnistTrainLabels, mnistTestImages, mnistTestLabels}
}

// LoadMNIST loads the MNIST training and test splits from dir, which holds
// the four standard files (train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte), each raw or gzipped
// (with or without a .gz suffix). Images are 1×28×28.
func LoadMNIST(dir string) (trainSet, testSet *Dataset, err error) {
	return loadIDXDir(dir, "mnist")
}

// LoadFashionMNIST loads the Fashion-MNIST training and test splits from
// dir; the files have the same names and format as MNIST's.
func LoadFashionMNIST(dir string) (trainSet, testSet *Dataset, err error) {
	return loadIDXDir(dir, "fashion-mnist")
}

// LoadEmbeddedMNIST loads the MNIST subset embedded in the binary
// (capstan.EmbeddedMNIST: the first 6000 training and 1000 test digits),
// which needs no download. Dataset names are "mnist-embedded-train" and
// "mnist-embedded-test".
func LoadEmbeddedMNIST() (trainSet, testSet *Dataset, err error) {
	return LoadMNISTFS(capstan.EmbeddedMNIST, ".", "mnist-embedded")
}

// LoadMNISTFS loads an MNIST-format dataset (the four standard files, raw
// or gzipped) from directory dir of fsys. name prefixes the dataset names
// ("NAME-train", "NAME-test").
func LoadMNISTFS(fsys fs.FS, dir, name string) (trainSet, testSet *Dataset, err error) {
	return loadIDXPairs(fsys, dir, dir, name)
}

func loadIDXDir(dir, name string) (*Dataset, *Dataset, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("data: loading %s: %w", name, err)
	}
	return loadIDXPairs(os.DirFS(dir), ".", dir, name)
}

// loadIDXPairs loads both splits; display is the directory named in errors.
func loadIDXPairs(fsys fs.FS, dir, display, name string) (*Dataset, *Dataset, error) {
	tr, err := loadIDXSplit(fsys, dir, display, mnistTrainImages, mnistTrainLabels, name+"-train")
	if err != nil {
		return nil, nil, err
	}
	te, err := loadIDXSplit(fsys, dir, display, mnistTestImages, mnistTestLabels, name+"-test")
	if err != nil {
		return nil, nil, err
	}
	return tr, te, nil
}

func loadIDXSplit(fsys fs.FS, dir, display, imagesBase, labelsBase, name string) (*Dataset, error) {
	imgFile, imgShown, err := openEither(fsys, dir, display, imagesBase)
	if err != nil {
		return nil, fmt.Errorf("data: loading %s: %w", name, err)
	}
	img, err := ReadIDXImages(imgFile, imgShown)
	imgFile.Close()
	if err != nil {
		return nil, fmt.Errorf("data: loading %s: %w", name, err)
	}
	lblFile, lblShown, err := openEither(fsys, dir, display, labelsBase)
	if err != nil {
		return nil, fmt.Errorf("data: loading %s: %w", name, err)
	}
	labels, err := ReadIDXLabels(lblFile, lblShown)
	lblFile.Close()
	if err != nil {
		return nil, fmt.Errorf("data: loading %s: %w", name, err)
	}
	if len(labels) != img.N {
		return nil, fmt.Errorf("data: loading %s: file %s has %d labels but file %s has %d images", name, lblShown, len(labels), imgShown, img.N)
	}
	for i, y := range labels {
		if y > 9 {
			return nil, fmt.Errorf("data: loading %s: file %s: label %d of item %d is outside 0..9", name, lblShown, y, i)
		}
	}
	d := &Dataset{
		Name: name, N: img.N, C: 1, H: img.Rows, W: img.Cols, Classes: 10,
		X: make([]float32, len(img.Pix)),
		Y: labels,
	}
	for i, p := range img.Pix {
		d.X[i] = byteToUnit[p]
	}
	return d, nil
}

// openEither opens base or, if absent, base+".gz" in dir of fsys. It
// returns the file and its name for messages (under display).
func openEither(fsys fs.FS, dir, display, base string) (fs.File, string, error) {
	for _, n := range []string{base, base + ".gz"} {
		f, err := fsys.Open(path.Join(dir, n))
		if err == nil {
			return f, filepath.Join(display, n), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("file %s: %w", filepath.Join(display, n), err)
		}
	}
	return nil, "", fmt.Errorf("neither %s nor %s.gz in %s", base, base, display)
}

// CIFAR10 binary format: each record is 1 label byte then 3072 pixel bytes
// (1024 red, 1024 green, 1024 blue; each 32 rows of 32), i.e. CHW.
const (
	cifarRecord = 1 + 3*32*32
)

// LoadCIFAR10 loads CIFAR10 in its binary format from dir (or from
// dir/cifar-10-batches-bin, where the official archive unpacks):
// data_batch_1.bin … data_batch_5.bin form the training split and
// test_batch.bin the test split. Images are 3×32×32 and every file must
// hold whole records (a truncated record is an error naming the file and
// the record).
func LoadCIFAR10(dir string) (trainSet, testSet *Dataset, err error) {
	if _, err := os.Stat(filepath.Join(dir, "cifar-10-batches-bin", "test_batch.bin")); err == nil {
		dir = filepath.Join(dir, "cifar-10-batches-bin")
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("data: loading cifar10: %w", err)
	}
	return loadCIFAR10(os.DirFS(dir), dir)
}

// LoadCIFAR10FS is LoadCIFAR10 on the root directory of fsys.
func LoadCIFAR10FS(fsys fs.FS) (trainSet, testSet *Dataset, err error) {
	return loadCIFAR10(fsys, ".")
}

func loadCIFAR10(fsys fs.FS, display string) (*Dataset, *Dataset, error) {
	var trainFiles []string
	for i := 1; i <= 5; i++ {
		trainFiles = append(trainFiles, "data_batch_"+strconv.Itoa(i)+".bin")
	}
	tr, err := loadCIFARFiles(fsys, display, trainFiles, "cifar10-train")
	if err != nil {
		return nil, nil, err
	}
	te, err := loadCIFARFiles(fsys, display, []string{"test_batch.bin"}, "cifar10-test")
	if err != nil {
		return nil, nil, err
	}
	return tr, te, nil
}

func loadCIFARFiles(fsys fs.FS, display string, files []string, name string) (*Dataset, error) {
	var raws [][]byte
	n := 0
	for _, f := range files {
		shown := filepath.Join(display, f)
		raw, err := readCIFARFile(fsys, f, shown, min(MaxImages, int(MaxFileBytes/cifarRecord))-n)
		if err != nil {
			return nil, fmt.Errorf("data: loading %s: %w", name, err)
		}
		for r := 0; r < len(raw)/cifarRecord; r++ {
			if y := raw[r*cifarRecord]; y > 9 {
				return nil, fmt.Errorf("data: loading %s: file %s: record %d has label %d, outside 0..9", name, shown, r, y)
			}
		}
		raws = append(raws, raw)
		n += len(raw) / cifarRecord
	}
	d, err := NewDataset(name, n, 3, 32, 32, 10)
	if err != nil {
		return nil, err
	}
	const sz = cifarRecord - 1
	i := 0
	for _, raw := range raws {
		for off := 0; off < len(raw); off += cifarRecord {
			d.Y[i] = raw[off]
			dst := d.X[i*sz : (i+1)*sz]
			for k, p := range raw[off+1 : off+cifarRecord] {
				dst[k] = byteToUnit[p]
			}
			i++
		}
	}
	return d, nil
}

// readCIFARFile reads the CIFAR-10 batch file name of fsys (shown is its
// name in errors), which must hold whole records, at most MaxFileBytes of
// them and at most maxRecords (what MaxImages leaves for this split). When
// the file tells its size the checks come before the read and the buffer
// is allocated once; otherwise it is read as it arrives, at most one byte
// past the limit.
func readCIFARFile(fsys fs.FS, name, shown string, maxRecords int) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", shown, err)
	}
	defer f.Close()
	check := func(size int64) error {
		if size > MaxFileBytes {
			return fmt.Errorf("file %s: more than the limit of %d bytes (data.MaxFileBytes)", shown, MaxFileBytes)
		}
		if rem := size % cifarRecord; rem != 0 {
			return fmt.Errorf("file %s: truncated: record %d has %d of %d bytes", shown, size/cifarRecord, rem, cifarRecord)
		}
		if size/cifarRecord > int64(maxRecords) {
			return fmt.Errorf("file %s: %d records make the split more than the limit of %d images (data.MaxImages) or %d bytes (data.MaxFileBytes)", shown, size/cifarRecord, MaxImages, MaxFileBytes)
		}
		return nil
	}
	if size := knownSize(f); size >= 0 {
		if err := check(size); err != nil {
			return nil, err
		}
		raw := make([]byte, size)
		if got, err := io.ReadFull(f, raw); err != nil {
			return nil, fmt.Errorf("file %s: truncated: %d of the %d bytes its size announced: %w", shown, got, size, unexpected(err))
		}
		var b [1]byte
		if k, _ := f.Read(b[:]); k > 0 {
			return nil, fmt.Errorf("file %s: grew while being read", shown)
		}
		return raw, nil
	}
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", shown, err)
	}
	if err := check(int64(len(raw))); err != nil {
		return nil, err
	}
	return raw, nil
}
