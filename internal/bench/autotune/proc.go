package autotune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNotReady means a candidate's gateway did not answer /readyz.
var ErrNotReady = errors.New("gateway not ready")

// child is one `raygw serve` process and the engine it launched.
type child struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
	// enginePID and engineCmdline identify the llama-server it started,
	// once found.
	enginePID     int
	engineCmdline []string
}

// startChild runs exe args with env in its own process group, its output
// appended to logPath.
func startChild(exe string, args, env []string, logPath string) (*child, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("gateway log: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: a terminal Ctrl-C reaches autotune, which stops the
	// gateway itself; Pdeathsig stops it should autotune die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", exe, err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{}), logPath: logPath}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	return c, nil
}

// waitReady polls url+"/readyz" until it answers 200, the process exits or
// ctx ends.
func (c *child) waitReady(ctx context.Context, url string, every time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("%w: raygw serve exited (%s); log tail:\n%s", ErrNotReady, c.cmd.ProcessState, logTail(c.logPath))
		case <-ctx.Done():
			return fmt.Errorf("%w: no 200 from /readyz: %w; log tail:\n%s", ErrNotReady, context.Cause(ctx), logTail(c.logPath))
		case <-tick.C:
		}
	}
}

// findEngine records the gateway's child process whose command line ends
// with want's arguments (or, failing that, its only child).
func (c *child) findEngine(want []string) {
	pids := childPIDs(c.cmd.Process.Pid)
	var only []string
	for _, pid := range pids {
		argv := cmdline(pid)
		if len(want) > 1 && hasArgs(argv, want) {
			c.enginePID, c.engineCmdline = pid, argv
			return
		}
		if len(pids) == 1 {
			c.enginePID, only = pid, argv
		}
	}
	c.engineCmdline = only
}

// stop sends SIGTERM, waits up to grace, then kills the process group; an
// engine left behind is killed by its pid.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-c.exited:
			t.Stop()
		case <-t.C:
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.exited
		}
	}
	if c.enginePID > 0 && slices.Equal(cmdline(c.enginePID), c.engineCmdline) {
		_ = syscall.Kill(c.enginePID, syscall.SIGKILL)
	}
}

// hasArgs reports whether argv ends with want[1:] (the binary itself may be
// a wrapper that re-executes under another name).
func hasArgs(argv, want []string) bool {
	tail := want[1:]
	return len(argv) >= len(tail) && slices.Equal(argv[len(argv)-len(tail):], tail)
}

// childPIDs lists the processes whose parent is ppid, from /proc.
func childPIDs(ppid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if parentOf(b) == ppid {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// parentOf reads the ppid field of /proc/<pid>/stat: "pid (comm) state ppid".
func parentOf(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return -1
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return n
}

// cmdline reads /proc/<pid>/cmdline as an argv (nil when gone).
func cmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// logTail returns the last lines of a log file (from its last 16 KiB).
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 16<<10 {
		_, _ = f.Seek(-16<<10, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-12):], "\n")
}
