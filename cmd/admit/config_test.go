package main

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/server"
)

// The table is whole: every field of server.Config that text can set has
// exactly one row, every row's kind fits its field, names and variables
// are unique, and each default reads back as itself (the formatter and
// the parser agree).
func TestSettingsTable(t *testing.T) {
	settable := map[reflect.Type]bool{
		reflect.TypeFor[string](): true, reflect.TypeFor[bool](): true, reflect.TypeFor[int](): true,
		reflect.TypeFor[int64](): true, reflect.TypeFor[time.Duration](): true, reflect.TypeFor[[]string](): true,
		reflect.TypeFor[[]netip.Prefix](): true,
	}
	rows := map[string]int{}
	for _, s := range serveSettings {
		rows[s.field]++
	}
	ct := reflect.TypeFor[server.Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if settable[f.Type] && rows[f.Name] != 1 {
			t.Errorf("server.Config.%s: %d rows in serveSettings, want 1", f.Name, rows[f.Name])
		}
	}
	names, envs := map[string]bool{}, map[string]bool{}
	for _, s := range serveSettings {
		if names[s.name] || envs[s.env()] {
			t.Errorf("%s: named twice", s.name)
		}
		names[s.name], envs[s.env()] = true, true
		if _, ok := reflect.TypeFor[serveConfig]().FieldByName(s.field); !ok {
			t.Errorf("%s: no field %s", s.name, s.field)
			continue
		}
		if s.doc == "" || strings.Contains(s.doc, "\n") {
			t.Errorf("%s: want one paragraph of doc", s.name)
		}
		d := defaultServeConfig()
		v := s.bind(&d) // panics if the kind does not fit the field
		text := v.String()
		again := defaultServeConfig()
		w := s.bind(&again)
		if lv, ok := w.(listValue); ok {
			lv.reset()
			for _, item := range lv.split(text) {
				if err := w.Set(item); err != nil {
					t.Errorf("%s: the default %q does not read back: %v", s.name, text, err)
				}
			}
		} else if err := w.Set(text); err != nil {
			t.Errorf("%s: the default %q does not read back: %v", s.name, text, err)
		}
		if !reflect.DeepEqual(d, again) {
			t.Errorf("%s: the default %q reads back as another value", s.name, text)
		}
	}
}

