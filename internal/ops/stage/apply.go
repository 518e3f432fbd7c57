package stage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/raygw/raygw/internal/ops/checksum"
	"github.com/raygw/raygw/internal/ops/engineprobe"
	"github.com/raygw/raygw/internal/ops/gguf"
	"github.com/raygw/raygw/internal/ops/hostfs"
)

// Sentinel failures of staging.
var (
	ErrChecksum = errors.New("checksum mismatch")
	ErrHeadroom = errors.New("not enough free space")
	ErrFlags    = errors.New("llama-server lacks generated launch flags")
)

// Stager applies a plan on this machine.
type Stager struct {
	Host     *hostfs.Host  // target filesystem usage (statfs injectable)
	Progress io.Writer     // progress bars; nil for none
	Log      io.Writer     // one line per step; nil for none
	Timeout  time.Duration // bound on each --help probe
	// Open opens a source; os.Open when nil (tests inject failures).
	Open func(path string) (io.ReadCloser, error)
}

func (s *Stager) logf(format string, a ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", a...)
	}
}

// CheckSources verifies every source without touching targets: access,
// checksum, GGUF header and metadata, binary startup and flag support.
func (s *Stager) CheckSources(ctx context.Context, p Plan) error {
	for _, a := range p.Artifacts {
		if err := s.checkFile(ctx, p, a, a.Source, nil, true); err != nil {
			return err
		}
	}
	return nil
}

// checkFile runs the per-kind checks on path; prefix runs commands as the
// service user, and sum says whether to hash the file for a.SHA256.
func (s *Stager) checkFile(ctx context.Context, p Plan, a Artifact, path string, prefix []string, sum bool) error {
	if sum && a.SHA256 != "" {
		got, err := checksum.File(path)
		if err != nil {
			return fmt.Errorf("%s source: %w", a.Kind, err)
		}
		if got != a.SHA256 {
			return fmt.Errorf("%s %s: %w: got %s, want %s", a.Kind, path, ErrChecksum, got, a.SHA256)
		}
		s.logf("%s: sha256 %s ok", a.Kind, got)
	}
	switch a.Kind {
	case Model:
		if prefix != nil {
			if _, err := engineprobe.Run(ctx, s.Timeout, append(prefix, "test", "-r", path)); err != nil {
				return fmt.Errorf("model %s is not readable by the service user: %w", path, err)
			}
		}
		m, err := gguf.Open(path)
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		s.logf("model: %s", m.Info)
	case Binary:
		help, err := engineprobe.Help(ctx, s.Timeout, prefix, path)
		if err != nil {
			return fmt.Errorf("llama-server %s does not start: %w", path, err)
		}
		if missing := engineprobe.Missing(help, p.Flags); len(missing) > 0 {
			return fmt.Errorf("%s: %w: %s", path, ErrFlags, strings.Join(missing, " "))
		}
		s.logf("llama-server: --help ok, supports all %d launch flags", len(p.Flags))
	}
	return nil
}

