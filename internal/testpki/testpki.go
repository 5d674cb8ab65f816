// Package testpki makes certificates for tests: a certificate authority,
// a server certificate for 127.0.0.1 and a client certificate, written as
// PEM files in a test's temporary directory.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a certificate authority with a server certificate for 127.0.0.1
// and a client certificate, in PEM files under Dir.
type PKI struct {
	Dir               string
	Pool              *x509.CertPool  // the CA
	CAFile            string          // the CA's certificate
	CertFile, KeyFile string          // the server's
	ClientCertFile    string          // the client's certificate
	ClientKeyFile     string          // and key
	Client            tls.Certificate // the client's, loaded

	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

// New makes a PKI in a temporary directory of t.
func New(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{Dir: t.TempDir(), serial: 1}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admit test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.Pool = x509.NewCertPool()
	p.Pool.AddCert(p.ca)
	p.CAFile = filepath.Join(p.Dir, "ca.pem")
	writePEM(t, p.CAFile, "CERTIFICATE", der)
	p.CertFile, p.KeyFile = filepath.Join(p.Dir, "server.pem"), filepath.Join(p.Dir, "server-key.pem")
	p.Issue(t, "server", p.CertFile, p.KeyFile)
	p.ClientCertFile, p.ClientKeyFile = filepath.Join(p.Dir, "client.pem"), filepath.Join(p.Dir, "client-key.pem")
	p.Issue(t, "client", p.ClientCertFile, p.ClientKeyFile)
	if p.Client, err = tls.LoadX509KeyPair(p.ClientCertFile, p.ClientKeyFile); err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue writes a certificate of the CA named cn (for 127.0.0.1) and its
// key to certFile and keyFile, each renamed into place.
func (p *PKI) Issue(t testing.TB, cn, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	writePEM(t, certFile, "CERTIFICATE", der)
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// PeerCN returns the common name of the certificate the TLS server at
// addr presents, connecting with client certificates certs; the error is
// the handshake's, or the server's refusal of the client's certificate.
func (p *PKI) PeerCN(t testing.TB, addr string, certs ...tls.Certificate) (string, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.Pool, Certificates: certs, NextProtos: []string{"h2"}})
	if err != nil {
		return "", err
	}
	defer c.Close()
	// TLS 1.3: the server checks the client's certificate after the
	// handshake. Speak first, as an HTTP/2 client does (the preface and
	// an empty SETTINGS frame): a server that accepted the certificate
	// answers with its SETTINGS, one that refused it with an alert.
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		return "", err
	}
	if _, err := c.Read(make([]byte, 1)); err != nil {
		return "", err
	}
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}