// Each setting is taken from the command line, else the environment,
// else the settings file, else its default.
func TestSettingsPrecedence(t *testing.T) {
	file := writeTemp(t, "serve.yaml", `# admit serve's settings
http-addr: ":7000"
grpc-addr: ":7001"
admin-addr: ":7002"
config: [file1.yaml, file2.yaml]
reload-interval: 5s
shadow: true
max-body-bytes: 64KiB
log-level: debug
`)
	env := map[string]string{
		"ADMIT_SERVER_CONFIG": file,
		"ADMIT_GRPC_ADDR":     ":8001",
		"ADMIT_ADMIN_ADDR":    ":8002",
		"ADMIT_CONFIG":        "env1.yaml,env2.yaml",
	}
	l, err := loadServe([]string{"--admin-addr", ":9002", "--config", "flag.yaml"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	c := l.cfg
	for _, tc := range []struct {
		name, got, want string
		from            int
	}{
		{"http-addr", c.HTTPAddr, ":7000", fromFile},                        // file only
		{"grpc-addr", c.GRPCAddr, ":8001", fromEnv},                         // env over file
		{"admin-addr", c.AdminAddr, ":9002", fromFlag},                      // flag over env over file
		{"config", strings.Join(c.PolicyFiles, ","), "flag.yaml", fromFlag}, // a list replaced, not added to
		{"reload-interval", c.ReloadInterval.String(), "5s", fromFile},
		{"max-body-bytes", formatSize(c.MaxRequestBytes), "64KiB", fromFile},
		{"log-level", c.LogLevel, "debug", fromFile},
		{"shutdown-timeout", c.ShutdownTimeout.String(), "10s", fromDefault}, // nowhere: the default
		{"server-config", c.ServerConfig, file, fromEnv},
	} {
		if tc.got != tc.want || l.origin[settingIndex(tc.name)].from != tc.from {
			t.Errorf("%s = %q from %d, want %q from %d", tc.name, tc.got, l.origin[settingIndex(tc.name)].from, tc.want, tc.from)
		}
	}
	if !c.Shadow {
		t.Error("shadow: the file's true lost")
	}
	// Without the flag, the variable's list replaces the file's.
	l, err = loadServe(nil, func(k string) string { return env[k] })
	if err != nil || strings.Join(l.cfg.PolicyFiles, ",") != "env1.yaml,env2.yaml" {
		t.Errorf("config from the environment over the file: %v %v", l.cfg.PolicyFiles, err)
	}
	// --server-config wins over ADMIT_SERVER_CONFIG; the flag's file is
	// the only one read.
	other := writeTemp(t, "other.yaml", "http-addr: \":6000\"\n")
	l, err = loadServe([]string{"--server-config", other}, func(k string) string { return env[k] })
	if err != nil || l.cfg.HTTPAddr != ":6000" || l.cfg.ReloadInterval != 2*time.Second {
		t.Errorf("--server-config over ADMIT_SERVER_CONFIG: %q %v %v", l.cfg.HTTPAddr, l.cfg.ReloadInterval, err)
	}
}

// A value's error names where it came from: the flag and its variable,
// the variable and its flag, or the file's position and key.
func TestSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // the settings file, if any
		env  map[string]string
		args []string
		want string // in the error; FILE stands for the file's path
	}{
		{"negative duration in the file", "read-timeout: -5s\n", nil, nil, "FILE:1:15: read-timeout: negative duration -5s"},
		{"negative duration in a variable", "", map[string]string{"ADMIT_IDLE_TIMEOUT": "-1m"}, nil, "environment variable ADMIT_IDLE_TIMEOUT (--idle-timeout): negative duration -1m0s"},
		{"zero where positive", "shutdown-timeout: 0\n", nil, nil, "FILE:1:19: shutdown-timeout: want a positive duration"},
		{"huge number", "max-body-bytes: 99999999999999999999999\n", nil, nil, "FILE:1:17: max-body-bytes: \"99999999999999999999999\" is not a size"},
		{"size over the maximum", "max-header-bytes: 2GiB\n", nil, nil, "FILE:1:19: max-header-bytes: 2147483648: want 1 byte to 1GiB"},
		{"huge duration", "reload-interval: 9999999999h\n", nil, nil, "FILE:1:18: reload-interval: \"9999999999h\" is not a duration"},
		{"bad Redis URL", "redis: ftp://h\n", nil, nil, "FILE:1:8: redis: invalid Redis URL"},
		{"bad upstream URL", "upstream: localhost:8080\n", nil, nil, "FILE:1:11: upstream:"},
		{"bad Redis URL in a variable", "", map[string]string{"ADMIT_REDIS": "redis://h:notaport"}, nil, "environment variable ADMIT_REDIS (--redis)"},
		{"unknown key", "http-addr: :1\nhttp_adress: :2\n", nil, nil, "FILE:2:1: unknown key \"http_adress\""},
		{"key in another spelling", "HTTP_ADDR: :1\n", nil, nil, "FILE:1:1: unknown key \"HTTP_ADDR\": write \"http-addr\""},
		{"key given twice", "shadow: true\nshadow: false\n", nil, nil, "FILE:2:1: shadow: given twice"},
		{"file naming a file", "server-config: other.yaml\n", nil, nil, "FILE:1:1: server-config: a settings file cannot name another"},
		{"a list for a value", "redis: [a, b]\n", nil, nil, "FILE:1:8: redis: one value, not a list"},
		{"a mapping for a value", "shadow: {a: b}\n", nil, nil, "FILE:1:9: shadow: want a value, not a mapping"},
		{"no value", "http-addr:\n", nil, nil, "FILE:1:11: http-addr: no value"},
		{"not a mapping", "- a\n- b\n", nil, nil, "FILE:1:1: want a mapping of settings"},
		{"a bool that is not", "shadow: yes\n", nil, nil, "FILE:1:9: shadow: \"yes\": want true or false"},
		{"a bad choice", "rls-headers: draft-03\n", nil, nil, "FILE:1:14: rls-headers: \"draft-03\": want one of ietf, envoy, none"},
		{"a bad list item", "upstream: http://u\ntrusted-proxies: [10.0.0.0/8, nope]\n", nil, nil, "FILE:2:18: trusted-proxies: \"nope\" is not an IP address"},
		{"gateway only", "domain: api\n", nil, nil, "FILE:1:9: domain: only with --upstream"},
		{"TLS pair", "tls-key: k.pem\n", nil, nil, "FILE:1:10: tls-key: --tls-cert (ADMIT_TLS_CERT) and --tls-key (ADMIT_TLS_KEY) go together"},
		{"malformed YAML", "a: b: c\n", nil, nil, "FILE:1: malformed YAML: mapping values are not allowed"},
		{"malformed YAML later", "shadow: true\nconfig: [a, b\n", nil, nil, "FILE:2: malformed YAML: did not find expected ',' or ']'"},
		{"a tab", "shadow: true\nconfig:\n\t- a\n", nil, nil, "FILE:3: malformed YAML: found character that cannot start any token"},
		{"binary", "\x89PNG\r\n\x1a\n\x00\x00", nil, nil, "FILE:1:1: invalid UTF-8 (byte 0x89)"},
		{"a control character", "shadow: true\nredis: a\x00b\n", nil, nil, "FILE:2:9: character U+0000 is not allowed (YAML allows tabs, line breaks and printable characters)"},
		{"not UTF-8", "shadow: true\nredis: \xff\n", nil, nil, "FILE:2:8: invalid UTF-8 (byte 0xFF)"},
		{"two documents", "shadow: true\n---\nredis: x\n", nil, nil, "FILE:2: a second YAML document"},
		{"an alias", "a: &x 1\n", nil, nil, "FILE:1:1: unknown key \"a\""},
		{"alias value", "http-addr: &x \":1\"\ngrpc-addr: *x\n", nil, nil, "FILE:2:12: grpc-addr: aliases are not taken"},
		{"the flag wins, the file is still checked", "bogus: 1\n", nil, []string{"--http-addr", ":1"}, "unknown key \"bogus\""},
		{"a file that is not there", "", map[string]string{"ADMIT_SERVER_CONFIG": "/nonexistent/serve.yaml"}, nil, "--server-config: open /nonexistent/serve.yaml: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = v
			}
			path := ""
			if tc.file != "" {
				path = writeTemp(t, "serve.yaml", tc.file)
				env["ADMIT_SERVER_CONFIG"] = path
			}
			_, err := loadServe(tc.args, func(k string) string { return env[k] })
			want := strings.ReplaceAll(tc.want, "FILE", path)
			var ee *exitError
			if err == nil || !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v\nwant a usage error with %q", err, want)
			}
		})
	}
}

