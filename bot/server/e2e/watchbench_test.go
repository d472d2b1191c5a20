package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/riverqueue/river/rivertype"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/bot/watch"
	"github.com/driftpreview/driftpreview/fixtures/bench"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// TestWatchBench is `make bench-watch` (issue 26): serve with many open pull
// requests on one cluster of fixtures/bench's monorepo (T=200: 5,000 objects, on a
// fresh test cluster of its own), measured at rest and after edits. It is a
// harness, not a test: it runs only when DRIFTPREVIEW_BENCH_WATCH names the file
// whose generated section gets the results (BENCHMARKS.md), and asserts nothing
// about times. It measures
//   - the time to preview every pull request (one webhook each, the real queue,
//     worker, GitHub adapter and fake);
//   - at rest, for BENCH_WATCH_REST: the API requests serve sends to the cluster
//     per minute (counted in serve's own transport) and the resident set of the
//     process (serve, plus the fakes and the harness, after a GC);
//   - for BENCH_WATCH_EDITS edits (`kubectl edit` of a field git sets, in one pull
//     request's target each): the time from the edit to the updated comment.
func TestWatchBench(t *testing.T) {
	out := os.Getenv("DRIFTPREVIEW_BENCH_WATCH")
	if out == "" {
		t.Skip("make bench-watch runs this (DRIFTPREVIEW_BENCH_WATCH names the results file)")
	}
	prs := envInt(t, "BENCH_WATCH_PRS", 200)
	scale := envInt(t, "BENCH_WATCH_SCALE", 200)
	edits := envInt(t, "BENCH_WATCH_EDITS", 5)
	rest := envDuration(t, "BENCH_WATCH_REST", time.Minute)
	editTimeout := envDuration(t, "BENCH_WATCH_EDIT_TIMEOUT", 2*time.Minute)
	ctrllog.SetLogger(logr.Discard()) // bench.Seed's controller-runtime client logs nothing we need
	ctx := context.Background()
	start := time.Now()

	// The repository: fixtures/bench's monorepo at T, and one PR per number,
	// each changing LOG_LEVEL in one kustomize overlay (the overlays in turn).
	gen, err := bench.Generate(scale, bench.Config)
	if err != nil {
		t.Fatal(err)
	}
	var overlays []bench.Target
	for _, tg := range gen.Targets {
		if tg.Kind == bench.Kustomize {
			overlays = append(overlays, tg)
		}
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := bench.Write(work, gen.Files); err != nil {
		t.Fatal(err)
	}
	gitfixture.Git(t, root, "init", "-q", "-b", "main", work)
	gitfixture.Git(t, work, "add", "-A")
	gitfixture.Git(t, work, "commit", "-q", "-m", "base")
	base := gitfixture.Git(t, work, "rev-parse", "HEAD")
	type openPR struct {
		number int
		head   string
		target bench.Target
	}
	var open []openPR
	for i := range prs {
		tg := overlays[i%len(overlays)]
		gitfixture.Git(t, work, "checkout", "-q", "-B", fmt.Sprintf("pr-%d", i+1), base)
		p := filepath.Join(work, tg.Path, "kustomization.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "LOG_LEVEL: info") {
			t.Fatalf("%s has no LOG_LEVEL: info (fixtures/bench and this harness out of step)", p)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), "LOG_LEVEL: info", "LOG_LEVEL: debug", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		gitfixture.Git(t, work, "commit", "-q", "-am", fmt.Sprintf("pr %d", i+1))
		open = append(open, openPR{number: i + 1, head: gitfixture.Git(t, work, "rev-parse", "HEAD"), target: tg})
	}
	gitfixture.Git(t, root, "clone", "-q", "--bare", work, filepath.Join(root, "git", "acme", "shop.git"))
	t.Logf("%d PRs over %d overlays in %s", prs, min(prs, len(overlays)), time.Since(start).Round(time.Second))

	// The cluster: its own (envtest's service range is a /24, too small for
	// T=200's Services), seeded as make bench seeds it.
	cl, err := testcluster.StartWithArgs(map[string]string{"service-cluster-ip-range": "10.96.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	sets, err := gen.RenderAll(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	objects := 0
	for _, s := range sets {
		objects += len(s.Objects)
	}
	if _, err := bench.Seed(ctx, cl, gen, sets, ""); err != nil {
		t.Fatal(err)
	}
	sets, gen = nil, nil
	t.Logf("seeded %d objects", objects)
	rssBefore, heapBefore := restingMemory()

	// serve: every request it sends to the cluster is counted.
	var apiCalls, apiWatches atomic.Int64
	cfg := cl.Config()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return countingRT{rt: rt, calls: &apiCalls, watches: &apiWatches}
	})
	r := &repo{root: root, Base: base}
	fake, client, _ := newGitHub(t, r, 0)
	prod := preview.Cluster{Name: "prod", Config: cfg, LiveMode: "simulate"}
	s := startBot(t, map[string]server.Host{"github": client}, func(o *server.Options) {
		o.Jobs.Clusters = map[string]preview.Cluster{"prod": prod}
		o.Jobs.DefaultCluster = &prod
		o.Queue.MaxAttempts = 1
		// serve's watch as configured by default (bot/watch: debounce, per-repository rate limit).
		o.Watch = server.WatchOptions{Enabled: true}
	})

	previewStart := time.Now()
	for _, pr := range open {
		body := ghPayload(t, "opened", pr.number, &repo{root: root, Base: base, Head: pr.head}, "acme/shop")
		id := fmt.Sprintf("bench-open-%d", pr.number)
		if code := s.deliver(t, "github", webhookHeader(id, body), body); code/100 != 2 {
			t.Fatalf("PR %d: delivery answered %d", pr.number, code)
		}
	}
	waitAllDone(t, s, prs, 2*time.Hour)
	previewTook := time.Since(previewStart)
	for _, pr := range open {
		if len(fake.Comments("acme/shop", pr.number)) == 0 {
			t.Fatalf("PR %d has no comment after its preview", pr.number)
		}
	}
	t.Logf("previewed %d PRs in %s", prs, previewTook.Round(time.Second))

	// At rest.
	time.Sleep(10 * time.Second) // informers listed and synced
	calls0, watches0 := apiCalls.Load(), apiWatches.Load()
	time.Sleep(rest)
	calls, watches := apiCalls.Load()-calls0, apiWatches.Load()-watches0
	rss, heap := restingMemory()
	perMin := func(n int64) float64 { return float64(n) / rest.Minutes() }
	t.Logf("at rest: %.1f requests/min (%.1f watches/min), RSS %d MiB, heap %d MiB", perMin(calls), perMin(watches), rss>>20, heap>>20)

	// Edits: `kubectl edit` of TIMEOUT in the settings ConfigMap of a PR's
	// target (a field git sets, which the preview compared), then the time until
	// that PR's sticky comment changes.
	var editTimes []time.Duration
	editNotes := []string{}
	for k := range min(edits, len(open)) {
		pr := open[k*len(open)/max(edits, 1)]
		before := commentText(fake.Comments("acme/shop", pr.number))
		name, err := editSettings(ctx, cl, pr.target.Namespace, fmt.Sprintf("%ds", 31+k))
		if err != nil {
			t.Fatal(err)
		}
		edited := time.Now()
		deadline := edited.Add(editTimeout)
		for time.Now().Before(deadline) && commentText(fake.Comments("acme/shop", pr.number)) == before {
			time.Sleep(100 * time.Millisecond)
		}
		if commentText(fake.Comments("acme/shop", pr.number)) == before {
			editNotes = append(editNotes, fmt.Sprintf("PR %d (ConfigMap %s/%s): no updated comment within %s", pr.number, pr.target.Namespace, name, editTimeout))
			continue
		}
		editTimes = append(editTimes, time.Since(edited))
		t.Logf("edit of %s/%s: PR %d's comment updated after %s", pr.target.Namespace, name, pr.number, time.Since(edited).Round(time.Millisecond))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s at commit `%s`, in %s, on %d CPUs, %s; load average at the end %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), gitDescribe(), time.Since(start).Round(time.Second), runtime.NumCPU(), runtime.Version(), loadAverage())
	b.WriteString("| what | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| open pull requests (one GitHub repository, one cluster) | %d, over %d kustomize overlays of fixtures/bench T=%d |\n", prs, min(prs, len(overlays)), scale)
	fmt.Fprintf(&b, "| objects in the cluster | %d |\n", objects)
	fmt.Fprintf(&b, "| serve's watch | on, defaults: debounce %s, %g re-previews per repository per minute (burst %d) |\n", watch.DefaultDebounce, float64(watch.DefaultRepoPerMin), watch.DefaultRepoBurst)
	fmt.Fprintf(&b, "| time to preview every pull request (webhook to comment, %s) | %s |\n", "1 worker process", secs(previewTook))
	fmt.Fprintf(&b, "| API requests to the cluster per minute at rest (over %s) | %.1f (of which watches %.1f) |\n", rest, perMin(calls), perMin(watches))
	fmt.Fprintf(&b, "| resident set of the process at rest (serve + fakes + harness, after a GC) | %d MiB (%d MiB before serve started: +%d MiB) |\n", rss>>20, rssBefore>>20, (rss-rssBefore)>>20)
	fmt.Fprintf(&b, "| Go heap in use at rest | %d MiB (%d MiB before serve started) |\n", heap>>20, heapBefore>>20)
	if len(editTimes) > 0 {
		fmt.Fprintf(&b, "| time from a `kubectl edit` to the updated comment | median %s, min %s, max %s (%d edits) |\n",
			secs(medianOf(editTimes)), secs(slices.Min(editTimes)), secs(slices.Max(editTimes)), len(editTimes))
	}
	for _, n := range editNotes {
		fmt.Fprintf(&b, "| time from a `kubectl edit` to the updated comment | %s |\n", n)
	}
	if err := writeSection(out, b.String()); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", out, b.String())
}

