package serverconfig

import (
	"log/slog"

	"go.yaml.in/yaml/v3"
)

// Secret holds a secret value (a webhook secret, a token, a private key or a DSN with a
// password). It prints, logs and marshals as "[redacted]" so a secret cannot leak by
// formatting a Config; only Value returns the real bytes.
type Secret struct{ v string }

// NewSecret wraps a value, for callers that build a Config by hand (tests, embedding).
func NewSecret(v string) Secret { return Secret{v: v} }

const redacted = "[redacted]"

// Value is the secret itself. Call it only where the secret is used, never to print.
func (s Secret) Value() string { return s.v }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s.v != "" }

// String redacts the secret for %v and %s.
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return redacted
}

// GoString redacts the secret for %#v.
func (s Secret) GoString() string { return `serverconfig.Secret("` + s.String() + `")` }

// LogValue redacts the secret for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText redacts the secret for encoding/json, YAML and friends.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalYAML reads a secret written inline (only the queue DSN allows that).
func (s *Secret) UnmarshalYAML(n *yaml.Node) error {
	var v string
	if err := n.Decode(&v); err != nil {
		return err
	}
	s.v = v
	return nil
}