// FuzzServerConfig: any settings file and any variable's value give
// settings or a usage error naming the file or the variable; never a
// panic.
func FuzzServerConfig(f *testing.F) {
	for _, s := range []struct{ file, env string }{
		{"http-addr: \":9000\"\nconfig: [a.yaml]\nshadow: true\n", "10s"},
		{"read-timeout: -5s\n", "-1s"},
		{"max-body-bytes: 99999999999999999999999\n", "9223372036854775808"},
		{"redis: rediss://u:p@h:1/2?dial_timeout=x\n", "redis+cluster://"},
		{"trusted-proxies: [::1, 10.0.0.0/8]\nupstream: http://u\n", "10.0.0.0/33"},
		{"descriptor: ['k=header:', 'x']\n", "k=const:;"},
		{"\x89PNG\r\n\x1a\n\x00", "\xff"},
		{"a: &x [*x]\n", ""},
		{"http-addr: !!binary aGVsbG8=\n", "unix:"},
	} {
		f.Add([]byte(s.file), s.env, uint8(0))
	}
	f.Fuzz(func(t *testing.T, file []byte, envValue string, row uint8) {
		s := &serveSettings[int(row)%len(serveSettings)]
		env := map[string]string{s.env(): envValue}
		l := &loader{cfg: defaultServeConfig(), origin: make([]origin, len(serveSettings))}
		for i := range serveSettings {
			l.values = append(l.values, serveSettings[i].bind(&l.cfg))
		}
		if err := l.applyFile("fuzz.yaml", file); err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml:") {
				t.Fatalf("a file's error without its name: %v", err)
			}
			return
		}
		if s.name == "server-config" {
			return
		}
		recs := make([]*recorder, len(serveSettings))
		for i := range recs {
			recs[i] = &recorder{}
		}
		err := l.load(recs, func(k string) string { return env[k] })
		if err != nil && !strings.Contains(err.Error(), "fuzz.yaml:") && !strings.Contains(err.Error(), "ADMIT_") && !strings.Contains(err.Error(), "--") {
			t.Fatalf("an error naming no setting: %v", err)
		}
	})
}
