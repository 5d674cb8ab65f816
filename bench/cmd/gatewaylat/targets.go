package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The environment variables that make this program a child of itself:
// the upstream, or a bare httputil.ReverseProxy.
const (
	envUpstream = "GATEWAYLAT_UPSTREAM"       // listen address
	envProxy    = "GATEWAYLAT_REVERSEPROXY"   // listen address
	envProxyTo  = "GATEWAYLAT_PROXY_UPSTREAM" // upstream URL
)

// upstreamBody is what the upstream answers to every request.
const upstreamBody = "ok\n"

// serveChild runs this process as a child if the environment says so,
// and reports whether it did (it returns only on failure).
func serveChild() (bool, error) {
	if addr := os.Getenv(envUpstream); addr != "" {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, upstreamBody)
		})
		return true, (&http.Server{Addr: addr, Handler: h}).ListenAndServe()
	}
	if addr := os.Getenv(envProxy); addr != "" {
		u, err := url.Parse(os.Getenv(envProxyTo))
		if err != nil {
			return true, err
		}
		p := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.SetXForwarded() }}
		return true, (&http.Server{Addr: addr, Handler: p}).ListenAndServe()
	}
	return false, nil
}

// A target is a server the load is sent to, run as a child process.
type target struct {
	name string
	url  string
	cmd  *exec.Cmd
}

// pid returns the target's process id.
func (t *target) pid() int { return t.cmd.Process.Pid }

// stop kills the target and waits for it.
func (t *target) stop() {
	_ = t.cmd.Process.Kill()
	_ = t.cmd.Wait()
}

// start starts cmd as the target name answering at url, and waits until
// url answers 200.
func start(name, url string, cmd *exec.Cmd) (*target, error) {
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the driver
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &target{name: name, url: url, cmd: cmd}
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return t, nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.stop()
			return nil, fmt.Errorf("%s did not answer 200 at %s: %v\n%s", name, url, err, stderr.String())
		}
	}
}

// freeAddr returns a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// self returns a command running this program as a child with env set.
func self(env ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	return cmd, nil
}

// startUpstream starts the upstream: a Go net/http server answering
// every request 200 with a 3-byte text body.
func startUpstream() (*target, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd, err := self(envUpstream + "=" + addr)
	if err != nil {
		return nil, err
	}
	return start("direct", "http://"+addr+"/", cmd)
}

// startSelfProxy starts this program as a proxy in front of upstream:
// name is reverseproxy (a bare httputil.ReverseProxy, default transport,
// X-Forwarded-* set), floor-http or floor-raw (see floor.go).
func startSelfProxy(name, upstream string, env ...string) (*target, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	key := map[string]string{"reverseproxy": envProxy, "floor-http": envFloorHTTP, "floor-raw": envFloorRaw}[name]
	cmd, err := self(append(env, key+"="+addr, envProxyTo+"="+upstream)...)
	if err != nil {
		return nil, err
	}
	return start(name, "http://"+addr+"/", cmd)
}

// admitPolicy admits every request of the load: the shape of the
// built-in policy's per-client rate and global cap in flight, with limits
// the load never reaches.
const admitPolicy = `domain: api
rules:
  - {name: per-ip, match: remote_address, rate: 1000000000/s}
  - {name: global, match: [{key: generic_key, value: global}], concurrency: 100000}
`

// startAdmit starts `admit serve --upstream` (the binary bin) with
// admitPolicy, in memory, with env added to its environment.
func startAdmit(bin, dir, upstream string, env ...string) (*target, error) {
	config := filepath.Join(dir, "admit.yaml")
	if err := os.WriteFile(config, []byte(admitPolicy), 0o644); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--config", config, "--upstream", upstream,
		"--http-addr", addr, "--admin-addr", admin, "--grpc-addr", "",
		"--reload-interval", "0", "--log-level", "error")
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	return start("admit", "http://"+addr+"/", cmd)
}

// nginxConf is nginx's configuration: one process, limit_req on the
// client's address with a zone and rate the load never exhausts (so that
// every request is counted and none is refused or delayed), and upstream
// connections kept alive, as admit's are. %[1]s is the directory,
// %[2]s the listen address, %[3]s the upstream's address.
const nginxConf = `daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    limit_req_zone $binary_remote_addr zone=perip:10m rate=1000000r/s;
    upstream backend {
        server %[3]s;
        keepalive 64;
    }
    server {
        listen %[2]s;
        location / {
            limit_req zone=perip burst=1000000 nodelay;
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $host;
        }
    }
}
`

// startNginx starts nginx (the binary bin) proxying to upstream with
// limit_req.
func startNginx(bin, dir, upstream string) (*target, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	ndir := filepath.Join(dir, "nginx")
	if err := os.MkdirAll(ndir, 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(ndir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(nginxConf, ndir, addr, u.Host)), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-p", ndir, "-e", filepath.Join(ndir, "error.log"), "-c", conf)
	return start("nginx", "http://"+addr+"/", cmd)
}

// clockTicks is the unit of /proc/PID/stat's times (USER_HZ, 100 on
// Linux).
const clockTicks = 100

// cpuTime returns the CPU time process pid has used, user and system,
// all its threads (/proc/PID/stat).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count the fields after the last ')'; utime and stime are fields 14
	// and 15, the 12th and 13th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// switches returns the context switches, voluntary and not, of process
// pid's threads alive now (/proc/PID/task/*/status), or 0.
func switches(pid int) int64 {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
	var n int64
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "voluntary_ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}
