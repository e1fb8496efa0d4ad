// Package atomicfile writes files so that a reader, or the file system
// after a crash, sees either the old content or the whole new one: the
// content goes to a temporary file in the same directory, which is
// fsynced, optionally verified, renamed over the target, and the
// directory is fsynced. It is the project's one writer of outputs that
// must not be torn (checkpoints, optimizer states, int8 models, dumps,
// reports, manifests, fetched data). It uses the standard library only.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// DefaultPerm is the mode of the files Write makes (os.CreateTemp's 0600
// would hide an output from other users).
const DefaultPerm os.FileMode = 0o644

// Options adjusts WriteWith.
type Options struct {
	// Perm is the written file's mode (0: DefaultPerm).
	Perm os.FileMode
	// Verify, when set, is called with the temporary file's path after it
	// is complete and fsynced and before the rename; an error leaves the
	// target untouched.
	Verify func(tmpPath string) error
}

// Write writes path atomically with mode DefaultPerm: fill writes the
// content. On any error the temporary file is removed, path is untouched
// and the error names path.
func Write(path string, fill func(io.Writer) error) error {
	return WriteWith(path, Options{}, fill)
}

// WriteBytes writes b to path atomically with mode DefaultPerm.
func WriteBytes(path string, b []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteWith writes path atomically as Write does, with the mode and
// verification of opt.
func WriteWith(path string, opt Options, fill func(io.Writer) error) (err error) {
	perm := opt.Perm
	if perm == 0 {
		perm = DefaultPerm
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if err = fill(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if opt.Verify != nil {
		if err = opt.Verify(tmp.Name()); err != nil {
			return err
		}
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory, so that a rename or a new entry in it is
// durable; file systems that cannot sync a directory (os.ErrInvalid) are
// not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync of directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync of directory %s: %w", dir, err)
	}
	return nil
}
