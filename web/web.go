// Package web owns raygw's web dashboard: the static HTML, CSS and
// JavaScript of the deployments console, embedded in the binary. The assets
// carry no data; the page reads and changes deployments through the admin
// REST API (/api/v1/deployments) with the admin key the operator types.
package web

import (
	"embed"
	"io/fs"
)

//go:embed dashboard
var files embed.FS

// Dashboard is the dashboard's file tree (index.html, app.js, api.js,
// style.css, favicon.svg) at its root.
func Dashboard() fs.FS {
	sub, err := fs.Sub(files, "dashboard")
	if err != nil { // unreachable: the directory is embedded above
		panic(err)
	}
	return sub
}
