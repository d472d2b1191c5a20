package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/watch"
)

// WatchOptions turns on the re-check of open pull requests when their live
// objects change (bot/watch).
type WatchOptions struct {
	Enabled bool
	watch.Options
}

// liveHistory keeps each posted preview's live side in the queue's database
// (jobs.LiveHistory) and has the watcher, when there is one, watch it.
type liveHistory struct {
	q   *queue.Queue
	w   *watch.Watcher
	log *slog.Logger
}

func (h *liveHistory) LastLive(ctx context.Context, prKey string) (*jobs.LiveRecord, error) {
	b, found, err := h.q.LoadLive(ctx, prKey)
	if err != nil || !found {
		return nil, err
	}
	var rec jobs.LiveRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("decoding the live side of %s: %w", prKey, err)
	}
	return &rec, nil
}

func (h *liveHistory) Previewed(ctx context.Context, rec jobs.LiveRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	key := jobs.PRKey(rec.PR)
	if err := h.q.SaveLive(ctx, key, b); err != nil {
		return err
	}
	if h.w != nil {
		h.w.Watch(key, rec.PR.Host+"/"+rec.PR.Repo, rec.Objects)
	}
	return nil
}

// closed forgets a closed or merged pull request: nothing re-checks it again.
func (h *liveHistory) closed(ctx context.Context, prKey string) error {
	if h.w != nil {
		h.w.Forget(prKey)
	}
	return h.q.DeleteLive(ctx, prKey)
}

// rebuild watches the live side of every open pull request kept in the
// database: the watch survives a restart.
func (h *liveHistory) rebuild(ctx context.Context) (int, error) {
	if h.w == nil {
		return 0, nil
	}
	n := 0
	err := h.q.OpenLive(ctx, func(pr string, payload []byte) error {
		var rec jobs.LiveRecord
		if err := json.Unmarshal(payload, &rec); err != nil {
			h.log.Warn("skipping an unreadable live record", "pr", pr, "error", err)
			return nil
		}
		h.w.Watch(pr, rec.PR.Host+"/"+rec.PR.Repo, rec.Objects)
		n++
		return ctx.Err()
	})
	return n, err
}

// recheck queues a re-preview of prKey's head because its live objects changed:
// the watcher's callback. The newest re-check wins: older unfinished ones of the
// pull request are cancelled first.
func (s *Server) recheck(prKey string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := s.log.With("pr", prKey)
	rec, err := s.live.LastLive(ctx, prKey)
	if err != nil || rec == nil {
		log.Error("re-check: no live record", "error", err)
		return
	}
	sha, state, found, err := s.Queue.Head(ctx, prKey)
	if err != nil {
		log.Error("re-check: reading the head failed", "error", err)
		return
	}
	if found && (state == queue.PRClosed || sha != "" && sha != rec.PR.HeadSHA) {
		// Closed, or a push's job previews the new head (and records it).
		if state == queue.PRClosed {
			s.watcher.Forget(prKey)
		}
		return
	}
	tag := jobs.PRTag(rec.PR)
	if ids, err := s.Queue.RecheckDue(ctx, tag); err != nil {
		log.Error("re-check: cancelling older re-checks failed", "error", err)
		return
	} else if len(ids) > 0 {
		log.Info("re-check: cancelled older re-checks", "cancelled", ids)
	}
	id, _, err := s.Queue.Insert(ctx, jobs.NewRecheckArgs(rec.PR, time.Now()), nil)
	if err != nil {
		log.Error("re-check: queueing failed", "error", err)
		return
	}
	s.Metrics.rechecks.Inc()
	log.Info("live objects changed: queued a re-preview", "job", id, "head", rec.PR.HeadSHA)
}

// watchClusters are the rest.Configs the watcher watches, by the cluster names
// previews record (the default cluster also under "").
func watchClusters(o jobs.Options) map[string]*rest.Config {
	out := map[string]*rest.Config{}
	for name, c := range o.Clusters {
		if c.Config != nil {
			out[name] = c.Config
		}
	}
	if d := o.DefaultCluster; d != nil && d.Config != nil {
		out[""] = d.Config
		if d.Name != "" {
			out[d.Name] = d.Config
		}
	}
	return out
}

// watchCollector exports the watcher's sizes and counters on /metrics.
type watchCollector struct {
	w                                                  *watch.Watcher
	prs, objects, sources, changes, fired, limited, un *prometheus.Desc
}

func newWatchCollector(w *watch.Watcher) *watchCollector {
	return &watchCollector{w: w,
		prs:     prometheus.NewDesc("driftpreview_watch_pull_requests", "Open pull requests whose live objects are watched.", nil, nil),
		objects: prometheus.NewDesc("driftpreview_watch_objects", "Distinct live objects watched for open pull requests.", nil, nil),
		sources: prometheus.NewDesc("driftpreview_watch_sources", "Informers (mode watch) and periodic LISTs (mode poll, watch forbidden) running, one per cluster, resource type and namespace in use.", []string{"mode"}, nil),
		changes: prometheus.NewDesc("driftpreview_watch_changes_total", "Live object changes that differ from what an open pull request's preview saw.", nil, nil),
		fired:   prometheus.NewDesc("driftpreview_watch_fired_total", "Re-previews asked for by the watch (after debouncing).", nil, nil),
		limited: prometheus.NewDesc("driftpreview_watch_rate_limited_total", "Re-previews delayed by the per-repository rate limit.", nil, nil),
		un:      prometheus.NewDesc("driftpreview_watch_unwatched_objects_total", "Previewed objects not watched: their kind or cluster is unknown to the watcher.", nil, nil),
	}
}

func (c *watchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.prs, c.objects, c.sources, c.changes, c.fired, c.limited, c.un} {
		ch <- d
	}
}

func (c *watchCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.w.Stats()
	ch <- prometheus.MustNewConstMetric(c.prs, prometheus.GaugeValue, float64(s.PRs))
	ch <- prometheus.MustNewConstMetric(c.objects, prometheus.GaugeValue, float64(s.Objects))
	ch <- prometheus.MustNewConstMetric(c.sources, prometheus.GaugeValue, float64(s.Watches), "watch")
	ch <- prometheus.MustNewConstMetric(c.sources, prometheus.GaugeValue, float64(s.Polls), "poll")
	ch <- prometheus.MustNewConstMetric(c.changes, prometheus.CounterValue, float64(s.Changes))
	ch <- prometheus.MustNewConstMetric(c.fired, prometheus.CounterValue, float64(s.Fired))
	ch <- prometheus.MustNewConstMetric(c.limited, prometheus.CounterValue, float64(s.Limited))
	ch <- prometheus.MustNewConstMetric(c.un, prometheus.CounterValue, float64(s.Unmapped))
}
