package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
)

// StreamVerifier is implemented by hosts that authenticate a delivery while its body
// streams in (*github.Client: HMAC of the body; *gitlab.Client: a header token), so
// the handler never holds an unauthenticated body in memory.
type StreamVerifier interface {
	// VerifyWebhook checks what the headers alone can prove. It returns a writer the
	// whole body must be written to and a check that, once it was, says whether the
	// delivery is authentic. Errors wrap bot.ErrUnauthorized.
	VerifyWebhook(h http.Header) (io.Writer, func() error, error)
}

// spoolMemory is how much of a delivery body is kept in memory; the rest goes to a
// temporary file until the signature over the whole body has been checked.
const spoolMemory = 256 << 10

// spool holds a body being received: up to spoolMemory bytes in memory, the rest in
// a temporary file that Close removes.
type spool struct {
	mem  bytes.Buffer
	file *os.File
	n    int64
}

func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && s.mem.Len()+len(p) <= spoolMemory {
		s.n += int64(len(p))
		return s.mem.Write(p)
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "driftpreview-webhook-*")
		if err != nil {
			return 0, fmt.Errorf("spooling webhook body: %w", err)
		}
		s.file = f
		if _, err := f.Write(s.mem.Bytes()); err != nil {
			return 0, fmt.Errorf("spooling webhook body: %w", err)
		}
		s.mem = bytes.Buffer{}
	}
	n, err := s.file.Write(p)
	s.n += int64(n)
	if err != nil {
		return n, fmt.Errorf("spooling webhook body: %w", err)
	}
	return n, nil
}

// Bytes returns the whole body; call it only once the delivery is authenticated.
func (s *spool) Bytes() ([]byte, error) {
	if s.file == nil {
		return s.mem.Bytes(), nil
	}
	buf := make([]byte, s.n)
	if _, err := s.file.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading spooled webhook body: %w", err)
	}
	return buf, nil
}

// Close removes the temporary file, if any.
func (s *spool) Close() {
	if s.file != nil {
		_ = s.file.Close()
		_ = os.Remove(s.file.Name())
		s.file = nil
	}
}
