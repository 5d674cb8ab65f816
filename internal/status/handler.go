package status

import (
	"embed"
	"encoding/json"
	"net"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// Page serves the status page: /status (the HTML), /status/status.css,
// /status/status.js and /status.json. It answers GET and HEAD only, and
// refuses a query string: nothing it serves takes parameters.
type Page struct {
	Recorder *Recorder
	// Engine returns the engine in force (a *policy.Engine).
	Engine func() any
	// Info returns the instance's identity, the policy in force and the
	// kind of store ("memory" or "redis").
	Info func() (Instance, Policy, string)
	// LoopbackOnly refuses clients whose address is not a loopback one
	// (a Unix socket's clients are served): for a page served on the API
	// listener.
	LoopbackOnly bool
}

// Paths are the paths Page serves.
var Paths = []string{"/status", "/status/", "/status.json", "/status/status.css", "/status/status.js"}

// ServeHTTP serves the page's paths, and 404 for any other.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	isJSON := r.URL.Path == "/status.json"
	fail := func(code int, msg string) {
		if isJSON {
			h.Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
			return
		}
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(msg + "\n"))
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		fail(http.StatusMethodNotAllowed, "status: "+r.URL.Path+" is read-only: GET or HEAD")
		return
	}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		fail(http.StatusBadRequest, "status: "+r.URL.Path+" takes no query string")
		return
	}
	if p.LoopbackOnly && !loopback(r.RemoteAddr) {
		fail(http.StatusForbidden, "status: served to loopback clients only on the API listener; give admit serve --admin-addr to serve it on an admin listener")
		return
	}
	switch r.URL.Path {
	case "/status.json":
		var engine any
		if p.Engine != nil {
			engine = p.Engine()
		}
		inst, pol, store := p.Info()
		h.Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.Recorder.Snapshot(engine, inst, pol, store))
	case "/status", "/status/":
		p.asset(w, "assets/status.html", "text/html; charset=utf-8")
	case "/status/status.css":
		p.asset(w, "assets/status.css", "text/css; charset=utf-8")
	case "/status/status.js":
		p.asset(w, "assets/status.js", "text/javascript; charset=utf-8")
	default:
		fail(http.StatusNotFound, "status: no such page: "+strings.ToValidUTF8(r.URL.Path, "?"))
	}
}

func (p *Page) asset(w http.ResponseWriter, name, typ string) {
	b, err := assets.ReadFile(name)
	if err != nil { // embedded: cannot happen
		http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", typ)
	_, _ = w.Write(b)
}

// loopback reports whether addr (a RemoteAddr) is a loopback address or
// not an IP address at all (a Unix socket's peer).
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip == nil || ip.IsLoopback()
}
