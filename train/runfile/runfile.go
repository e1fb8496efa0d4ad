// Package runfile opens the files of a run directory (lock, telemetry,
// metrics, checkpoint, optimizer state) safely: a symbolic link is never
// followed out of the directory, and a FIFO, a directory or a device is
// refused with one line before any open that could block. Readers of run
// files outside the trainer (telemetry, metrics, results) use Open, which
// follows a link the user named but refuses anything but a regular file
// without blocking. It uses the standard library only.
package runfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the errors of this package when a path is
// a symbolic link, FIFO, directory, device or socket rather than a
// regular file (errors.Is).
var ErrNotRegular = errors.New("not a regular file")

// kind names the type of a file mode for an error message.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// refuse is the error of a path that is not a regular file.
func refuse(path string, m fs.FileMode) error {
	return fmt.Errorf("%s is %s, %w: remove or rename it", path, kind(m), ErrNotRegular)
}

// Check returns nil when path is missing (an error wrapping
// fs.ErrNotExist) or a regular file, and an error wrapping ErrNotRegular
// when it is anything else, a symbolic link included. It never opens
// path.
func Check(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return refuse(path, st.Mode())
	}
	return nil
}

// OpenFile opens a run directory file as os.OpenFile does, with flag
// (os.O_RDONLY, os.O_RDWR, os.O_CREATE, os.O_APPEND…) and perm, without
// following a symbolic link (a link, even a dangling one, is refused and
// nothing is created at its target) and without blocking: anything but a
// regular file is refused (ErrNotRegular) before it could block.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, refuse(path, st.Mode())
	}
	return openFile(path, flag, perm, false)
}

// Open opens a file for reading, following a symbolic link, but refuses
// anything but a regular file (ErrNotRegular) without blocking: a FIFO,
// directory or device named as telemetry, metrics or a result is an
// error, not a reader that waits forever.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, refuse(path, st.Mode())
	}
	return openFile(path, os.O_RDONLY, 0, true)
}
