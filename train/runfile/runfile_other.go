//go:build !unix

package runfile

import (
	"fmt"
	"os"
)

// openFile opens path and checks that it is a regular file; where
// O_NOFOLLOW and O_NONBLOCK are missing, the caller's Lstat is the only
// guard.
func openFile(path string, flag int, perm os.FileMode, follow bool) (*os.File, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file, %w: remove or rename it", path, ErrNotRegular)
	}
	return f, nil
}
