package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/admit-go/admit/server"
)

// Where a setting's value came from, lowest precedence first.
const (
	fromDefault = iota
	fromFile
	fromEnv
	fromFlag
)

// origin is where a setting's value came from: its source, and for the
// file its position ("settings.yaml:3:15").
type origin struct {
	from int
	pos  string
}

// loader builds serve's settings from the table: the defaults, then the
// settings file, then the environment, then the command line, each
// source replacing what the ones before it set.
type loader struct {
	cfg    serveConfig
	values []value  // serveSettings[i]'s value, bound to cfg
	origin []origin // where serveSettings[i]'s value came from
}

// recorder is a flag of the table: it records the arguments given, for
// the loader to apply in the order of the table, after the file and the
// environment.
type recorder struct {
	args   []string
	isBool bool
}

func (r *recorder) Set(s string) error { r.args = append(r.args, s); return nil }
func (r *recorder) String() string     { return "" }
func (r *recorder) IsBoolFlag() bool   { return r.isBool }

// newServeCommand returns serve's command, whose flags are the table's
// recorders, in the order of serveSettings.
func newServeCommand() (*command, []*recorder) {
	cmd := newCommand("serve", "[flags]",
		`Run the rate-limit service: the HTTP JSON API (/v1/check, /v1/acquire,
/v1/release, envoyproxy/ratelimit's /json), /healthz, /readyz, /metrics,
and over gRPC Envoy's rate-limit service (envoy.service.ratelimit.v3),
admit.v1, health and reflection. With --upstream, the HTTP listener is a
gateway that applies the policy to every request and proxies the admitted
ones; the API and the other endpoints move to --admin-addr.

Without --config it enforces the built-in policy (domain "api"; see
server/default.yaml) in memory. It prints the addresses it listens on and a
command to try. SIGHUP reloads the policy files, as does a change of them;
SIGTERM and SIGINT drain the requests in flight and exit.`)
	cmd.settings = serveSettings
	recs := make([]*recorder, len(serveSettings))
	for i := range serveSettings {
		s := &serveSettings[i]
		_, isBool := s.bind(new(serveConfig)).(interface{ IsBoolFlag() bool })
		recs[i] = &recorder{isBool: isBool}
		cmd.fs.Var(recs[i], s.name, s.doc)
	}
	return cmd, recs
}

// loadServe reads serve's settings from args and the environment (and
// the settings file they name) and checks them: an error is a usage error
// naming the flag, the variable or the file's key at fault.
func loadServe(args []string, getenv func(string) string) (*loader, error) {
	cmd, recs := newServeCommand()
	if err := cmd.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, usageErrorf("serve: %v", err)
	}
	if rest := cmd.fs.Args(); len(rest) > 0 {
		return nil, usageErrorf("serve takes no arguments (got %q); policy files go in --config", truncate(rest[0], 64))
	}
	l := &loader{cfg: defaultServeConfig(), origin: make([]origin, len(serveSettings))}
	for i := range serveSettings {
		l.values = append(l.values, serveSettings[i].bind(&l.cfg))
	}
	if err := l.load(recs, getenv); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *loader) load(recs []*recorder, getenv func(string) string) error {
	// The file first; its path from the command line or the environment.
	fileRow := settingIndex("server-config")
	if err := l.applyFlagOrEnv(fileRow, recs[fileRow], getenv); err != nil {
		return err
	}
	if path := l.cfg.ServerConfig; path != "" {
		if err := l.readFile(path); err != nil {
			return usageErrorf("%s", err)
		}
	}
	for i := range serveSettings {
		if v := getenv(serveSettings[i].env()); v != "" && i != fileRow {
			if err := l.apply(i, origin{from: fromEnv}, splitEnv(l.values[i], v)); err != nil {
				return err
			}
		}
	}
	for i, r := range recs {
		if len(r.args) > 0 && i != fileRow {
			if err := l.apply(i, origin{from: fromFlag}, r.args); err != nil {
				return err
			}
		}
	}
	return l.check()
}

// applyFlagOrEnv applies row i from the command line, or else from the
// environment.
func (l *loader) applyFlagOrEnv(i int, r *recorder, getenv func(string) string) error {
	if len(r.args) > 0 {
		return l.apply(i, origin{from: fromFlag}, r.args)
	}
	if v := getenv(serveSettings[i].env()); v != "" {
		return l.apply(i, origin{from: fromEnv}, splitEnv(l.values[i], v))
	}
	return nil
}

