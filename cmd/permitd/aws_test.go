package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOpenSearchSigV4: with -opensearch-aws-sigv4 every request to
// OpenSearch carries an AWS SigV4 Authorization for the configured region
// and service, with credentials from the SDK's default chain (here the
// AWS_* variables).
func TestOpenSearchSigV4(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	stand, seen := standIn(t, "Authorization", http.StatusOK, `{"version":{"number":"2.19.1","distribution":"opensearch"}}`)

	cfg := openSearchConfig{URLs: stand.URL, Prefix: "permitd", Shards: 1, Replicas: 0, Timeout: 5 * time.Second,
		awsConfig: awsConfig{SigV4: true, Region: "eu-west-1", Service: "aoss"}}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	s, err := cfg.store()
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Ping(t.Context())
	auth := seen()
	if len(auth) == 0 {
		t.Fatal("no request reached the stand-in")
	}
	for _, a := range auth {
		if !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(a, "/eu-west-1/aoss/aws4_request") {
			t.Fatalf("Authorization %q is not a SigV4 signature for eu-west-1/aoss", a)
		}
	}
}

// standIn is an OpenSearch stand-in that answers every request with
// status and the JSON body; seen lists the header of each request it
// received, in order.
func standIn(t *testing.T, header string, status int, body string) (stand *httptest.Server, seen func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	stand = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get(header))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(stand.Close)
	return stand, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func TestOpsConfigValidation(t *testing.T) {
	for name, c := range map[string]struct {
		cfg     opsConfig
		wantErr string
	}{
		"defaults":       {cfg: opsConfig{AdminAddr: "127.0.0.1:9091"}},
		"no admin":       {cfg: opsConfig{}},
		"bad admin":      {cfg: opsConfig{AdminAddr: "nope"}, wantErr: "admin-addr"},
		"pprof no admin": {cfg: opsConfig{Pprof: true}, wantErr: "pprof"},
		"origins":        {cfg: opsConfig{CORSOrigins: "https://dash.example.com, http://localhost:3000"}},
		"origin path":    {cfg: opsConfig{CORSOrigins: "https://dash.example.com/app"}, wantErr: "cors-origins"},
		"origin star":    {cfg: opsConfig{CORSOrigins: "*"}, wantErr: "cors-origins"},
		"origin no host": {cfg: opsConfig{CORSOrigins: "https://"}, wantErr: "cors-origins"},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.cfg.validate()
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
		})
	}
	a := awsConfig{SigV4: true, Service: "s3"}
	if err := a.validate(""); err == nil || err.Error() != `opensearch-aws-service "s3": want es or aoss` {
		t.Errorf("service s3: err %v, want the service named", err)
	}
	if err := (&awsConfig{SigV4: true, Service: "es"}).validate("permitd"); err == nil || err.Error() != "opensearch-aws-sigv4 and opensearch-username exclude each other" {
		t.Errorf("SigV4 with a username: err %v, want the exclusion", err)
	}
}
