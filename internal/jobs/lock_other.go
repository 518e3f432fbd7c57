//go:build !unix

package jobs

import (
	"os"
	"path/filepath"
)

// lockDir only creates the lock file on this OS: there is no flock.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "jobs.lock"), os.O_CREATE|os.O_RDWR, 0o600)
}
