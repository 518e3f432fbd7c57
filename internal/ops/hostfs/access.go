package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Access is a permission a user needs on a path.
type Access uint8

// Access bits, as in mode bits.
const (
	Exec  Access = 1
	Write Access = 2
	Read  Access = 4
)

func (a Access) String() string {
	var parts []string
	for _, p := range []struct {
		bit  Access
		name string
	}{{Read, "read"}, {Write, "write"}, {Exec, "execute"}} {
		if a&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, "+")
}

// ErrDenied means the user lacks a permission on a path.
var ErrDenied = errors.New("permission denied")

// CanAccess evaluates, from the host tree's mode bits and owners, whether u
// can search every ancestor of p and has want on p itself. It does not model
// ACLs or capabilities; root may do anything except execute a file with no
// execute bit.
func (h *Host) CanAccess(u User, p string, want Access) error {
	p = filepath.Clean("/" + p)
	groups := map[uint32]bool{u.GID: true}
	for _, g := range h.groupsOf(u.Name) {
		groups[g] = true
	}
	dir := "/"
	for _, part := range strings.Split(strings.TrimPrefix(filepath.Dir(p), "/"), "/") {
		if part != "" {
			dir = filepath.Join(dir, part)
		}
		fi, err := h.Stat(dir)
		if err != nil {
			return err
		}
		if !allowed(u, groups, fi, Exec) {
			return fmt.Errorf("%s cannot enter %s (mode %s): %w", u.Name, dir, fi.Mode().Perm(), ErrDenied)
		}
	}
	fi, err := h.Stat(p)
	if err != nil {
		return err
	}
	if !allowed(u, groups, fi, want) {
		return fmt.Errorf("%s cannot %s %s (mode %s): %w", u.Name, want, p, fi.Mode().Perm(), ErrDenied)
	}
	return nil
}

func allowed(u User, groups map[uint32]bool, fi fs.FileInfo, want Access) bool {
	mode := uint32(fi.Mode().Perm())
	if u.UID == 0 {
		if want&Exec != 0 && !fi.IsDir() {
			return mode&0o111 != 0
		}
		return true
	}
	uid, gid, ok := Owner(fi)
	if !ok {
		return false
	}
	var bits uint32
	switch {
	case uid == u.UID:
		bits = mode >> 6
	case groups[gid]:
		bits = mode >> 3
	default:
		bits = mode
	}
	return Access(bits&7)&want == want
}

// groupsOf returns the gids of /etc/group entries listing name as a member.
func (h *Host) groupsOf(name string) []uint32 {
	data, err := h.ReadFile("/etc/group")
	if err != nil {
		return nil
	}
	var out []uint32
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 4 {
			continue
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == name {
				var g uint32
				if _, err := fmt.Sscan(f[2], &g); err == nil {
					out = append(out, g)
				}
			}
		}
	}
	return out
}
