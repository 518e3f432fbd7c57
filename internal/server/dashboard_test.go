package server

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/raygw/raygw/web"
)

func dashGet(t *testing.T, h http.Handler, method, target string, hdr http.Header) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		r.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func checkDashboardHeaders(t *testing.T, h http.Header) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy": dashboardCSP,
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestDashboardRoutes(t *testing.T) {
	h := newSecTestServer(t, nil).Handler()
	for _, tc := range []struct {
		name, method, path string
		status             int
		ctype, contains    string
		location           string
	}{
		{"index", "GET", "/dashboard/", 200, "text/html; charset=utf-8", `<script type="module" src="app.js"></script>`, ""},
		{"index by name", "GET", "/dashboard/index.html", 200, "text/html; charset=utf-8", `id="login-form"`, ""},
		{"script", "GET", "/dashboard/app.js", 200, "text/javascript; charset=utf-8", "sessionStorage", ""},
		{"module", "GET", "/dashboard/api.js", 200, "text/javascript; charset=utf-8", "export async function api", ""},
		{"style", "GET", "/dashboard/style.css", 200, "text/css; charset=utf-8", ".status-running", ""},
		{"icon", "GET", "/dashboard/favicon.svg", 200, "image/svg+xml", "<svg", ""},
		{"head", "HEAD", "/dashboard/app.js", 200, "text/javascript; charset=utf-8", "", ""},
		{"redirect", "GET", "/dashboard", 301, "", "", "/dashboard/"},
		{"unknown asset", "GET", "/dashboard/missing.js", 404, "application/json", `"code":"not_found"`, ""},
		{"unknown nested asset", "GET", "/dashboard/a/b.css", 404, "application/json", "not_found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := dashGet(t, h, tc.method, tc.path, nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			checkDashboardHeaders(t, rec.Header())
			if tc.ctype != "" && !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.ctype) {
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), tc.ctype)
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body does not contain %q:\n%.300s", tc.contains, rec.Body)
			}
			if got := rec.Header().Get("Location"); got != tc.location {
				t.Errorf("Location %q, want %q", got, tc.location)
			}
			if tc.status == 200 && rec.Header().Get("Cache-Control") != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", rec.Header().Get("Cache-Control"))
			}
		})
	}
}

func TestDashboardRevalidatesWithETag(t *testing.T) {
	h := newSecTestServer(t, nil).Handler()
	first := dashGet(t, h, "GET", "/dashboard/app.js", nil)
	etag := first.Header().Get("ETag")
	if first.Code != 200 || !regexp.MustCompile(`^"[0-9a-f]{24}"$`).MatchString(etag) {
		t.Fatalf("status %d, ETag %q", first.Code, etag)
	}
	again := dashGet(t, h, "GET", "/dashboard/app.js", http.Header{"If-None-Match": {etag}})
	if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
		t.Fatalf("If-None-Match: status %d, %d bytes; want 304 and no body", again.Code, again.Body.Len())
	}
	other := dashGet(t, h, "GET", "/dashboard/style.css", nil).Header().Get("ETag")
	if other == etag {
		t.Fatalf("two files share the ETag %s", etag)
	}
}

func TestDashboardNeedsNoKeyAndServesOnlyGET(t *testing.T) {
	h := newSecTestServer(t, nil).Handler()
	if rec := dashGet(t, h, "GET", "/dashboard/", nil); rec.Code != 200 {
		t.Fatalf("without a key: %d", rec.Code)
	}
	// Other methods fall through to the gateway's JSON 404.
	if rec := dashGet(t, h, "POST", "/dashboard/", nil); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "<html") {
		t.Fatalf("POST: %d %.100s, want the JSON 404", rec.Code, rec.Body)
	}
}

func TestDashboardLoadSkipsUnknownKinds(t *testing.T) {
	assets, err := loadDashboard(fstest.MapFS{
		"index.html": {Data: []byte("<p>hi</p>")},
		"tool.exe":   {Data: []byte("MZ")},
	})
	if err == nil || !strings.Contains(err.Error(), "tool.exe") {
		t.Fatalf("err = %v, want one naming tool.exe", err)
	}
	if _, ok := assets["tool.exe"]; ok {
		t.Fatal("a file of unknown kind is served")
	}
	if a, ok := assets["index.html"]; !ok || a.ctype != "text/html; charset=utf-8" {
		t.Fatalf("index.html = %+v, %v", a, ok)
	}
}

// TestDashboardAssetsSuitStrictCSP reads the embedded files: every one has
// a known kind, the page references only files that exist on this origin,
// and nothing needs inline code or writes server text as HTML.
func TestDashboardAssetsSuitStrictCSP(t *testing.T) {
	assets, err := loadDashboard(web.Dashboard())
	if err != nil {
		t.Fatal(err)
	}
	index := string(assets["index.html"].body)
	for _, want := range []string{"index.html", "app.js", "api.js", "style.css"} {
		if _, ok := assets[want]; !ok {
			t.Fatalf("%s is not embedded", want)
		}
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(index, -1) {
		if _, ok := assets[m[1]]; !ok {
			t.Errorf("index.html references %q, which is not an embedded file", m[1])
		}
	}
	for _, bad := range []struct{ what, re string }{
		{"inline script", `<script[^>]*>[^<]+</script>`},
		{"inline event handler", `\son[a-z]+\s*=`},
		{"inline style", `\sstyle\s*=|<style`},
		{"absolute URL", `(?:src|href|action)="(?:https?:)?//`},
	} {
		if loc := regexp.MustCompile(bad.re).FindStringIndex(index); loc != nil {
			t.Errorf("index.html has an %s: %q", bad.what, index[loc[0]:loc[1]])
		}
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(index, -1) {
		if !strings.Contains(tag, ` src="`) {
			t.Errorf("index.html has a script without src: %s", tag)
		}
	}
	js := string(assets["app.js"].body) + string(assets["api.js"].body)
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "localStorage", "http://", "https://"} {
		if strings.Contains(js, sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
	css := string(assets["style.css"].body)
	if strings.Contains(css, "@import") || strings.Contains(css, "url(") {
		t.Error("style.css loads other resources")
	}
}

// TestDashboardServesOnlyItsOwnFiles: no path reaches a file outside the
// embedded assets, whatever its encoding.
func TestDashboardServesOnlyItsOwnFiles(t *testing.T) {
	h := newSecTestServer(t, nil).Handler()
	for _, target := range []string{
		"/dashboard/../../../../etc/passwd",
		"/dashboard/%2e%2e/%2e%2e/etc/passwd",
		"/dashboard/..%2f..%2fetc%2fpasswd",
		"/dashboard/.%2e/server.go",
		"/dashboard//etc/passwd",
		"/dashboard/app.js%00.png",
		"/dashboard/web.go",
		"/dashboard/../metrics",
	} {
		rec := dashGet(t, h, "GET", target, nil)
		body := rec.Body.String()
		if rec.Code == http.StatusOK || strings.Contains(body, "root:") || strings.Contains(body, "package ") {
			t.Errorf("%s: %d %.80q", target, rec.Code, body)
		}
	}
}
