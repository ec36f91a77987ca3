package certify

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"time"
)

// ClientOptions describe how certify reaches a sink that wants
// credentials or serves HTTPS with a private CA.
type ClientOptions struct {
	Timeout time.Duration
	// Headers are "Name: value" lines sent with every request.
	Headers []string
	// TokenFile holds a bearer token, sent as "Authorization: Bearer <token>".
	TokenFile string
	// CAFile is a PEM bundle trusted for the sink's certificate (instead of
	// the system roots).
	CAFile string
}

// NewHTTPClient builds the client; bad input gets an error naming it.
func NewHTTPClient(o ClientOptions) (*http.Client, error) {
	hdr := http.Header{}
	for _, line := range o.Headers {
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("--header %q: want \"Name: value\"", line)
		}
		hdr.Add(textproto.CanonicalMIMEHeaderKey(name), value)
	}
	if o.TokenFile != "" {
		b, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return nil, fmt.Errorf("--token-file %s is empty", o.TokenFile)
		}
		hdr.Set("Authorization", "Bearer "+tok)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("--ca-file " + o.CAFile + ": no PEM certificate in it")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = tr
	if len(hdr) > 0 {
		rt = withHeaders{base: tr, hdr: hdr}
	}
	return &http.Client{Timeout: o.Timeout, Transport: rt}, nil
}

// withHeaders adds the configured headers to every request.
type withHeaders struct {
	base http.RoundTripper
	hdr  http.Header
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.hdr {
		r.Header[k] = v
	}
	return w.base.RoundTrip(r)
}
