package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := map[string]int{"0": 1, "0-1": 2, "0-3,6": 5, "0-1,4-5\n": 4}
	for in, want := range tests {
		if got, err := ParseCPUList(in); err != nil || got != want {
			t.Errorf("ParseCPUList(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "0-99999999"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	m, err := ParseMeminfo([]byte("MemTotal:        4030000 kB\nMemFree: 1 kB\nSwapTotal:       1048572 kB\n"))
	if err != nil || m.MemTotalKiB != 4030000 || m.SwapTotalKiB != 1048572 {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := ParseMeminfo([]byte("SwapTotal: 1 kB\n")); err == nil {
		t.Fatal("meminfo without MemTotal accepted")
	}
}

func tree(t *testing.T) *Host {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string, mode os.FileMode) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("/etc/passwd", "root:x:0:0::/root:/bin/sh\n# comment\nbroken line\nray:x:999:998::/var/lib/ray:/usr/sbin/nologin\n", 0o644)
	write("/etc/group", "ray:x:998:\nmodels:x:1500:ray\n", 0o644)
	write("/srv/m.gguf", "x", 0o640)
	write("/srv/bin", "x", 0o755)
	return New(root)
}

func TestLookupUser(t *testing.T) {
	h := tree(t)
	for _, id := range []string{"ray", "999"} {
		u, err := h.LookupUser(id)
		if err != nil || u.Name != "ray" || u.UID != 999 || u.GID != 998 {
			t.Errorf("LookupUser(%q) = %+v, %v", id, u, err)
		}
	}
	if _, err := h.LookupUser("4242"); !errors.Is(err, ErrNoUser) {
		t.Errorf("unknown uid: %v", err)
	}
}

func TestCanAccess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to set owners")
	}
	h := tree(t)
	u, _ := h.LookupUser("ray")
	m := h.Path("/srv/m.gguf")
	if err := h.CanAccess(u, "/srv/m.gguf", Read); !errors.Is(err, ErrDenied) {
		t.Fatalf("other-unreadable model: %v", err)
	}
	if err := os.Chown(m, 0, 1500); err != nil { // group "models" lists ray
		t.Fatal(err)
	}
	if err := h.CanAccess(u, "/srv/m.gguf", Read); err != nil {
		t.Fatalf("supplementary group read: %v", err)
	}
	if err := h.CanAccess(u, "/srv/m.gguf", Write); !errors.Is(err, ErrDenied) {
		t.Fatalf("write allowed: %v", err)
	}
	if err := h.CanAccess(u, "/srv/bin", Exec); err != nil {
		t.Fatalf("exec: %v", err)
	}
	if err := os.Chmod(h.Path("/srv"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := h.CanAccess(u, "/srv/bin", Exec); !errors.Is(err, ErrDenied) {
		t.Fatalf("closed directory: %v", err)
	}
}

func TestNearestExisting(t *testing.T) {
	h := tree(t)
	if p, err := h.NearestExisting("/srv/new/deeper/file"); err != nil || p != "/srv" {
		t.Fatalf("NearestExisting = %q, %v", p, err)
	}
}

// FuzzParsers feeds untrusted host files to the /etc/passwd, /proc/meminfo
// and cpu-list parsers; none may panic.
func FuzzParsers(f *testing.F) {
	f.Add("ray:x:999:999::/var/lib/ray:/usr/sbin/nologin\n")
	f.Add("MemTotal: 10 kB\nSwapTotal: 0 kB\n")
	f.Add("0-3,7")
	f.Fuzz(func(t *testing.T, s string) {
		for _, u := range ParsePasswd([]byte(s)) {
			if u.Name == "" {
				t.Fatal("user without a name")
			}
		}
		_, _ = ParseMeminfo([]byte(s))
		if n, err := ParseCPUList(s); err == nil && n <= 0 {
			t.Fatalf("ParseCPUList(%q) = %d", s, n)
		}
	})
}
