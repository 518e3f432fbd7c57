package hostfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// User is one /etc/passwd entry.
type User struct {
	Name  string
	UID   uint32
	GID   uint32
	Home  string
	Shell string
}

// ErrNoUser means the account is not in the host's /etc/passwd.
var ErrNoUser = errors.New("no such account")

// ParsePasswd parses /etc/passwd content; malformed lines are skipped.
func ParsePasswd(data []byte) []User {
	var out []User
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 7 || f[0] == "" || strings.HasPrefix(f[0], "#") {
			continue
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, User{Name: f[0], UID: uint32(uid), GID: uint32(gid), Home: f[5], Shell: f[6]})
	}
	return out
}

// LookupUser resolves an account name or numeric UID through the host's
// /etc/passwd.
func (h *Host) LookupUser(nameOrUID string) (User, error) {
	data, err := h.ReadFile("/etc/passwd")
	if err != nil {
		return User{}, fmt.Errorf("read /etc/passwd: %w", err)
	}
	uid, numErr := strconv.ParseUint(nameOrUID, 10, 32)
	for _, u := range ParsePasswd(data) {
		if u.Name == nameOrUID || (numErr == nil && u.UID == uint32(uid)) {
			return u, nil
		}
	}
	return User{}, fmt.Errorf("%q: %w", nameOrUID, ErrNoUser)
}

// Meminfo holds the /proc/meminfo values the tooling uses, in KiB.
type Meminfo struct {
	MemTotalKiB  uint64
	SwapTotalKiB uint64
}

// ParseMeminfo parses /proc/meminfo content.
func ParseMeminfo(data []byte) (Meminfo, error) {
	var m Meminfo
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "MemTotal":
			m.MemTotalKiB, found = n, true
		case "SwapTotal":
			m.SwapTotalKiB = n
		}
	}
	if !found {
		return m, errors.New("no MemTotal line")
	}
	return m, nil
}

// Meminfo reads the host's /proc/meminfo.
func (h *Host) Meminfo() (Meminfo, error) {
	data, err := h.ReadFile("/proc/meminfo")
	if err != nil {
		return Meminfo{}, err
	}
	m, err := ParseMeminfo(data)
	if err != nil {
		return m, fmt.Errorf("/proc/meminfo: %w", err)
	}
	return m, nil
}

// ParseCPUList counts the CPUs in a kernel cpu list such as "0-3,6".
func ParseCPUList(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty cpu list")
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("bad cpu list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return 0, fmt.Errorf("bad cpu list %q", s)
			}
		}
		n += b - a + 1
	}
	return n, nil
}

// CPUs counts the host's online CPUs from /sys/devices/system/cpu/online,
// falling back to "processor" lines of /proc/cpuinfo.
func (h *Host) CPUs() (int, error) {
	if data, err := h.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if n, err := ParseCPUList(string(data)); err == nil {
			return n, nil
		}
	}
	data, err := h.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0, fmt.Errorf("no /sys/devices/system/cpu/online or /proc/cpuinfo: %w", err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if k, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "processor" {
			n++
		}
	}
	if n == 0 {
		return 0, errors.New("/proc/cpuinfo lists no processor")
	}
	return n, nil
}

// Swappiness reads /proc/sys/vm/swappiness.
func (h *Host) Swappiness() (int, error) {
	data, err := h.ReadFile("/proc/sys/vm/swappiness")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("/proc/sys/vm/swappiness: %w", err)
	}
	return n, nil
}
