// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Probe is a readiness check; the first field set says which kind.
type Probe struct {
	// URL is fetched (2xx wanted), with CA to verify the server (or Insecure), and Cert and Key
	// as the client's certificate when set; Body is the whole body wanted, Contains a part.
	URL            string
	CA, Cert, Key  string
	Insecure       bool
	Body, Contains string
	// Exec is a command that must exit 0.
	Exec []string
	// LogLine must appear in the component's log after its launch.
	LogLine string
}

// probeTimeout bounds one check.
const probeTimeout = 3 * time.Second

// check runs the probe once; logFrom is where the component's log stood at its launch.
func (p Probe) check(ctx context.Context, log string, logFrom int64) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	switch {
	case p.URL != "":
		return p.get(ctx)
	case len(p.Exec) > 0:
		out, err := exec.CommandContext(ctx, p.Exec[0], p.Exec[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(p.Exec, " "), err, bytes.TrimSpace(out))
		}
		return nil
	case p.LogLine != "":
		f, err := os.Open(log)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Seek(logFrom, io.SeekStart); err != nil {
			return err
		}
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte(p.LogLine)) {
			return fmt.Errorf("%q not logged yet", p.LogLine)
		}
		return nil
	}
	return nil
}

func (p Probe) get(ctx context.Context) error {
	tlsConfig := &tls.Config{InsecureSkipVerify: p.Insecure} //nolint:gosec // self-signed at start-up, see Components
	if p.CA != "" {
		pem, err := os.ReadFile(p.CA)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s: no certificate", p.CA)
		}
		tlsConfig.RootCAs = pool
	}
	if p.Cert != "" {
		pair, err := tls.LoadX509KeyPair(p.Cert, p.Key)
		if err != nil {
			return err
		}
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: nil}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s: %s", p.URL, resp.Status)
	case p.Body != "" && strings.TrimSpace(string(body)) != p.Body:
		return fmt.Errorf("%s: %q, want %q", p.URL, body, p.Body)
	case p.Contains != "" && !strings.Contains(string(body), p.Contains):
		return fmt.Errorf("%s: %q lacks %q", p.URL, body, p.Contains)
	}
	return nil
}
