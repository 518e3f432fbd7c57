// Package hostfs owns how the ops tooling reads a host: every path is resolved
// under a root directory ("/" on a real machine, a fabricated tree in tests),
// and filesystem usage comes from an injectable statfs.
package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Usage is the space and inode headroom of one filesystem.
type Usage struct {
	Device     uint64 // filesystem identity, for deduplication
	TotalBytes uint64
	AvailBytes uint64 // free to unprivileged users
	Inodes     uint64
	FreeInodes uint64
}

// AvailMiB is the available space in MiB.
func (u Usage) AvailMiB() uint64 { return u.AvailBytes >> 20 }

// StatfsFunc reports the usage of the filesystem holding an absolute host path
// (already resolved under the root).
type StatfsFunc func(path string) (Usage, error)

// Host is a read-only view of a machine rooted at Root.
type Host struct {
	Root   string
	Statfs StatfsFunc
}

// New returns a Host rooted at root ("" means "/") using the real statfs.
func New(root string) *Host {
	if root == "" {
		root = "/"
	}
	return &Host{Root: root, Statfs: RealStatfs}
}

// Path maps a host path to the local path under Root.
func (h *Host) Path(p string) string {
	if h.Root == "/" || h.Root == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(h.Root, filepath.Clean("/"+p))
}

// IsReal reports whether the host is this machine's own root.
func (h *Host) IsReal() bool { return h.Root == "/" || h.Root == "" }

// ReadFile reads a host file.
func (h *Host) ReadFile(p string) ([]byte, error) { return os.ReadFile(h.Path(p)) }

// Stat stats a host path, following symlinks.
func (h *Host) Stat(p string) (fs.FileInfo, error) { return os.Stat(h.Path(p)) }

// Exists reports whether a host path exists.
func (h *Host) Exists(p string) bool { _, err := h.Stat(p); return err == nil }

// Usage returns the usage of the filesystem holding host path p, or of its
// nearest existing ancestor; the second result is the path actually measured.
func (h *Host) Usage(p string) (Usage, string, error) {
	anc, err := h.NearestExisting(p)
	if err != nil {
		return Usage{}, "", err
	}
	u, err := h.Statfs(h.Path(anc))
	if err != nil {
		return Usage{}, anc, fmt.Errorf("statfs %s: %w", anc, err)
	}
	return u, anc, nil
}

// ErrNoAncestor means not even the root of a path exists.
var ErrNoAncestor = errors.New("no existing ancestor")

// NearestExisting returns p or its closest ancestor that exists on the host.
func (h *Host) NearestExisting(p string) (string, error) {
	p = filepath.Clean("/" + strings.TrimPrefix(p, "/"))
	for i := 0; i < 256; i++ {
		if h.Exists(p) {
			return p, nil
		}
		if p == "/" {
			break
		}
		p = filepath.Dir(p)
	}
	return "", fmt.Errorf("%s: %w", p, ErrNoAncestor)
}

// LookPath finds an executable by name in the host's dirs (a PATH list), or
// returns name itself when it is a path. The result is a host path.
func (h *Host) LookPath(name string, dirs []string) (string, error) {
	if strings.Contains(name, "/") {
		if isExec(h.Path(name)) {
			return name, nil
		}
		return "", fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if isExec(h.Path(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %s: %w", name, strings.Join(dirs, ":"), fs.ErrNotExist)
}

// DefaultPath is the search path used for tools on the host.
var DefaultPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0
}

// RealStatfs is statfs(2).
func RealStatfs(path string) (Usage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return Usage{}, err
	}
	var dev uint64
	if fi, err := os.Stat(path); err == nil {
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			dev = uint64(s.Dev)
		}
	}
	bs := uint64(st.Bsize)
	return Usage{Device: dev, TotalBytes: st.Blocks * bs, AvailBytes: st.Bavail * bs,
		Inodes: st.Files, FreeInodes: st.Ffree}, nil
}

// Owner returns the uid and gid of a local file.
func Owner(fi fs.FileInfo) (uid, gid uint32, ok bool) {
	s, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return s.Uid, s.Gid, true
}
