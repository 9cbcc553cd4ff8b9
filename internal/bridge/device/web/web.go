// Package web is the page a paired phone or browser opens: one HTML file,
// its script modules (app.js and the modules it imports) and its style
// sheets, embedded in the binary and served by the
// device API at /. There is no build step and nothing is loaded from
// anywhere else.
//
// Every string a durable agent wrote reaches the page as JSON and is drawn
// with text nodes only (X1, X6): the script never parses HTML, and the
// Content-Security-Policy below makes the browser refuse inline script,
// other origins, and (with Trusted Types) any assignment of a string to an
// HTML sink, should one ever slip in.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
)

//go:embed index.html app.js dom.js markdown.js pairing.js live.js view.js cards.js writes.js notify.js app.css phone.css icon.svg sw-push.js sw-shell.js manifest.webmanifest icon-192.png icon-512.png icon-maskable-512.png apple-touch-icon.png
var files embed.FS

// swParts are the files the service worker, /sw.js, is made of, in order:
// one script, because importScripts would be a Trusted Types sink (and the
// page's scripts use none). sw-push.js shows pushes and opens the app on a
// tap (docs/device-api.md, Notifications). A part for the app shell's
// cache goes first: embed it above and name it here. The page registers
// the worker only through notify.js's swURL(), the one Trusted Types policy
// (SWPolicy); a string given to serviceWorker.register is refused.
var swParts = []string{"sw-shell.js", "sw-push.js"}

// CSP is the Content-Security-Policy of every response of the page: its
// own script and style only, requests only to its own origin, no plugins,
// no <base>, no framing, and no strings into HTML or script sinks. The one
// Trusted Types policy allowed, SWPolicy, makes one script URL, /sw.js:
// registering the service worker is a script-URL sink, and without a
// policy the browser refuses it.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; manifest-src 'self'; worker-src 'self'; form-action 'none'; object-src 'none'; " +
	"base-uri 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types " + SWPolicy

// SWPolicy is the name of the page's one Trusted Types policy: it turns the
// constant "/sw.js" into a script URL and refuses anything else.
const SWPolicy = "collie-sw"

// modules are the page's scripts: app.js, which index.html loads as a
// module, and the modules it imports, each served at /<name> and kept by
// the service worker's app shell (sw-shell.js's SHELL).
var modules = []string{"app.js", "dom.js", "markdown.js", "pairing.js", "live.js", "view.js", "cards.js", "writes.js", "notify.js"}

type asset struct {
	name, contentType string
	body              []byte
	etag              string
}

// routes maps a request path to what it serves. It is made on the first
// request, not at start-up: every collie command links this package, and
// hashing the page's files is work only the daemon needs.
var routes = sync.OnceValue(func() map[string]asset {
	list := []asset{
		{name: "index.html", contentType: "text/html; charset=utf-8"},
		{name: "app.css", contentType: "text/css; charset=utf-8"},
		{name: "phone.css", contentType: "text/css; charset=utf-8"},
		{name: "icon.svg", contentType: "image/svg+xml"},
		// The installable app: its manifest and PNG icons, drawn
		// by icons_test.go.
		{name: "manifest.webmanifest", contentType: "application/manifest+json"},
		{name: "icon-192.png", contentType: "image/png"},
		{name: "icon-512.png", contentType: "image/png"},
		{name: "icon-maskable-512.png", contentType: "image/png"},
		{name: "apple-touch-icon.png", contentType: "image/png"},
	}
	for _, name := range modules {
		list = append(list, asset{name: name, contentType: "text/javascript; charset=utf-8"})
	}
	m := map[string]asset{}
	for _, a := range list {
		b, err := files.ReadFile(a.name)
		if err != nil {
			panic("web: " + a.name + " is not embedded: " + err.Error())
		}
		sum := sha256.Sum256(b)
		a.body, a.etag = b, `"`+hex.EncodeToString(sum[:12])+`"`
		m["/"+a.name] = a
	}
	m["/"] = m["/index.html"]
	sw := asset{name: "sw.js", contentType: "text/javascript; charset=utf-8"}
	if shell, ok := m["/sw.js"]; ok {
		// A worker served as a file of its own is the first part, kept.
		sw.body = append(append(sw.body, shell.body...), '\n')
	}
	for _, part := range swParts {
		b, err := files.ReadFile(part)
		if err != nil {
			panic("web: " + part + " is not embedded: " + err.Error())
		}
		sw.body = append(append(sw.body, b...), '\n')
	}
	sum := sha256.Sum256(sw.body)
	sw.etag = `"` + hex.EncodeToString(sum[:12]) + `"`
	m["/sw.js"] = sw
	return m
})

// Handler serves the page. Mount it at "GET /": paths other than the
// page's own files are 404.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
		a, ok := routes()[r.URL.Path]
		if !ok {
			h.Set("Cache-Control", "no-store")
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		// Revalidated each time, so a new binary's page is used at once.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		if match := r.Header.Get("If-None-Match"); match != "" && etagMatch(match, a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", a.contentType)
		w.Write(a.body)
	})
}

func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		if t = strings.TrimSpace(t); t == etag || t == "*" {
			return true
		}
	}
	return false
}
