package gitsrc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Fetcher clones remote bases. Allowed and Dial carry the remote policy; the
// zero value of each limit takes its default.
type Fetcher struct {
	// Dir is where checkouts are written, one directory per repository and
	// commit; it must exist.
	Dir string
	// Allowed reports whether the policy allows fetching the repository URL
	// (an error saying why not).
	Allowed func(repoURL string) error
	// Dial opens connections for git; it is where private addresses are refused.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxTransferBytes caps what git downloads (default 64 MiB), MaxTreeBytes
	// and MaxFiles the checked-out tree (default 64 MiB, 10,000 files),
	// Timeout the whole fetch (default 60 s).
	MaxTransferBytes int64
	MaxTreeBytes     int64
	MaxFiles         int64
	Timeout          time.Duration

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// Kind classifies a failure for the not-rendered reason.
type Kind int

// The failure kinds.
const (
	KindRefused     Kind = iota // the policy refuses the URL or an address
	KindNotFound                // no such repository or ref
	KindTooBig                  // the transfer or the tree is over its limit
	KindTimeout                 // the fetch took longer than the timeout
	KindUnreachable             // anything else git or the network failed at
)

// Error is a failed fetch.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Result is a fetched base.
type Result struct {
	// Root is the checkout of the whole repository (a base may refer to
	// ../common within it); Path the base's directory in it.
	Root   string
	Path   string
	Commit string
}

func (f *Fetcher) limits() (transfer, tree, files int64, timeout time.Duration) {
	transfer, tree, files, timeout = f.MaxTransferBytes, f.MaxTreeBytes, f.MaxFiles, f.Timeout
	if transfer <= 0 {
		transfer = 64 << 20
	}
	if tree <= 0 {
		tree = 64 << 20
	}
	if files <= 0 {
		files = 10_000
	}
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	return
}

// lock serialises fetches of one key, so two targets naming one base fetch it once.
func (f *Fetcher) lock(key string) func() {
	f.mu.Lock()
	if f.locks == nil {
		f.locks = map[string]*sync.Mutex{}
	}
	l := f.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		f.locks[key] = l
	}
	f.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Fetch checks out the repository s names at its ref. A checkout already
// fetched for the same URL and commit-pinned ref is reused.
func (f *Fetcher) Fetch(ctx context.Context, s Spec) (Result, error) {
	if f.Allowed == nil || f.Dial == nil {
		return Result{}, &Error{Kind: KindRefused, Msg: fmt.Sprintf("remote base %s is not fetched: no remote policy allows it", s.RepoURL)}
	}
	if err := f.Allowed(s.RepoURL); err != nil {
		return Result{}, &Error{Kind: KindRefused, Msg: fmt.Sprintf("remote base %s is refused by the remote policy: %v", s.RepoURL, err)}
	}
	u, err := url.Parse(s.RepoURL)
	if err != nil {
		return Result{}, &Error{Kind: KindRefused, Msg: fmt.Sprintf("remote base %s: %v", s.Raw, err)}
	}
	transfer, maxTree, maxFiles, timeout := f.limits()
	sum := sha256.Sum256([]byte(s.RepoURL + "\x00" + s.Ref))
	key := hex.EncodeToString(sum[:16])
	defer f.lock(key)()
	dir := filepath.Join(f.Dir, key)
	if s.Pinned() {
		if c, err := os.ReadFile(filepath.Join(dir, ".driftpreview-commit")); err == nil && strings.TrimSpace(string(c)) == s.Ref {
			return Result{Root: filepath.Join(dir, "tree"), Path: s.Path, Commit: s.Ref}, nil
		}
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	px, err := startProxy(ctx, hostPort(u), f.Dial, transfer)
	if err != nil {
		return Result{}, err
	}
	defer px.close()

	g := &gitCmd{dir: filepath.Join(dir, "repo"), proxy: px.url, home: dir}
	fail := func(err error) (Result, error) {
		_ = os.RemoveAll(dir)
		switch {
		case px.over.Load():
			return Result{}, &Error{Kind: KindTooBig, Msg: fmt.Sprintf("remote base %s: the download is over the %d MiB limit", s.RepoURL, transfer>>20)}
		case px.refused.Load() != nil:
			return Result{}, &Error{Kind: KindRefused, Msg: fmt.Sprintf("remote base %s is refused by the remote policy: %v", s.RepoURL, *px.refused.Load())}
		case ctx.Err() != nil:
			return Result{}, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("remote base %s: fetching took longer than %s and was stopped", s.RepoURL, timeout)}
		}
		var e *Error
		if errors.As(err, &e) {
			return Result{}, e
		}
		msg := err.Error()
		if strings.Contains(msg, "not found") || strings.Contains(msg, "couldn't find remote ref") || strings.Contains(msg, "not our ref") || strings.Contains(msg, " 404") {
			return Result{}, &Error{Kind: KindNotFound, Msg: fmt.Sprintf("remote base %s: repository or ref %q not found", s.RepoURL, s.Ref)}
		}
		return Result{}, &Error{Kind: KindUnreachable, Msg: fmt.Sprintf("remote base %s could not be fetched: %s", s.RepoURL, msg)}
	}
	if _, err := g.run(ctx, "", "init", "-q", "--bare", g.dir); err != nil {
		return fail(err)
	}
	ref := s.Ref
	if ref == "" {
		ref = "HEAD"
	}
	if _, err := g.run(ctx, g.dir, "fetch", "-q", "--depth=1", "--no-tags", "--no-recurse-submodules", "--", s.RepoURL, ref); err != nil {
		return fail(err)
	}
	out, err := g.run(ctx, g.dir, "rev-parse", "--verify", "FETCH_HEAD^{commit}")
	if err != nil {
		return fail(err)
	}
	commit := strings.TrimSpace(string(out))
	if err := g.checkTree(ctx, commit, maxTree, maxFiles); err != nil {
		return fail(err)
	}
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o700); err != nil {
		return fail(err)
	}
	if _, err := g.run(ctx, g.dir, "--work-tree="+tree, "-c", "core.symlinks=true", "checkout", "-q", "-f", commit, "--", "."); err != nil {
		return fail(err)
	}
	_ = os.RemoveAll(g.dir) // the objects are not needed any more
	if s.Pinned() && commit != s.Ref {
		return fail(fmt.Errorf("fetched commit %s, not the pinned %s", commit, s.Ref))
	}
	if err := os.WriteFile(filepath.Join(dir, ".driftpreview-commit"), []byte(commit+"\n"), 0o600); err != nil {
		return fail(err)
	}
	return Result{Root: tree, Path: s.Path, Commit: commit}, nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "http" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return net.JoinHostPort(u.Hostname(), "443")
}

