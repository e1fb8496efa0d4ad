//go:build unix

package runfile

import (
	"fmt"
	"os"
	"syscall"
)

// openFile opens path non-blocking (and, unless follow, with O_NOFOLLOW),
// checks on the open descriptor that it is a regular file, then clears
// O_NONBLOCK: a FIFO swapped in after the caller's check still cannot
// block, and a link swapped in is still not followed.
func openFile(path string, flag int, perm os.FileMode, follow bool) (*os.File, error) {
	sysFlag := flag | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if !follow {
		sysFlag |= syscall.O_NOFOLLOW
	}
	fd, err := syscall.Open(path, sysFlag, uint32(perm.Perm()))
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, sysFlag, uint32(perm.Perm()))
	}
	if err != nil {
		if err == syscall.ELOOP && !follow {
			return nil, fmt.Errorf("%s is a symbolic link, %w: remove or rename it", path, ErrNotRegular)
		}
		if err == syscall.ENXIO {
			return nil, fmt.Errorf("%s is a FIFO or device, %w: remove or rename it", path, ErrNotRegular)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s is not a regular file (mode %#o), %w: remove or rename it", path, st.Mode, ErrNotRegular)
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
