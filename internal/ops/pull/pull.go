// Package pull owns model downloads: resolving a URL or hf:owner/repo/file
// reference, resumable HTTP transfer into a .part file with Range requests,
// checksum and GGUF header verification, and an atomic rename into place.
package pull

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/raygw/raygw/internal/ops/checksum"
	"github.com/raygw/raygw/internal/ops/gguf"
)

// DefaultHFEndpoint is the public Hugging Face address used for hf: references.
const DefaultHFEndpoint = "https://huggingface.co"

// PartSuffix marks an unfinished download.
const PartSuffix = ".part"

// Sentinel failures.
var (
	ErrChecksum = errors.New("checksum mismatch")
	ErrExists   = errors.New("destination already exists")
)

// Resolve turns a reference into a download URL and a file name: an http(s)
// URL stays as it is; hf:owner/repo/path/file maps to
// {endpoint}/owner/repo/resolve/main/path/file.
func Resolve(ref, hfEndpoint string) (string, string, error) {
	if rest, ok := strings.CutPrefix(ref, "hf:"); ok {
		parts := strings.Split(strings.Trim(rest, "/"), "/")
		if len(parts) < 3 || slicesHasEmpty(parts) {
			return "", "", fmt.Errorf("%q: expected hf:owner/repo/file", ref)
		}
		if hfEndpoint == "" {
			hfEndpoint = DefaultHFEndpoint
		}
		u := strings.TrimSuffix(hfEndpoint, "/") + "/" + parts[0] + "/" + parts[1] + "/resolve/main/" + strings.Join(parts[2:], "/")
		return u, parts[len(parts)-1], nil
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("%q: expected an http(s) URL or hf:owner/repo/file", ref)
	}
	name := path.Base(u.Path)
	if name == "." || name == "/" || name == "" {
		return "", "", fmt.Errorf("%q: URL names no file", ref)
	}
	return ref, name, nil
}

func slicesHasEmpty(s []string) bool {
	for _, p := range s {
		if p == "" || p == ".." || p == "." {
			return true
		}
	}
	return false
}

// Puller downloads files.
type Puller struct {
	Client   *http.Client
	Progress io.Writer // progress bar; nil for none
	Force    bool      // replace an existing destination
}

// Pull downloads rawURL to dest, resuming dest+".part", verifies sha256 (when
// given) and the GGUF header (for .gguf names), then renames into place.
func (p *Puller) Pull(ctx context.Context, rawURL, dest, sha string) error {
	sha = strings.ToLower(strings.TrimSpace(sha))
	if _, err := os.Stat(dest); err == nil && !p.Force {
		return fmt.Errorf("%s: %w (pass --force to replace it)", dest, ErrExists)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	part := dest + PartSuffix
	if err := p.fetch(ctx, rawURL, part); err != nil {
		return err
	}
	got, err := checksum.File(part)
	if err != nil {
		return err
	}
	if sha != "" && got != sha {
		os.Remove(part)
		return fmt.Errorf("%s: %w: got %s, want %s (partial file removed)", rawURL, ErrChecksum, got, sha)
	}
	if strings.HasSuffix(strings.ToLower(dest), ".gguf") {
		if _, err := gguf.CheckHeaderFile(part); err != nil {
			os.Remove(part)
			return err
		}
	}
	if err := os.Chmod(part, 0o644); err != nil {
		return err
	}
	return os.Rename(part, dest)
}

// fetch appends the rest of rawURL to part, starting where it ends.
func (p *Puller) fetch(ctx context.Context, rawURL, part string) error {
	f, err := os.OpenFile(part, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("download %s: %w", rawURL, err)
	}
	defer resp.Body.Close()
	total := int64(-1)
	switch {
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		return nil // the part file is already complete; verification decides
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			return fmt.Errorf("download %s: server resumed at an unexpected range %q", rawURL, resp.Header.Get("Content-Range"))
		}
		total = size
	case resp.StatusCode == http.StatusOK:
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		have, total = 0, resp.ContentLength
	default:
		return fmt.Errorf("download %s: HTTP %s", rawURL, resp.Status)
	}
	var w io.Writer = f
	if p.Progress != nil {
		bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(p.Progress), progressbar.OptionShowBytes(true), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetDescription("pulling "+path.Base(part)), progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.Progress) }))
		_ = bar.Set64(have)
		w = io.MultiWriter(f, bar)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return fmt.Errorf("download %s interrupted at %d bytes (rerun to resume from %s): %w", rawURL, have+n, part, err)
	}
	if total >= 0 && have+n != total {
		return fmt.Errorf("download %s: got %d of %d bytes (rerun to resume)", rawURL, have+n, total)
	}
	return f.Sync()
}

// parseContentRange reads "bytes start-end/size".
func parseContentRange(s string) (start, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	size, err2 := strconv.ParseInt(sz, 10, 64)
	if sz == "*" {
		size, err2 = -1, nil
	}
	return start, size, err1 == nil && err2 == nil && start >= 0
}
