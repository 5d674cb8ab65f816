package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/admit-go/admit/internal/readlimit"
)

// tlsFiles serves the certificate, key and client CAs of WithTLS and
// WithClientCA to the listeners' handshakes, re-reading the files when
// they change (size or modification time, looked at on each handshake,
// at most once a second), so that a rotated certificate is used from the
// next connection on without a restart. A change that does not load (a
// half-written file, a key that does not match) keeps the files in force
// and is logged once.
type tlsFiles struct {
	cert, key, ca string
	log           *slog.Logger
	now           func() time.Time

	mu      sync.Mutex
	stamps  [3]fileStamp
	checked time.Time
	failed  [3]fileStamp // the stamps of the last change that did not load
	pair    *tls.Certificate
	pool    *x509.CertPool // nil without a client CA
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ok    bool
}

func stampOf(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ok: true}
}

// newTLSFiles loads the files once; an error names the file at fault.
func newTLSFiles(cert, key, ca string, log *slog.Logger) (*tlsFiles, error) {
	f := &tlsFiles{cert: cert, key: key, ca: ca, log: log, now: time.Now}
	pair, pool, err := f.load()
	if err != nil {
		return nil, err
	}
	f.pair, f.pool = pair, pool
	f.stamps = f.stampAll()
	f.checked = f.now()
	return f, nil
}

func (f *tlsFiles) stampAll() [3]fileStamp {
	return [3]fileStamp{stampOf(f.cert), stampOf(f.key), stampOf(f.ca)}
}

// maxTLSFileSize is the largest certificate, key or certificate authority
// file read (WithTLS, WithClientCA, WithRedisTLS, whose docs say it), in
// bytes: a PEM certificate chain takes a few KiB, a bundle of a few
// hundred CAs a few hundred. A file is read no further, so that a larger
// one, or one that never ends (such as /dev/zero), costs no more, and is
// an error naming the file and the limit.
const maxTLSFileSize = 1 << 20

// load reads the key pair and the client CAs.
func (f *tlsFiles) load() (*tls.Certificate, *x509.CertPool, error) {
	cert, err := readlimit.ReadFile(f.cert, maxTLSFileSize)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate: %v", err)
	}
	key, err := readlimit.ReadFile(f.key, maxTLSFileSize)
	if err != nil {
		return nil, nil, fmt.Errorf("key: %v", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %s and key %s: %v", f.cert, f.key, err)
	}
	if f.ca == "" {
		return &pair, nil, nil
	}
	pool, err := loadCAs(f.ca)
	if err != nil {
		return nil, nil, err
	}
	return &pair, pool, nil
}

// loadCAs reads the certificate authorities of the PEM file path.
func loadCAs(path string) (*x509.CertPool, error) {
	pem, err := readlimit.ReadFile(path, maxTLSFileSize)
	if err != nil {
		return nil, fmt.Errorf("CA file: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// current returns the key pair and client CAs in force, reloading them
// first if the files changed.
func (f *tlsFiles) current() (*tls.Certificate, *x509.CertPool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if now.Sub(f.checked) < time.Second {
		return f.pair, f.pool
	}
	f.checked = now
	stamps := f.stampAll()
	if stamps == f.stamps || stamps == f.failed {
		return f.pair, f.pool
	}
	pair, pool, err := f.load()
	if err != nil {
		f.failed = stamps
		f.log.Error("TLS files changed but do not load: keeping those in force", "err", err)
		return f.pair, f.pool
	}
	f.pair, f.pool, f.stamps = pair, pool, stamps
	f.log.Info("TLS files reloaded", "cert", f.cert, "client_ca", f.ca)
	return f.pair, f.pool
}

// config returns a tls.Config for a listener offering the protocols
// protos (ALPN), built for each handshake from the files in force.
func (f *tlsFiles) config(protos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: protos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			pair, pool := f.current()
			c := &tls.Config{
				MinVersion:   tls.VersionTLS12,
				NextProtos:   protos,
				Certificates: []tls.Certificate{*pair},
			}
			if pool != nil {
				c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
			}
			return c, nil
		},
	}
}

// errTLSIncomplete reports WithTLS without both files.
var errTLSIncomplete = errors.New("a certificate needs its key, and the key its certificate")