// Apply stages every artifact of the plan; u is the service account.
func (s *Stager) Apply(ctx context.Context, p Plan, u hostfs.User) error {
	for _, a := range p.Artifacts {
		if err := s.applyOne(ctx, p, a, u); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stager) applyOne(ctx context.Context, p Plan, a Artifact, u hostfs.User) error {
	fi, err := os.Stat(a.Source)
	if err != nil {
		return fmt.Errorf("%s source: %w", a.Kind, err)
	}
	if a.Kind == Model {
		if _, err := gguf.CheckHeaderFile(a.Source); err != nil {
			return fmt.Errorf("model source: %w", err)
		}
	}
	if err := s.checkHeadroom(p, a, fi.Size()); err != nil {
		return err
	}
	dir := filepath.Dir(a.Target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", a.Kind, err)
	}
	tmp, err := os.CreateTemp(dir, TempPrefix+filepath.Base(a.Target)+".*")
	if err != nil {
		return fmt.Errorf("%s: %w", a.Kind, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum, err := s.copy(tmp, a, fi.Size())
	if err != nil {
		return err
	}
	if a.SHA256 != "" && sum != a.SHA256 {
		return fmt.Errorf("%s %s: %w: got %s, want %s", a.Kind, a.Source, ErrChecksum, sum, a.SHA256)
	}
	if err := setOwner(tmp.Name(), a.Kind, u); err != nil {
		return err
	}
	prefix, note := asUser(p.User, u)
	if note != "" {
		s.logf("warning: %s", note)
	}
	if err := s.checkFile(ctx, p, a, tmp.Name(), prefix, false); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), a.Target); err != nil {
		return fmt.Errorf("%s: %w", a.Kind, err)
	}
	done = true
	syncDir(dir)
	s.logf("%s: staged %s (%d bytes, sha256 %s)", a.Kind, a.Target, fi.Size(), sum)
	return nil
}

// checkHeadroom wants the target filesystem to keep max(reserve, min free)
// MiB after the copy.
func (s *Stager) checkHeadroom(p Plan, a Artifact, size int64) error {
	if s.Host == nil {
		return nil
	}
	u, measured, err := s.Host.Usage(filepath.Dir(a.Target))
	if err != nil {
		return fmt.Errorf("%s target: %w", a.Kind, err)
	}
	keep := uint64(max(a.ReserveMiB, p.MinFreeMiB)) << 20
	if u.AvailBytes < uint64(size)+keep {
		return fmt.Errorf("%s target %s: %w: %d MiB free, the %d MiB copy must leave %d MiB",
			a.Kind, measured, ErrHeadroom, u.AvailMiB(), (size+(1<<20-1))>>20, keep>>20)
	}
	return nil
}

func (s *Stager) copy(dst *os.File, a Artifact, size int64) (string, error) {
	open := s.Open
	if open == nil {
		open = func(p string) (io.ReadCloser, error) { return os.Open(p) }
	}
	src, err := open(a.Source)
	if err != nil {
		return "", fmt.Errorf("%s source: %w", a.Kind, err)
	}
	defer src.Close()
	h := sha256.New()
	var w io.Writer = io.MultiWriter(dst, h)
	if s.Progress != nil {
		bar := progressbar.NewOptions64(size, progressbar.OptionSetWriter(s.Progress), progressbar.OptionShowBytes(true), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetDescription("staging "+string(a.Kind)), progressbar.OptionOnCompletion(func() { fmt.Fprintln(s.Progress) }))
		w = io.MultiWriter(w, bar)
	}
	n, err := io.Copy(w, src)
	if err != nil {
		return "", fmt.Errorf("%s copy interrupted after %d of %d bytes: %w", a.Kind, n, size, err)
	}
	if n != size {
		return "", fmt.Errorf("%s copy: read %d bytes, source has %d", a.Kind, n, size)
	}
	if err := dst.Sync(); err != nil {
		return "", fmt.Errorf("%s: %w", a.Kind, err)
	}
	if err := dst.Close(); err != nil {
		return "", fmt.Errorf("%s: %w", a.Kind, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// setOwner makes binaries root:root 0755 and models root:<service gid> 0640;
// without root it only sets the mode (models 0644 then).
func setOwner(path string, k Kind, u hostfs.User) error {
	mode, gid := os.FileMode(0o755), 0
	if k == Model {
		mode, gid = 0o640, int(u.GID)
	}
	if os.Geteuid() != 0 {
		if k == Model {
			mode = 0o644
		}
		return os.Chmod(path, mode)
	}
	if err := os.Chown(path, 0, gid); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return os.Chmod(path, mode)
}

// asUser returns the prefix that runs checks as the service user, or nil and
// a warning when this process cannot switch users.
func asUser(name string, u hostfs.User) ([]string, string) {
	if uint32(os.Geteuid()) == u.UID && name != "" {
		return nil, ""
	}
	prefix, err := engineprobe.AsUser(name, u.UID, u.GID, []string{})
	if err != nil {
		return nil, fmt.Sprintf("service-user checks skipped (%v); checked as the current user", err)
	}
	return prefix, ""
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
