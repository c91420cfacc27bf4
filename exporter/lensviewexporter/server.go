package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// web holds the page and uPlot 1.6.32 from npm (web/uplot, its MIT licence beside it): the page
// needs nothing from any other host.
//
//go:embed web
var web embed.FS

// contentSecurityPolicy lets the page load only its own script, styles and API: no inline
// script, no other host, no framing. uPlot sizes its elements through the CSSOM (element.style),
// which style-src does not restrict.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// securityHeaders are set on every answer.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), interest-cohort=()")
}

// handler serves the page and the API, read-only: GET and HEAD only, but for the capture
// trigger (capture.go), which is a POST where capture is configured.
func newHandler(st *store, refresh time.Duration, capt *captureHandler) http.Handler {
	static, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	files := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/nodes", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, st.nodeList())
	})
	mux.HandleFunc("GET /api/cluster", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, st.clusterView(refresh.Milliseconds()))
	})
	mux.HandleFunc("GET /api/node", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		var since int64
		if s := r.URL.Query().Get("since"); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				http.Error(w, "since: not a unix time in milliseconds", http.StatusBadRequest)
				return
			}
			since = v
		}
		owner, err := parseOwnerRef(r.URL.Query().Get("owner"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		view, ok := st.nodeView(name, since, refresh, owner)
		if !ok {
			http.Error(w, "no such node", http.StatusNotFound)
			return
		}
		writeJSON(w, view)
	})
	mux.HandleFunc("GET /api/capture", capt.serveState)
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		// The page's files only: no directory listings.
		if r.URL.Path != "/" && strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		if r.Method == http.MethodPost && r.URL.Path == "/api/capture" {
			capt.serveTrigger(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