// countingRT counts the requests serve sends to the cluster, and the watches
// among them.
type countingRT struct {
	rt             http.RoundTripper
	calls, watches *atomic.Int64
}

func (c countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		c.watches.Add(1)
	}
	return c.rt.RoundTrip(req)
}

// webhookHeader signs body as GitHub does for a pull_request delivery.
func webhookHeader(id string, body []byte) http.Header {
	return githubtest.WebhookHeader("pull_request", id, []byte(webhookSecret), body)
}

// waitAllDone waits until n jobs exist and all of them finished.
func waitAllDone(t *testing.T, s *stack, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rows, err := s.queue.Jobs(context.Background(), jobs.Kind)
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, r := range rows {
			switch r.State {
			case rivertype.JobStateCompleted:
				done++
			case rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
				t.Fatalf("job %d %s: %+v", r.ID, r.State, r.Errors)
			}
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs finished after %s", done, n, timeout)
		}
		time.Sleep(time.Second)
	}
}

// editSettings changes TIMEOUT of the settings ConfigMap in ns the way `kubectl
// edit` does (an update as kubectl-edit) and returns the ConfigMap's name.
func editSettings(ctx context.Context, cl *testcluster.Cluster, ns, value string) (string, error) {
	cms := cl.Kube().CoreV1().ConfigMaps(ns)
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, cm := range list.Items {
		if _, ok := cm.Data["TIMEOUT"]; !ok || !strings.Contains(cm.Name, "settings") {
			continue
		}
		cm.Data["TIMEOUT"] = value
		if _, err := cms.Update(ctx, &cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			return "", err
		}
		return cm.Name, nil
	}
	return "", fmt.Errorf("no settings ConfigMap with TIMEOUT in %s", ns)
}

func commentText(cs []githubtest.Comment) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Body)
	}
	return b.String()
}

// restingMemory is the process's resident set (VmRSS) and the Go heap in use,
// after a GC that returns freed memory to the OS.
func restingMemory() (rss, heap int64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rss = kb << 10
			}
		}
	}
	return rss, int64(ms.HeapInuse)
}

// writeSection replaces the make bench-watch section of file.
func writeSection(file, text string) error {
	const begin, end = "<!-- BEGIN make bench-watch: generated by bot/server/e2e TestWatchBench, do not edit -->", "<!-- END make bench-watch -->"
	old, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no section %q … %q", file, begin, end)
	}
	return os.WriteFile(file, []byte(s[:i+len(begin)]+"\n"+text+s[j:]), 0o644)
}

func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a duration such as 60s", name, v)
	}
	return d
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func medianOf(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
