package serverconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportsConfig: the reports block defaults its cap and retention when a URL
// is set, reads the key file as a secret, takes environment overrides, and names
// the line of each mistake.
func TestReportsConfig(t *testing.T) {
	files := secrets(t)
	keyFile := filepath.Join(t.TempDir(), "report-key")
	if err := os.WriteFile(keyFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "short-key")
	if err := os.WriteFile(short, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := expand(fullConfig, files)

	c, err := Load(writeConfig(t, base+"reports: {url: https://bot.example.com}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Reports; !r.Enabled() || r.MaxBytes != DefaultReportMaxBytes || r.Retention != DefaultReportRetention || r.Key.IsSet() {
		t.Errorf("defaults: %+v", r)
	}
	c, err = Load(writeConfig(t, base+"reports: {url: https://bot.example.com, keyFile: "+keyFile+", maxBytes: 5000000}\n"),
		[]string{"DRIFTPREVIEW_REPORTS_RETENTION=168h"})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Reports; r.Key.Value() != "0123456789abcdef0123456789abcdef" || r.MaxBytes != 5000000 || r.Retention != 168*time.Hour || r.Key.String() != "[redacted]" {
		t.Errorf("set: %+v", r)
	}
	if c, err := Load(writeConfig(t, base), nil); err != nil || c.Reports.Enabled() {
		t.Errorf("no reports block: %+v %v", c.Reports, err)
	}
	for yaml, want := range map[string]string{
		"reports: {maxBytes: 100}\n":                                           ":10: reports.url: is needed",
		"reports: {url: bot.example.com}\n":                                    ":10: reports.url: not an http(s) URL",
		"reports: {url: 'https://bot.example.com/?a=b'}\n":                     "reports.url: not an http(s) URL",
		"reports: {url: https://bot.example.com, maxBytes: -1}\n":              "reports.maxBytes: must be positive",
		"reports: {url: https://bot.example.com, keyFile: " + short + "}\n":    "reports.keyFile: the key is shorter than 16 bytes",
		"reports: {url: https://bot.example.com, keyFile: /nonexistent/key}\n": "reports.keyFile: reading secret file",
	} {
		_, err := Load(writeConfig(t, base+yaml), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", strings.TrimSpace(yaml), err, want)
		}
	}
}
