// Package dashboard_test drives raygw's web dashboard in a real headless
// Chromium (Debian's chromium package, through chromedp) against a real
// gateway with real llama-server replicas of the small test model.
package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// browser is one headless Chromium tab with a record of every request the
// page made and every console problem it reported.
type browser struct {
	t      *testing.T
	ctx    context.Context
	origin string

	mu       sync.Mutex
	requests []string
	console  []chromedp.ConsoleMessage
}

// chromiumPath finds Debian's chromium or fails with how to install it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the dashboard test needs a Chromium browser: %v\ninstall it with: apt-get install -y chromium (it is listed in .ci/packages.txt)", err)
	}
	return p
}

// newBrowser starts a headless Chromium that lives at most limit and records
// the page's requests and console messages until the test ends.
func newBrowser(t *testing.T, origin string, limit time.Duration) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000),
	)
	bounded, cancelBounded := context.WithTimeout(context.Background(), limit)
	alloc, cancelAlloc := chromedp.NewExecAllocator(bounded, opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	b := &browser{t: t, ctx: ctx, origin: origin}

	if err := chromedp.Do(ctx); err != nil { // starts the browser and the tab
		cancelCtx()
		cancelAlloc()
		cancelBounded()
		t.Fatalf("start chromium: %v", err)
	}
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	console := chromedp.Console(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.requests = append(b.requests, ev.Request.URL)
			b.mu.Unlock()
		}
	})
	wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		cancelBounded()
		wg.Wait()
	})
	return b
}

// do runs actions and fails the test on error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.snapshot())
	}
}

// eval evaluates a JavaScript expression that yields a string.
func (b *browser) eval(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitFor polls a JavaScript predicate in the page until it is truthy or
// timeout passes, then fails with the page's state.
func (b *browser) waitFor(what, predicate string, timeout time.Duration) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		b.t.Fatalf("%s: not reached within %s (%v)\n%s", what, timeout, err, b.snapshot())
	}
}

// screenshot saves the page as name.png in $RAYGW_DASHBOARD_SCREENSHOTS
// when that variable names a directory (for looking at the page by eye).
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("RAYGW_DASHBOARD_SCREENSHOTS")
	if dir == "" {
		return
	}
	img, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // PNG
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name+".png"), img, 0o644)
	}
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
	}
}

// snapshot is the visible text of the page, for failure messages.
func (b *browser) snapshot() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(no page text: " + err.Error() + ")"
	}
	return "page text:\n" + text
}

// checkClean fails for any request outside the gateway's origin, an admin
// key in a URL, an uncaught exception or a console error. Failed API calls
// the page handles itself (the wrong key's 401) are browser log entries of
// source "network"; they are allowed under /api/v1/ only.
func (b *browser) checkClean(secrets ...string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) == 0 {
		b.t.Error("no page request was recorded; the network listener is not working")
	}
	for _, u := range b.requests {
		if u != b.origin && !strings.HasPrefix(u, b.origin+"/") {
			b.t.Errorf("the page requested %s, outside the gateway origin %s", u, b.origin)
		}
		for _, s := range secrets {
			if strings.Contains(u, s) {
				b.t.Errorf("a secret appears in the URL %s", u)
			}
		}
	}
	for _, m := range b.console {
		switch {
		case m.IsException():
			b.t.Errorf("uncaught exception: %s (%s:%d)", m.Text, m.URL, m.Line)
		case m.Type != chromedp.ConsoleError:
		case m.Source == "network" && strings.HasPrefix(m.URL, b.origin+"/api/v1/"):
			b.t.Logf("handled API error: %s %s", m.URL, m.Text)
		default:
			b.t.Errorf("console error (%s): %s %s", m.Source, m.Text, m.URL)
		}
	}
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// errNotFound marks a deployment the API no longer knows.
var errNotFound = errors.New("deployment not found")

func httpStatusError(code int, body string) error {
	if code == 404 {
		return fmt.Errorf("%w: %s", errNotFound, body)
	}
	return fmt.Errorf("status %d: %s", code, body)
}
