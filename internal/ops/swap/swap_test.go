package swap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestScriptsParse(t *testing.T) {
	for _, p := range []Plan{
		{SwapFile: DefaultSwapFile, SizeMiB: DefaultSizeMiB, MinFreeAfterMiB: DefaultMinFreeAfter, Swappiness: 10},
		{SysctlOnly: true, Swappiness: 5},
		{SwapFile: "/var/swap file", SizeMiB: 2048, MinFreeAfterMiB: 1024, Swappiness: 1},
	} {
		s, err := p.Script()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "-n")
		cmd.Stdin = strings.NewReader(s)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v: %s\n%s", err, out, s)
		}
		if p.SysctlOnly == strings.Contains(s, "mkswap") {
			t.Errorf("sysctl-only=%v but mkswap presence is %v", p.SysctlOnly, !p.SysctlOnly)
		}
		if !strings.Contains(s, "vm.swappiness") {
			t.Error("script does not set vm.swappiness")
		}
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []Plan{
		{SwapFile: "swapfile", SizeMiB: 1, Swappiness: 10},
		{SwapFile: "/", SizeMiB: 1, Swappiness: 10},
		{SwapFile: "/swapfile", SizeMiB: 0, Swappiness: 10},
		{SwapFile: "/swapfile", SizeMiB: 1, Swappiness: 300},
		{SwapFile: "/swapfile", SizeMiB: 1, MinFreeAfterMiB: -1, Swappiness: 10},
	} {
		if _, err := p.Script(); err == nil {
			t.Errorf("plan %+v accepted", p)
		}
	}
}

// stubs puts fake swapon/swapoff/mkswap/sysctl/id on PATH; each logs its args.
func stubs(t *testing.T, failMkswap bool) (binDir, logFile string) {
	t.Helper()
	binDir, logFile = t.TempDir(), filepath.Join(t.TempDir(), "calls.log")
	mk := "echo \"mkswap $*\" >> " + logFile + "\n"
	if failMkswap {
		mk += "exit 1\n"
	}
	for name, body := range map[string]string{
		"swapon":  "if [ \"$1\" = --show ]; then exit 0; fi\necho \"swapon $*\" >> " + logFile + "\n",
		"swapoff": "echo \"swapoff $*\" >> " + logFile + "\n",
		"mkswap":  mk,
		"sysctl":  "echo \"sysctl $*\" >> " + logFile + "\n",
		"id":      "echo 0\n",
	} {
		if err := os.WriteFile(filepath.Join(binDir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return binDir, logFile
}

func runScript(t *testing.T, p Plan, binDir string) (string, error) {
	t.Helper()
	s, err := p.Script()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", s)
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestScriptAgainstFakeRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, log := stubs(t, false)
	p := Plan{SwapFile: "/swapfile", SizeMiB: 4, MinFreeAfterMiB: 1, Swappiness: 10, Root: root}
	out, err := runScript(t, p, bin)
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	fi, err := os.Stat(filepath.Join(root, "swapfile"))
	if err != nil || fi.Size() != 4<<20 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("swap file not made right: %v %v", fi, err)
	}
	fstab, _ := os.ReadFile(filepath.Join(root, "etc/fstab"))
	if !strings.Contains(string(fstab), root+"/swapfile none swap sw 0 0") {
		t.Errorf("fstab not updated: %q", fstab)
	}
	sysctl, _ := os.ReadFile(filepath.Join(root, SysctlFile))
	if !strings.Contains(string(sysctl), "vm.swappiness=10") {
		t.Errorf("sysctl file: %q", sysctl)
	}
	calls, _ := os.ReadFile(log)
	for _, want := range []string{"mkswap -- " + root + "/.ray-swap.", "swapon -- " + root + "/swapfile", "sysctl -q -w vm.swappiness=10"} {
		if !strings.Contains(string(calls), want) {
			t.Errorf("missing call %q in:\n%s", want, calls)
		}
	}
	// A second run leaves the existing file alone and refuses.
	if out, err := runScript(t, p, bin); err == nil || !strings.Contains(out, "exists but is not active swap") {
		t.Errorf("rerun: err %v out %s", err, out)
	}
}

func TestScriptCleansUpOnFailure(t *testing.T) {
	root := t.TempDir()
	bin, _ := stubs(t, true)
	out, err := runScript(t, Plan{SwapFile: "/swapfile", SizeMiB: 4, Swappiness: 10, Root: root}, bin)
	if err == nil {
		t.Fatalf("script succeeded although mkswap failed:\n%s", out)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 0 {
		t.Fatalf("failed run left files behind: %v", entries)
	}
}

func TestScriptRefusesWithoutCushion(t *testing.T) {
	root := t.TempDir()
	bin, _ := stubs(t, false)
	out, err := runScript(t, Plan{SwapFile: "/swapfile", SizeMiB: 4, MinFreeAfterMiB: 1 << 30, Swappiness: 10, Root: root}, bin)
	if err == nil || !strings.Contains(out, "cushion needs") {
		t.Fatalf("err %v out %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "swapfile")); !os.IsNotExist(err) {
		t.Fatal("swap file created despite the cushion")
	}
}

func TestSysctlOnly(t *testing.T) {
	root := t.TempDir()
	bin, log := stubs(t, false)
	if out, err := runScript(t, Plan{SysctlOnly: true, Swappiness: 7, Root: root}, bin); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	calls, _ := os.ReadFile(log)
	if strings.Contains(string(calls), "mkswap") || !strings.Contains(string(calls), "vm.swappiness=7") {
		t.Fatalf("calls:\n%s", calls)
	}
}
