//go:build unix

package train

import (
	"errors"
	"os"
	"syscall"
)

var errLocked = errors.New("locked")

// tryLock takes an exclusive advisory lock on f without waiting.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func unlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
