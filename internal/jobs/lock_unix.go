//go:build unix

package jobs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFileName guards the storage directory: one gateway process owns it.
const lockFileName = "jobs.lock"

// lockDir takes an exclusive, non-blocking flock on dir/jobs.lock. Recovery
// re-queues every running job, which is only right if no other live
// process is running them. The lock goes with the process.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock job storage: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("lock job storage: %w", err)
	}
	return f, nil
}
