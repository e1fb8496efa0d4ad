package capstan

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// Limits on what a user downloads: the module zip that go get fetches, and
// every tracked file (the common Git hosts refuse files over 100 MiB and
// warn over 50 MiB).
const (
	maxModuleZipBytes  = 20 << 20
	maxTrackedFileSize = 50 << 20
)

// gitRoot returns the repository's top directory, skipping the test where
// there is none (a module downloaded by go get) or git is missing.
func gitRoot(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not in a git work tree")
	}
	root := strings.TrimSpace(string(out))
	wd, _ := os.Getwd()
	if r, _ := filepath.EvalSymlinks(root); r != "" {
		root = r
	}
	if w, _ := filepath.EvalSymlinks(wd); w != root {
		t.Skipf("the module root %s is not the repository's top %s", w, root)
	}
	return root
}

func git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// TestModuleZipSize builds the module zip of the committed HEAD as the Go
// module proxy would (golang.org/x/mod/zip: nested modules such as bench/
// are left out) and checks its size.
func TestModuleZipSize(t *testing.T) {
	root := gitRoot(t)
	var buf bytes.Buffer
	m := module.Version{Path: "github.com/capstan-ml/capstan", Version: "v0.0.0-test"}
	if err := modzip.CreateFromVCS(&buf, m, root, "HEAD", ""); err != nil {
		t.Fatalf("module zip of HEAD: %v", err)
	}
	t.Logf("module zip of HEAD: %.2f MB", float64(buf.Len())/1e6)
	if buf.Len() > maxModuleZipBytes {
		t.Errorf("the module zip is %d bytes, over %d: keep run artefacts in bench/ (a module of its own)", buf.Len(), maxModuleZipBytes)
	}
}

// TestTrackedFiles checks that no file of HEAD exceeds maxTrackedFileSize
// and that no tracked file is one .gitignore ignores.
func TestTrackedFiles(t *testing.T) {
	gitRoot(t)
	largest, name := 0, ""
	for _, line := range strings.Split(strings.TrimSpace(git(t, "ls-tree", "-r", "-l", "HEAD")), "\n") {
		// mode type object size<TAB>path
		meta, path, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 || f[1] != "blob" {
			continue
		}
		size, err := strconv.Atoi(f[3])
		if err != nil {
			t.Fatalf("git ls-tree: %q", line)
		}
		if size > largest {
			largest, name = size, path
		}
		if size > maxTrackedFileSize {
			t.Errorf("%s: %d bytes tracked, over %d", path, size, maxTrackedFileSize)
		}
	}
	t.Logf("largest tracked file: %s, %.1f MB", name, float64(largest)/1e6)
	if ignored := strings.TrimSpace(git(t, "ls-files", "-ci", "--exclude-standard")); ignored != "" {
		t.Errorf("tracked files that .gitignore ignores:\n%s", ignored)
	}
}

// layers ranks the project's packages: a package may import its own layer
// and those below it, never one above (asm < kernels < graph < capsnet <
// quant < train < tools). The root package (embedded data) is at the
// bottom.
var layers = []string{"asm", "kernels", "graph", "capsnet", "quant", "train", "tools"}

func layerOf(path string) (int, bool) {
	rel, ok := strings.CutPrefix(path, "github.com/capstan-ml/capstan")
	if !ok {
		return 0, false
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(rel, "/"), "/")
	if top == "" {
		return -1, true
	}
	for i, l := range layers {
		if l == top {
			return i, true
		}
	}
	return -1, true
}

// testImportsUp lists the test-only imports allowed to run up a layer,
// with the reason.
var testImportsUp = map[string]string{
	"github.com/capstan-ml/capstan/kernels github.com/capstan-ml/capstan/capsnet/safetensors": "the PyTorch oracle test reads its vectors with the safetensors reader, which imports nothing of the project's layers",
}

// TestLayers checks with go list, on amd64, arm64 and with the noasm tag,
// that no package imports one of a higher layer (tests included).
func TestLayers(t *testing.T) {
	gitRoot(t)
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("go list runs for amd64 and arm64 from either")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not found")
	}
	for _, env := range [][]string{{"GOARCH=amd64"}, {"GOARCH=arm64"}, {"GOARCH=amd64", "GOFLAGS=-tags=noasm"}} {
		cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v go list: %v", env, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Split(line, "|")
			if len(f) != 3 {
				t.Fatalf("go list: %q", line)
			}
			from, _ := layerOf(f[0])
			check := func(imports string, test bool) {
				for _, imp := range strings.Fields(imports) {
					to, ok := layerOf(imp)
					if !ok || to <= from {
						continue
					}
					if test && testImportsUp[f[0]+" "+imp] != "" {
						continue
					}
					t.Errorf("%v: %s imports %s (layer %s above %s)", env, f[0], imp, layers[to], layerName(from))
				}
			}
			check(f[1], false)
			check(f[2], true)
		}
	}
}

func layerName(i int) string {
	if i < 0 {
		return "the root"
	}
	return layers[i]
}
