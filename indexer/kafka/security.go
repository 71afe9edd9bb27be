package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// Security is how permitd reaches a managed Kafka: TLS (a CA to trust,
// optionally a client certificate) and SASL (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512). A nil *Security is plaintext without authentication.
// The consumer, the dead-letter writer and the publisher take the same
// value.
type Security struct {
	TLS bool // connect with TLS (implied by CAFile, CertFile)
	// CAFile is a PEM bundle of the CAs to trust; empty: the system pool.
	CAFile string
	// CertFile and KeyFile are the PEM client certificate and key (mutual
	// TLS); both or neither.
	CertFile, KeyFile string
	// InsecureSkipVerify disables the server certificate check (tests
	// only).
	InsecureSkipVerify bool

	// SASLMechanism: "" (none), "PLAIN", "SCRAM-SHA-256" or
	// "SCRAM-SHA-512"; Username and Password are required with one.
	SASLMechanism      string
	Username, Password string

	// tlsConfig overrides the TLS settings above (tests).
	tlsConfig *tls.Config
}

// WithTLSConfig returns a copy of s using cfg for TLS (for tests and
// callers that build their own configuration).
func (s Security) WithTLSConfig(cfg *tls.Config) *Security {
	s.tlsConfig = cfg
	s.TLS = cfg != nil
	return &s
}

// Validate checks the settings and loads the files once.
func (s *Security) Validate() error {
	if s == nil {
		return nil
	}
	_, err := s.tls()
	_, serr := s.mechanism()
	return errors.Join(err, serr)
}

func (s *Security) tls() (*tls.Config, error) {
	if s == nil {
		return nil, nil
	}
	if s.tlsConfig != nil {
		return s.tlsConfig, nil
	}
	if !s.TLS && s.CAFile == "" && s.CertFile == "" && s.KeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.InsecureSkipVerify} //nolint:gosec // opt-in, tests only
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka TLS CA %s: no PEM certificate", s.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return nil, errors.New("kafka TLS: the client certificate and key go together")
	}
	if s.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func (s *Security) mechanism() (sasl.Mechanism, error) {
	if s == nil || s.SASLMechanism == "" {
		return nil, nil
	}
	if s.Username == "" || s.Password == "" {
		return nil, fmt.Errorf("kafka SASL %s: username and password are required", s.SASLMechanism)
	}
	switch s.SASLMechanism {
	case "PLAIN":
		return plain.Mechanism{Username: s.Username, Password: s.Password}, nil
	case "SCRAM-SHA-256":
		return scram.Mechanism(scram.SHA256, s.Username, s.Password)
	case "SCRAM-SHA-512":
		return scram.Mechanism(scram.SHA512, s.Username, s.Password)
	}
	return nil, fmt.Errorf("kafka SASL mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.SASLMechanism)
}

// parts are s's TLS configuration and SASL mechanism (nil when unset).
func (s *Security) parts() (*tls.Config, sasl.Mechanism, error) {
	cfg, err := s.tls()
	if err != nil {
		return nil, nil, err
	}
	mech, err := s.mechanism()
	if err != nil {
		return nil, nil, err
	}
	return cfg, mech, nil
}

// transport is a kafka-go transport (writers, admin clients) with s.
func (s *Security) transport(clientID string) (*kafkago.Transport, error) {
	cfg, mech, err := s.parts()
	if err != nil {
		return nil, err
	}
	return &kafkago.Transport{ClientID: clientID, TLS: cfg, SASL: mech}, nil
}

// dialer is a kafka-go dialer (the consumer group) with s.
func (s *Security) dialer(clientID string) (*kafkago.Dialer, error) {
	cfg, mech, err := s.parts()
	if err != nil {
		return nil, err
	}
	return &kafkago.Dialer{ClientID: clientID, Timeout: 10 * time.Second, TLS: cfg, SASLMechanism: mech}, nil
}