// gitCmd runs git with no user config, in its own process group.
type gitCmd struct {
	dir   string
	proxy string
	home  string
}

func (g *gitCmd) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	base := []string{
		"-c", "http.proxy=" + g.proxy,
		"-c", "http.followRedirects=false",
		"-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "-c", "protocol.http.allow=always",
		"-c", "core.hooksPath=/dev/null", "-c", "submodule.recurse=false",
		"-c", "credential.helper=", "-c", "core.askPass=",
		"-c", "transfer.fsckObjects=true",
	}
	if dir != "" {
		base = append(base, "--git-dir="+dir)
	}
	cmd := exec.CommandContext(ctx, "git", append(base, args...)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + g.home, "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_ALLOW_PROTOCOL=http:https", "GIT_PROTOCOL_FROM_USER=0",
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limited{w: &stdout, n: 1 << 20}, &limited{w: &stderr, n: 8 << 10}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(msg, "\n"); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
}

// checkTree sizes the tree of commit from git's listing before anything is
// written: more than maxFiles entries (files and the directories holding
// them: ls-tree -t lists the trees too) or maxBytes bytes is an error.
func (g *gitCmd) checkTree(ctx context.Context, commit string, maxBytes, maxFiles int64) error {
	out, err := g.run(ctx, g.dir, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commit)
	if err != nil {
		return err
	}
	var files, total int64
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, _, ok := strings.Cut(string(rec), "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta) // mode type object size
		if len(f) != 4 || f[1] != "blob" && f[1] != "tree" {
			continue
		}
		files++
		n, _ := strconv.ParseInt(f[3], 10, 64)
		total += n
		if files > maxFiles {
			return &Error{Kind: KindTooBig, Msg: fmt.Sprintf("the remote repository has more than %d files and directories, the limit for a remote base", maxFiles)}
		}
		if total > maxBytes {
			return &Error{Kind: KindTooBig, Msg: fmt.Sprintf("the remote repository's files add up to more than %d MiB, the limit for a remote base", maxBytes>>20)}
		}
	}
	return nil
}

type limited struct {
	w io.Writer
	n int64
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// proxy is the only way git reaches the network: an HTTP proxy on loopback
// that forwards to one host:port only, dialled through the policy's dialer,
// and counts the bytes it passes back against the cap.
type proxy struct {
	url     string
	ln      net.Listener
	srv     *http.Server
	over    atomic.Bool
	refused atomic.Pointer[error]
	read    atomic.Int64
}

func startProxy(ctx context.Context, target string, dial func(context.Context, string, string) (net.Conn, error), max int64) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{url: "http://" + ln.Addr().String(), ln: ln}
	connect := func(addr string) (net.Conn, error) {
		if addr != target {
			err := fmt.Errorf("git asked for %s, not the repository's host %s", addr, target)
			p.refused.Store(&err)
			return nil, err
		}
		c, err := dial(ctx, "tcp", addr)
		if err != nil {
			p.refused.CompareAndSwap(nil, &err)
			return nil, err
		}
		return &countingConn{Conn: c, p: p, max: max}, nil
	}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			up, err := connect(r.Host)
			if err != nil {
				http.Error(w, "refused", http.StatusForbidden)
				return
			}
			hj, ok := w.(http.Hijacker)
			if !ok {
				up.Close()
				return
			}
			down, brw, err := hj.Hijack()
			if err != nil {
				up.Close()
				return
			}
			if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
				down.Close()
				up.Close()
				return
			}
			go pipe(down, brw, up)
			return
		}
		// Plain HTTP: git sends the absolute URL.
		if r.URL.Host == "" {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		addr := r.URL.Host
		if r.URL.Port() == "" {
			addr = net.JoinHostPort(r.URL.Hostname(), "80")
		}
		tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return connect(addr) }, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		out := r.Clone(ctx)
		out.RequestURI = ""
		out.Header.Del("Proxy-Connection")
		out.Header.Del("Proxy-Authorization")
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, "refused", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *proxy) close() { _ = p.srv.Close() }

func pipe(down net.Conn, brw *bufio.ReadWriter, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			_, _ = up.Write(b)
		}
		_, _ = io.Copy(up, down)
		done <- struct{}{}
	}()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
	down.Close()
	up.Close()
}

// countingConn closes the connection once more than max bytes were read from
// the remote.
type countingConn struct {
	net.Conn
	p   *proxy
	max int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.p.read.Add(int64(n)) > c.max {
		c.p.over.Store(true)
		c.Conn.Close()
		return 0, errors.New("download over the limit")
	}
	return n, err
}
