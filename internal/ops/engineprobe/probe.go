// Package engineprobe owns the bounded checks run against a llama-server
// binary: starting it with --help (optionally as the service user) and
// matching every generated launch flag against its help text.
package engineprobe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds one --help probe.
const DefaultTimeout = 20 * time.Second

// ErrNotRoot means a check as another user needs root.
var ErrNotRoot = errors.New("running as another user needs root")

// AsUser prefixes argv so it runs as user (a name or numeric UID): runuser
// for names, setpriv for numeric ids. It returns argv unchanged when user is
// empty, and ErrNotRoot when this process cannot switch users.
func AsUser(user string, uid, gid uint32, argv []string) ([]string, error) {
	if user == "" {
		return argv, nil
	}
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if _, err := strconv.ParseUint(user, 10, 32); err == nil {
		if p, err := exec.LookPath("setpriv"); err == nil {
			return append([]string{p, "--reuid", strconv.FormatUint(uint64(uid), 10),
				"--regid", strconv.FormatUint(uint64(gid), 10), "--init-groups", "--"}, argv...), nil
		}
	}
	if p, err := exec.LookPath("runuser"); err == nil {
		return append([]string{p, "-u", user, "--"}, argv...), nil
	}
	return nil, errors.New("neither runuser nor setpriv is available")
}

// Run runs argv with a bound and returns its combined output.
func Run(ctx context.Context, timeout time.Duration, argv []string) ([]byte, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return out.Bytes(), fmt.Errorf("%s did not finish within %s", argv[0], timeout)
	}
	if err != nil {
		if t := tail(out.String()); t != "" {
			return out.Bytes(), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, t)
		}
		return out.Bytes(), fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return out.Bytes(), nil
}

// Help runs `binary --help` (behind prefix, e.g. from AsUser) and returns the text.
func Help(ctx context.Context, timeout time.Duration, prefix []string, binary string) (string, error) {
	argv := append(append([]string{}, prefix...), binary, "--help")
	out, err := Run(ctx, timeout, argv)
	if err != nil {
		return string(out), err
	}
	if !strings.Contains(string(out), "--") {
		return string(out), fmt.Errorf("%s --help printed no options", binary)
	}
	return string(out), nil
}

// Missing returns the flags that do not appear as options in help.
func Missing(help string, flags []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range flags {
		if seen[f] {
			continue
		}
		seen[f] = true
		re := regexp.MustCompile(`(^|[\s,|])` + regexp.QuoteMeta(f) + `([\s,=|]|$)`)
		if !re.MatchString(help) {
			out = append(out, f)
		}
	}
	return out
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return s
}
