package serverconfig

import (
	"strings"
	"testing"
	"time"
)

// The remote: block is the whole remote policy of the server: prefixes, their
// credential files, timeouts and caps. A bad prefix is an error at its line that
// never shows a credential.
func TestRemoteBlock(t *testing.T) {
	files := secrets(t)
	body := expand(`github: {appID: 1, privateKeyFile: {app.pem}, webhookSecretFile: {gh-webhook}}
remote:
  allow:
  - url: https://charts.example.com/stable
    tokenFile: {gl-token}
  - url: http://10.0.0.5:8080/
    allowPrivate: true
  timeout: 30s
  maxArchiveBytes: 2097152
  cacheMaxBytes: 104857600
`, files)
	cfg, err := Load(writeConfig(t, body), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Remote
	if len(r.Allow) != 2 || r.Allow[0].TokenFile != files["gl-token"] || !r.Allow[1].AllowPrivate ||
		r.Timeout != 30*time.Second || r.MaxArchiveBytes != 2<<20 || r.CacheMaxBytes != 100<<20 {
		t.Errorf("remote %+v", r)
	}
	bad := expand(`github: {appID: 1, privateKeyFile: {app.pem}, webhookSecretFile: {gh-webhook}}
remote:
  allow:
  - url: https://user:hunter2@charts.example.com/
`, files)
	_, err = Load(writeConfig(t, bad), nil)
	if err == nil || !strings.Contains(err.Error(), "server.yaml:3: remote.allow") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad prefix: %v", err)
	}
}
