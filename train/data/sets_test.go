package data

import (
	"slices"
	"testing"
)

// TestSetsTable checks the table's consistency: unique names, the lists
// derived from it, the IDX files' sizes against the image counts, a hint
// for every set in files, and the embedded set's row against what loads.
func TestSetsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Sets {
		if seen[s.Name] {
			t.Errorf("%s: twice in Sets", s.Name)
		}
		seen[s.Name] = true
		if s.Pixels() <= 0 || s.Classes != 10 || s.TestImages <= 0 || s.Source == "" || s.Title == "" {
			t.Errorf("%s: incomplete row %+v", s.Name, s)
		}
		if s.Generated() {
			if b := Lookup(s.Base); b == nil || b.Generated() || b.TestImages != s.TestImages {
				t.Errorf("%s: base %q", s.Name, s.Base)
			}
			continue
		}
		if s.ValImages < 1 || s.ValImages >= s.TrainImages || s.Epochs <= 0 || s.Batch <= 0 {
			t.Errorf("%s: validation %d of %d, plan %d×%d", s.Name, s.ValImages, s.TrainImages, s.Epochs, s.Batch)
		}
		if s.Subdir != "" && (len(s.Files) == 0 || s.Fetch.Hint == "") {
			t.Errorf("%s: in the cache without files or hint", s.Name)
		}
		var train, test int64
		for _, f := range s.Files {
			if f.Test {
				test += f.Bytes
			} else {
				train += f.Bytes
			}
			if f.SHA256 != "" && len(f.SHA256) != 64 {
				t.Errorf("%s: %s: SHA-256 %q", s.Name, f.Name, f.SHA256)
			}
		}
		if len(s.Files) > 0 {
			// A label byte an image; IDX: headers of 16 and 8 bytes.
			px, hdr := int64(s.Pixels())+1, int64(24)
			if s.C == 3 {
				hdr = 0
			}
			if train != int64(s.TrainImages)*px+hdr || test != int64(s.TestImages)*px+hdr {
				t.Errorf("%s: files of %d and %d bytes for %d and %d images", s.Name, train, test, s.TrainImages, s.TestImages)
			}
		}
	}
	if want := []string{"embedded", "mnist", "fashion", "cifar10"}; !slices.Equal(DataSets, want) {
		t.Errorf("DataSets = %v, want %v", DataSets, want)
	}
	if want := []string{"embedded", "mnist", "fashion", "cifar10", "embedded-val", "mnist-val", "fashion-val", "cifar10-val", "affnist", "affnist-embedded"}; !slices.Equal(TestSets, want) {
		t.Errorf("TestSets = %v, want %v", TestSets, want)
	}
	for name, want := range map[string]struct {
		set string
		val bool
	}{"mnist": {"mnist", false}, "mnist-val": {"mnist", true}, "affnist": {"affnist", false}, "affnist-val": {}, "imagenet": {}, "": {}} {
		s, val := LookupTest(name)
		if got := ""; s != nil {
			got = s.Name
			if got != want.set || val != want.val {
				t.Errorf("LookupTest(%q) = %s, %v", name, got, val)
			}
		} else if want.set != "" {
			t.Errorf("LookupTest(%q) = nil", name)
		}
	}
	if !slices.Equal(GeneratedSets, []string{"affnist", "affnist-embedded"}) || !slices.Equal(FileSets, []string{"mnist", "fashion", "cifar10"}) {
		t.Errorf("GeneratedSets %v, FileSets %v", GeneratedSets, FileSets)
	}
	for name, want := range map[string][2]bool{"embedded": {}, "embedded-val": {}, "affnist-embedded": {false, true}, "mnist-val": {true, false}, "affnist": {true, true}, "cifar10": {true, false}, "imagenet": {}} {
		if f, g := ReadsFiles(name), IsGenerated(name); f != want[0] || g != want[1] {
			t.Errorf("%s: ReadsFiles %v, IsGenerated %v; want %v", name, f, g, want)
		}
	}
	if got := Lookup("mnist").SplitsBytes(); got != 70000*28*28*4 {
		t.Errorf("mnist SplitsBytes = %d", got)
	}
	if got := Lookup("affnist-embedded").TestBytes(); got != 1000*(28*28+40*40)*4 {
		t.Errorf("affnist-embedded TestBytes = %d", got)
	}
	if got := Lookup("cifar10").TrainingImages(); got != 45000 {
		t.Errorf("cifar10 TrainingImages = %d", got)
	}
	e := Lookup("embedded")
	tr, te, err := e.LoadDir("")
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != e.TrainImages || te.N != e.TestImages || tr.C != e.C || tr.H != e.H || tr.W != e.W || tr.Classes != e.Classes {
		t.Errorf("embedded loads %d+%d images of %d×%d×%d, the table says %+v", tr.N, te.N, tr.C, tr.H, tr.W, e)
	}
	if _, _, err := Lookup("affnist").LoadDir(""); err == nil {
		t.Error("LoadDir of a generated set: no error")
	}
}
