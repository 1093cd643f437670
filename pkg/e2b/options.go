// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Options configure the E2B endpoint; it is off unless BindAddress is set.
type Options struct {
	// BindAddress (host:port) is where the endpoint listens; empty turns it off.
	BindAddress string
	// TLSCertFile and TLSKeyFile serve it over TLS; without them PlainHTTP must say so.
	TLSCertFile, TLSKeyFile string
	// PlainHTTP serves without TLS, for a local plane (keys and tokens then cross in clear).
	PlainHTTP bool
	// Domain is the domain reported to the SDKs (the sandbox's `domain`); sandbox hosts are
	// <port>-<sandboxID>.<Domain>.
	Domain string
	// KeysNamespace holds the API keys (Secrets) and the access tokens' signing key.
	KeysNamespace string
	// MaxRequestsPerKey bounds one key's control-plane requests in flight.
	MaxRequestsPerKey int
	// CreateTimeout bounds how long a create or a resume waits for the sandbox to be Ready.
	CreateTimeout time.Duration
}

// NewOptions returns the defaults: off.
func NewOptions() *Options {
	return &Options{KeysNamespace: "sandbox-system", MaxRequestsPerKey: 32, CreateTimeout: 2 * time.Minute}
}

// Enabled says whether the endpoint is served.
func (o *Options) Enabled() bool { return o.BindAddress != "" }

// AddFlags adds the endpoint's flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "e2b-bind-address", o.BindAddress,
		"Address (host:port) of the E2B-compatible endpoint (docs/e2b.md); empty leaves it off. It serves E2B's control plane (E2B_API_URL) and the sandboxes' daemon API (E2B_SANDBOX_URL) on one port.")
	fs.StringVar(&o.TLSCertFile, "e2b-tls-cert-file", o.TLSCertFile, "Certificate (PEM) the E2B endpoint serves TLS with.")
	fs.StringVar(&o.TLSKeyFile, "e2b-tls-private-key-file", o.TLSKeyFile, "Private key (PEM) of --e2b-tls-cert-file.")
	fs.BoolVar(&o.PlainHTTP, "e2b-plain-http", o.PlainHTTP,
		"Serve the E2B endpoint over plain HTTP (no TLS files): API keys and access tokens cross in clear, so only for a local plane.")
	fs.StringVar(&o.Domain, "e2b-domain", o.Domain,
		"Domain reported to E2B clients; a request for host <port>-<sandboxID>.<domain> goes to that sandbox's daemon API.")
	fs.StringVar(&o.KeysNamespace, "e2b-api-keys-namespace", o.KeysNamespace,
		"Namespace of the E2B API keys (Secrets labelled "+APIKeyLabel+", made by `sandbox-apiserver e2b-key`) and of the access tokens' signing key. Whoever may create Secrets there may mint keys.")
	fs.IntVar(&o.MaxRequestsPerKey, "e2b-max-requests-per-key", o.MaxRequestsPerKey,
		"Control-plane requests one E2B API key may have in flight; more are refused with 429.")
	fs.DurationVar(&o.CreateTimeout, "e2b-create-timeout", o.CreateTimeout,
		"How long creating or resuming a sandbox through the E2B endpoint waits for it to be Ready.")
}

// Validate reports every invalid option.
func (o *Options) Validate() []error {
	if !o.Enabled() {
		return nil
	}
	var errs []error
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--e2b-bind-address: %w", err))
	}
	tls := o.TLSCertFile != "" || o.TLSKeyFile != ""
	switch {
	case tls && (o.TLSCertFile == "" || o.TLSKeyFile == ""):
		errs = append(errs, errors.New("--e2b-tls-cert-file and --e2b-tls-private-key-file go together"))
	case tls && o.PlainHTTP:
		errs = append(errs, errors.New("--e2b-plain-http and the --e2b-tls-* files exclude each other"))
	case !tls && !o.PlainHTTP:
		errs = append(errs, errors.New("the E2B endpoint needs --e2b-tls-cert-file and --e2b-tls-private-key-file, or --e2b-plain-http for a local plane"))
	}
	if o.Domain != "" && len(validation.IsDNS1123Subdomain(o.Domain)) > 0 {
		errs = append(errs, fmt.Errorf("--e2b-domain %q is not a DNS name", o.Domain))
	}
	if len(validation.IsDNS1123Label(o.KeysNamespace)) > 0 {
		errs = append(errs, fmt.Errorf("--e2b-api-keys-namespace %q is not a namespace name", o.KeysNamespace))
	}
	if o.MaxRequestsPerKey < 1 {
		errs = append(errs, errors.New("--e2b-max-requests-per-key must be at least 1"))
	}
	if o.CreateTimeout <= 0 {
		errs = append(errs, errors.New("--e2b-create-timeout must be positive"))
	}
	return errs
}
