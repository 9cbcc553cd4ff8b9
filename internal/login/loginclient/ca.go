package loginclient

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/collie-linux/collie/internal/linux/atomicfile"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

// CAName is the file in the service's folder that keeps the certificate
// (PEM) `collie login --ca-file` was given: the bridge's own self-signed
// certificate, or a private CA's. Every later request to the bridge
// trusts it besides the system's roots.
const CAName = "bridge-ca.pem"

const maxCA = 64 << 10

// ReadCA reads a PEM file of certificates to trust, at most 64 KiB, and
// checks that it holds at least one.
func ReadCA(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the certificate file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCA+1))
	if err != nil {
		return nil, fmt.Errorf("read the certificate file: %w", err)
	}
	if len(data) > maxCA {
		return nil, fmt.Errorf("the certificate file %s is larger than 64 KiB", path)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("the certificate file %s holds no PEM certificate", path)
	}
	return data, nil
}

// storedCA is the certificate login kept, or nil.
func (c *Client) storedCA() ([]byte, error) {
	p, err := loginstore.Path(c.Env, c.Service)
	if err != nil {
		return nil, err
	}
	p = filepath.Join(filepath.Dir(p), CAName)
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, loginAgain("", fmt.Errorf("%s is not a regular file", p))
	}
	data, err := ReadCA(p)
	if err != nil {
		return nil, loginAgain("", err)
	}
	return data, nil
}

// keepCA stores pem as the bridge's certificate, or removes a stored one
// when pem is nil (a login without --ca-file trusts the system's roots
// only).
func (c *Client) keepCA(pem []byte) error {
	dir, err := loginstore.Dir(c.Env, c.Service)
	if err != nil {
		return err
	}
	p := filepath.Join(dir, CAName)
	if pem == nil {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return atomicfile.Write(p, pem)
}

// transport is the base transport of every request to the bridge: c.HTTP's
// when set (tests), else the default one with a 16 KiB cap on a reply's
// headers, trusting the stored certificate (or c.CA during login) besides
// the system's roots.
//
// Every request that carries a credential (the token endpoints' bodies, the
// agent API's bearer token) leaves through it, so it is wrapped in
// k2Transport: nothing is sent to an address login would not have taken.
func (c *Client) transport() (http.RoundTripper, error) {
	if c.HTTP != nil && c.HTTP.Transport != nil {
		return k2Transport{c.HTTP.Transport}, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxResponseHeaderBytes = 16 << 10
	pem := c.CA
	if pem == nil && !c.login {
		var err error
		if pem, err = c.storedCA(); err != nil {
			return nil, err
		}
	}
	if pem != nil {
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		roots.AppendCertsFromPEM(pem)
		t.TLSClientConfig.RootCAs = roots
	}
	return k2Transport{t}, nil
}
