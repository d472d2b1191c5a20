package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/serverconfig"
)

// syncBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const (
	testGHSecret = "gh-webhook-secret-3f9a"
	testGLSecret = "gl-webhook-secret-77c1"
	testGLToken  = "glpat-serve-test-token"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: bot
  user: {token: kube-token-not-logged}
contexts:
- name: prod
  context: {cluster: prod, user: bot}
current-context: prod
`

func TestServeUsageAndConfigErrors(t *testing.T) {
	dir := t.TempDir()
	noSecret := writeFile(t, dir, "no-secret.yaml", "github: {appID: 1, privateKeyFile: "+writeFile(t, dir, "k.pem", "x")+"}\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unexpected argument", []string{"extra"}, `driftpreview serve: unexpected argument "extra"`},
		{"unknown flag", []string{"--nope"}, "flag provided but not defined: -nope"},
		{"missing config file", []string{"--config", filepath.Join(dir, "absent.yaml")}, "driftpreview serve: reading server config: open " + filepath.Join(dir, "absent.yaml")},
		{"no host", []string{"--config", writeFile(t, dir, "empty.yaml", "listen: \":0\"\n")}, "no host to serve"},
		{"no webhook secret", []string{"--config", noSecret}, noSecret + ":1: github.webhookSecretFile: refusing to serve GitHub webhooks without a webhook secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runServe(context.Background(), tt.args, &stdout, &stderr)
			if code != exitError {
				t.Errorf("exit code %d, want %d", code, exitError)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr.String())
			}
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServeRunsAndStops starts the real command with GitHub and GitLab, checks the
// endpoints and webhook authentication, stops it through ctx, and checks the logs
// hold no secret.
func TestServeRunsAndStops(t *testing.T) {
	dir := t.TempDir()
	_, keyPEM, err := githubtest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	cfg := fmt.Sprintf(`listen: %q
metrics: {listen: %q, bearerTokenFile: %s}
github: {appID: 42, privateKeyFile: %s, webhookSecretFile: %s}
gitlab: {url: https://gitlab.example, tokenFile: %s, webhookSecretFile: %s}
clusters:
  prod: {kubeconfig: %s, context: prod}
  lab: {liveMode: "off"}
defaultCluster: prod
queue: {driver: sqlite, sweepInterval: 5s}
repos: ["acme/*"]
workDir: %s
`, addr, metricsAddr, writeFile(t, dir, "metrics-token", "scrape-token\n"), writeFile(t, dir, "app.pem", string(keyPEM)), writeFile(t, dir, "gh", testGHSecret+"\n"),
		writeFile(t, dir, "gl-token", testGLToken), writeFile(t, dir, "gl", testGLSecret),
		writeFile(t, dir, "kubeconfig", kubeconfig), filepath.Join(dir, "mirrors"))
	path := writeFile(t, dir, "server.yaml", cfg)
	// The environment completes the file: the queue DSN comes from a variable.
	t.Setenv("DRIFTPREVIEW_QUEUE_DSN", filepath.Join(dir, "state", "queue.db"))
	loaded, err := serverconfig.Load(path, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	opts, err := serverOptions(loaded, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if opts.SweepInterval != 5*time.Second {
		t.Errorf("server SweepInterval = %s, want the 5s of queue.sweepInterval", opts.SweepInterval)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- runServe(ctx, []string{"--config", path}, io.Discard, &stderr) }()

	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never answered: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	body := []byte(`{"zen":"Keep it logically awesome."}`)
	tests := []struct {
		name   string
		method string
		path   string
		header http.Header
		body   []byte
		want   int
	}{
		{"healthz", http.MethodGet, "/healthz", nil, nil, 200},
		{"readyz", http.MethodGet, "/readyz", nil, nil, 200},
		{"no metrics next to the webhooks", http.MethodGet, "/metrics", nil, nil, 404},
		{"metrics without the token", http.MethodGet, "http://" + metricsAddr + "/metrics", nil, nil, 401},
		{"metrics", http.MethodGet, "http://" + metricsAddr + "/metrics", http.Header{"Authorization": {"Bearer scrape-token"}}, nil, 200},
		{"github ping is ignored", http.MethodPost, "/webhooks/github", githubtest.WebhookHeader("ping", "p1", []byte(testGHSecret), body), body, 200},
		{"github bad signature", http.MethodPost, "/webhooks/github", githubtest.WebhookHeader("ping", "p2", []byte("wrong"), body), body, 401},
		{"gitlab bad token", http.MethodPost, "/webhooks/gitlab", http.Header{"X-Gitlab-Token": {"wrong"}, "X-Gitlab-Event": {"Merge Request Hook"}}, body, 401},
		{"webhook GET is not allowed", http.MethodGet, "/webhooks/github", nil, nil, 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.path
			if !strings.HasPrefix(url, "http://") {
				url = base + url
			}
			req, _ := http.NewRequest(tt.method, url, bytes.NewReader(tt.body))
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
			}
		})
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit code after shutdown %d, want 0:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "queue.db")); err != nil {
		t.Errorf("queue database not created where DRIFTPREVIEW_QUEUE_DSN says: %v", err)
	}
	logs := stderr.String()
	for _, want := range []string{`"msg":"serving"`, `"msg":"stopped"`, `"hosts":["github","gitlab"]`, `"cluster":"prod"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	for _, secret := range []string{testGHSecret, testGLSecret, testGLToken, "PRIVATE KEY", "kube-token-not-logged"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs leak %q:\n%s", secret, logs)
		}
	}
}