// splitEnv returns the items of a variable: its value, or a list's items.
func splitEnv(v value, s string) []string {
	if lv, ok := v.(listValue); ok {
		return lv.split(s)
	}
	return []string{s}
}

// apply sets row i from the texts a source gives (several for a list),
// replacing what a lower source set.
func (l *loader) apply(i int, o origin, texts []string) error {
	v := l.values[i]
	if lv, ok := v.(listValue); ok {
		lv.reset()
	}
	l.origin[i] = o
	for _, s := range texts {
		if err := v.Set(s); err != nil {
			return l.errorf(i, "%v", err)
		}
	}
	return nil
}

// where names row i as its value's source does: "--redis (ADMIT_REDIS)",
// "environment variable ADMIT_REDIS (--redis)", "FILE:LINE:COL: redis".
func (l *loader) where(i int) string {
	s := &serveSettings[i]
	switch o := l.origin[i]; o.from {
	case fromFile:
		return o.pos + ": " + s.name
	case fromEnv:
		return "environment variable " + s.env() + " (--" + s.name + ")"
	}
	return "--" + s.name + " (" + s.env() + ")"
}

// errorf returns a usage error about row i, named as its source names it.
func (l *loader) errorf(i int, format string, args ...any) error {
	return usageErrorf("%s: %s", l.where(i), fmt.Sprintf(format, args...))
}

// settingIndex returns the index of the row named name; it panics if
// there is none (a typo in this package).
func settingIndex(name string) int {
	for i := range serveSettings {
		if serveSettings[i].name == name {
			return i
		}
	}
	panic("admit: no setting " + name)
}

// check checks what the settings say together, then the server's
// Config, naming the flag, variable or key of the first problem.
func (l *loader) check() error {
	c := &l.cfg
	cert, key, ca := settingIndex("tls-cert"), settingIndex("tls-key"), settingIndex("tls-client-ca")
	switch {
	case c.TLSCert != "" && c.TLSKey == "":
		return l.pairError(cert, "--tls-cert (ADMIT_TLS_CERT) and --tls-key (ADMIT_TLS_KEY) go together")
	case c.TLSKey != "" && c.TLSCert == "":
		return l.pairError(key, "--tls-cert (ADMIT_TLS_CERT) and --tls-key (ADMIT_TLS_KEY) go together")
	case c.TLSClientCA != "" && c.TLSCert == "":
		return l.errorf(ca, "needs --tls-cert and --tls-key")
	}
	if c.Redis == "" {
		for _, name := range []string{"redis-tls-ca", "redis-tls-cert", "redis-tls-key"} {
			if i := settingIndex(name); l.origin[i].from != fromDefault {
				return l.pairError(i, "--redis-tls-ca, --redis-tls-cert and --redis-tls-key need --redis (ADMIT_REDIS)")
			}
		}
	}
	if err := l.gatewayOnly(); err != nil {
		return err
	}
	var ce *server.ConfigError
	if err := c.Config.Validate(); errors.As(err, &ce) {
		if s := settingOfField(ce.Field); s != nil {
			return l.errorf(settingIndex(s.name), "%v", ce.Err)
		}
		return usageErrorf("%v", err)
	} else if err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// pairError is msg, about settings that go together, prefixed with the
// file's position when row i comes from the file.
func (l *loader) pairError(i int, msg string) error {
	if o := l.origin[i]; o.from == fromFile {
		return usageErrorf("%s: %s: %s", o.pos, serveSettings[i].name, msg)
	}
	return usageErrorf("%s", msg)
}

// gatewayOnly reports the gateway's settings given on the command line
// or in the file without --upstream. (Variables are not reported: an
// environment shared by several instances may hold them.)
func (l *loader) gatewayOnly() error {
	if l.cfg.Upstream != "" {
		return nil
	}
	var set []string
	for i := range serveSettings {
		if !serveSettings[i].gateway {
			continue
		}
		switch o := l.origin[i]; o.from {
		case fromFlag:
			set = append(set, "--"+serveSettings[i].name)
		case fromFile:
			set = append(set, o.pos+": "+serveSettings[i].name)
		}
	}
	if len(set) > 0 {
		return usageErrorf("%s: only with --upstream (gateway mode)", strings.Join(set, ", "))
	}
	return nil
}
