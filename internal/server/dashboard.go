package server

// dashboard.go serves the web dashboard (package web) under /dashboard/.
// The assets are static and carry no data, so their routes are Public; the
// page reads and changes deployments through the admin API with the key the
// operator types. Every answer carries a strict Content-Security-Policy (no
// inline script or style, no other origin) and anti-framing headers.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"time"

	"github.com/raygw/raygw/internal/openai"
	"github.com/raygw/raygw/web"
)

// dashboardCSP allows the page's own scripts, styles, images and API calls
// and nothing else: no inline code, no other origin, no framing, and no form
// submission (forms are handled by the script, so a key never lands in a URL).
const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'none'; object-src 'none'; base-uri 'none'; " +
	"form-action 'none'; frame-ancestors 'none'"

// dashboardTypes are the Content-Types of the file kinds the dashboard may
// embed; a file of any other kind is not served.
var dashboardTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
}

// dashAsset is one embedded file ready to serve.
type dashAsset struct {
	body  []byte
	ctype string
	etag  string
}

// dashAssets maps a path under /dashboard/ to its file.
type dashAssets map[string]dashAsset

// loadDashboard reads every file of fsys once. Files of an unknown kind
// are left out and reported in the error; the others are still returned.
func loadDashboard(fsys fs.FS) (dashAssets, error) {
	assets := dashAssets{}
	var skipped []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ctype, ok := dashboardTypes[path.Ext(p)]
		if !ok {
			skipped = append(skipped, p)
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		assets[p] = dashAsset{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return assets, fmt.Errorf("dashboard assets: %w", err)
	}
	if len(skipped) > 0 {
		return assets, fmt.Errorf("dashboard assets: %q have no known content type", skipped)
	}
	return assets, nil
}

// setDashboardHeaders sets the security headers every dashboard answer carries.
func setDashboardHeaders(h http.Header) {
	h.Set("Content-Security-Policy", dashboardCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// ServeHTTP answers GET /dashboard/{file...}. The assets change only with
// the binary, so they are revalidated on every load (no-cache) against a
// content-hash ETag: an unchanged file costs a 304, an upgrade shows at once.
func (a dashAssets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setDashboardHeaders(w.Header())
	name := r.PathValue("file")
	if name == "" {
		name = "index.html"
	}
	asset, ok := a[name]
	if !ok {
		openai.WriteError(w, openai.NotFound("not_found", "the dashboard has no file %q", name))
		return
	}
	h := w.Header()
	h.Set("Content-Type", asset.ctype)
	h.Set("ETag", asset.etag)
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(asset.body))
}

// registerDashboard mounts the web dashboard: /dashboard redirects to
// /dashboard/, which serves index.html and its assets.
func (s *Server) registerDashboard() {
	assets, err := loadDashboard(web.Dashboard())
	if err != nil {
		s.log.Error("dashboard incomplete", "err", err)
	}
	s.handle(Route{"GET /dashboard", Public, "dashboard_redirect"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setDashboardHeaders(w.Header())
		http.Redirect(w, r, "/dashboard/", http.StatusMovedPermanently)
	}))
	s.handle(Route{"GET /dashboard/{file...}", Public, "dashboard"}, assets)
}
