package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// selfSigned makes a CA-less server certificate for 127.0.0.1 and
// returns the server's TLS config and the certificate's PEM file.
func selfSigned(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kfake"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(file, certPEM, 0o600))
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, file
}

// A broker behind TLS that requires a SCRAM login: the publisher, the
// consumer and the dead-letter writer log in with the same Security and
// work; a wrong password is refused.
func TestTLSAndSCRAM(t *testing.T) {
	serverTLS, caFile := selfSigned(t)
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.TLS(serverTLS),
		kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "permitd", "s3cret"),
		kfake.Superuser("SCRAM-SHA-256", "other", "pw256"),
		kfake.SeedTopics(1, locTopic, events.DeadLetterTopic),
	)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	sec := &kafka.Security{CAFile: caFile, SASLMechanism: "SCRAM-SHA-512", Username: "permitd", Password: "s3cret"}
	require.NoError(t, sec.Validate())
	ctx := t.Context()

	pub, err := kafka.NewPublisherWith(kafka.PublisherParams{Brokers: addrs, Security: sec})
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, location(t, "tls1", 1), location(t, "tls2", 1)))
	require.NoError(t, pub.PublishRaw(ctx, kafka.Record{Topic: locTopic, Key: []byte("poison"), Value: []byte(`{`)}))
	require.NoError(t, pub.Close())

	dlq, err := kafka.NewDeadLetterWriter(kafka.DeadLetterParams{Brokers: addrs, Security: sec})
	require.NoError(t, err)
	defer dlq.Close()
	counts, ix := replaySecured(t, c, sec, dlq.DeadLetter)
	require.Equal(t, int64(2), counts[readmodel.KindLocation])
	require.Equal(t, int64(1), ix.Progress().DeadLetters)

	// SCRAM-SHA-256 works for its user; wrong passwords and a plaintext
	// client are refused.
	for name, tc := range map[string]struct {
		sec *kafka.Security
		ok  bool
	}{
		"scram-sha-256":   {&kafka.Security{CAFile: caFile, SASLMechanism: "SCRAM-SHA-256", Username: "other", Password: "pw256"}, true},
		"wrong password":  {&kafka.Security{CAFile: caFile, SASLMechanism: "SCRAM-SHA-512", Username: "permitd", Password: "wrong"}, false},
		"wrong mechanism": {&kafka.Security{CAFile: caFile, SASLMechanism: "SCRAM-SHA-256", Username: "permitd", Password: "s3cret"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			pub, err := kafka.NewPublisherWith(kafka.PublisherParams{Brokers: addrs, Security: tc.sec})
			require.NoError(t, err)
			defer pub.Close()
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			err = pub.Publish(wctx, location(t, "x-"+name, 1))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			// kfake ends the connection on a failed SCRAM exchange (a
			// real broker answers SASLAuthenticationFailed first):
			// either way refused at once, not timed out.
			require.Error(t, err)
			require.NoError(t, wctx.Err(), "refused, not timed out: %v", err)
		})
	}
}

func TestSecurityValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		sec  *kafka.Security
		want string
	}{
		"unknown mechanism": {&kafka.Security{SASLMechanism: "GSSAPI", Username: "u", Password: "p"}, `kafka SASL mechanism "GSSAPI"`},
		"no password":       {&kafka.Security{SASLMechanism: "PLAIN", Username: "u"}, "kafka SASL PLAIN: username and password are required"},
		"missing CA":        {&kafka.Security{CAFile: "/nonexistent/ca.pem"}, "kafka TLS CA"},
		"cert without key":  {&kafka.Security{CertFile: "/nonexistent/c.pem"}, "kafka TLS: the client certificate and key go together"},
	} {
		require.ErrorContains(t, tc.sec.Validate(), tc.want, name)
	}
	require.NoError(t, (*kafka.Security)(nil).Validate())
	require.NoError(t, (&kafka.Security{SASLMechanism: "PLAIN", Username: "u", Password: "p"}).Validate())
}

// TestTLSConsumerReadsManyAnswers: over TLS, a partition of about 2 MiB
// is read in several fetch answers (MaxFetchBytes, 1 MiB), and every
// message arrives.
func TestTLSConsumerReadsManyAnswers(t *testing.T) {
	serverTLS, caFile := selfSigned(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(serverTLS), kfake.SeedTopics(1, locTopic, events.DeadLetterTopic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	sec := &kafka.Security{CAFile: caFile}
	require.NoError(t, sec.Validate())
	pub, err := kafka.NewPublisherWith(kafka.PublisherParams{Brokers: addrs, Security: sec})
	require.NoError(t, err)
	const n = 6000 // about 2 MiB of location events
	envs := make([]events.Envelope, n)
	for i := range envs {
		envs[i] = location(t, fmt.Sprintf("big%05d", i), 1)
	}
	require.NoError(t, pub.Publish(t.Context(), envs...))
	require.NoError(t, pub.Close())

	counts, _ := replaySecured(t, c, sec, nil)
	require.Equal(t, int64(n), counts[readmodel.KindLocation])
}

// replaySecured replays the locations topic of c with sec into a new
// memory store until caught up, and returns the store's counts and the
// indexer (dlq: its dead-letter sink, nil for none).
func replaySecured(t *testing.T, c *kfake.Cluster, sec *kafka.Security, dlq indexer.DeadLetterFunc) (map[readmodel.Kind]int64, *indexer.Indexer) {
	t.Helper()
	store := memory.New(memory.Params{})
	ix := newIndexer(t, store, dlq)
	p := fastParams(&broker{t: t, addrs: c.ListenAddrs(), cluster: c}, "", ix.HandleBatch)
	p.Topics = []string{locTopic}
	p.Security = sec
	p.Settle = ix.Settle
	r := start(t, p)
	eventually(t, 30*time.Second, "caught up over a secured connection", r.CaughtUp)
	r.stop(t)
	counts, err := store.Counts(t.Context())
	require.NoError(t, err)
	return counts, ix
}
