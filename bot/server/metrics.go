package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/diffing"
)

// Metrics are the bot's Prometheus metrics, on a registry of their own so nothing
// global leaks in. They implement jobs.Observer.
type Metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	jobs       *prometheus.CounterVec
	duration   prometheus.Histogram
	findings   *prometheus.CounterVec
	liveDrift  *prometheus.GaugeVec
	rechecks   prometheus.Counter

	driftMu      sync.Mutex
	driftObjects *prometheus.GaugeVec
}

// NewMetrics registers the metrics (and Go/process collectors) on a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftpreview_webhook_deliveries_total",
			Help: "Webhook deliveries by host and result (queued, duplicate, ignored, not_allowed, cancelled, unauthorized, bad_request, too_large, busy, error).",
		}, []string{"host", "result"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftpreview_jobs_total",
			Help: "Preview job attempts by outcome (success, failure, neutral, superseded, denied, retry, error).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "driftpreview_job_duration_seconds",
			Help:    "Duration of preview job attempts.",
			Buckets: []float64{0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600},
		}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftpreview_findings_total",
			Help: "Findings in posted reports, by rule.",
		}, []string{"rule"}),
		liveDrift: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftpreview_live_drift_objects",
			Help: "Objects with live drift (hand edits the merge would revert) in the last report of each target.",
		}, []string{"repo", "target"}),
		rechecks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftpreview_watch_rechecks_total",
			Help: "Re-previews queued because an open pull request's live objects changed.",
		}),
		driftObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftpreview_drift_objects",
			Help: "Objects of the default branch's targets with live drift git does not describe, by repository, target and cluster, from the last drift report run.",
		}, []string{"repo", "target", "cluster"}),
	}
	m.reg.MustRegister(m.deliveries, m.jobs, m.duration, m.findings, m.liveDrift, m.rechecks, m.driftObjects,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// MetricsHandler serves GET /metrics of m. With a token, a scrape without
// "Authorization: Bearer <token>" gets 401 (compared in constant time); that is what
// Prometheus sends for authorization.credentials_file.
func MetricsHandler(m *Metrics, token string) http.Handler {
	mux := http.NewServeMux()
	metrics := m.Handler()
	want := sha256.Sum256([]byte("Bearer " + token))
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if token != "" {
			got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="driftpreview metrics"`)
				http.Error(w, "unauthorized: send Authorization: Bearer <metrics token>", http.StatusUnauthorized)
				return
			}
		}
		metrics.ServeHTTP(w, r)
	})
	return mux
}

// Registry is the metrics' registry, for callers adding their own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) delivery(host, result string) {
	m.deliveries.WithLabelValues(host, result).Inc()
}

// JobFinished counts one job attempt.
func (m *Metrics) JobFinished(outcome string, d time.Duration) {
	m.jobs.WithLabelValues(outcome).Inc()
	m.duration.Observe(d.Seconds())
}

// ReportPosted counts a posted report's findings and records live drift per target.
func (m *Metrics) ReportPosted(pr bot.PR, r *diffing.Report) {
	for _, f := range r.Findings {
		m.findings.WithLabelValues(string(f.Rule)).Inc()
	}
	for _, t := range r.Targets {
		drift := map[string]bool{}
		for _, f := range t.Findings {
			m.findings.WithLabelValues(string(f.Rule)).Inc()
			if f.Rule == diffing.RuleLiveDrift {
				drift[f.Key.String()] = true
			}
		}
		m.liveDrift.WithLabelValues(pr.Host+"/"+pr.Repo, t.Name).Set(float64(len(drift)))
	}
}

// DriftReported sets the drift gauge of repo ("github/acme/shop") to counts:
// the series of repo's targets not in counts (no longer in the repository, or
// not compared this time) are removed, so only the last run's targets show.
func (m *Metrics) DriftReported(repo string, counts []diffing.TargetCount) {
	m.driftMu.Lock()
	defer m.driftMu.Unlock()
	m.driftObjects.DeletePartialMatch(prometheus.Labels{"repo": repo})
	for _, c := range counts {
		m.driftObjects.WithLabelValues(repo, c.Target, c.Cluster).Set(float64(c.Objects))
	}
}
