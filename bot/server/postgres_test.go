package server_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/queue/queuetest"
	"github.com/driftpreview/driftpreview/bot/server"
)

// TestTwoReplicasOnPostgres runs two servers (two River clients, two mirrors) on
// one Postgres; every delivery is sent to both at once, as a load balancer retrying
// across replicas would. Each must be previewed and posted exactly once.
func TestTwoReplicasOnPostgres(t *testing.T) {
	dsn := queuetest.Postgres(t)
	repo := newGitRepo(t)
	var hosts []*fakeHost
	var replicas []*running
	for i := range 2 {
		h := newFakeHost("github", repo.URL)
		hosts = append(hosts, h)
		replicas = append(replicas, startServer(t, h, newFakePreviewer(), func(o *server.Options) {
			o.Queue.Driver, o.Queue.DSN = queue.DriverPostgres, dsn
			o.WorkDir = filepath.Join(t.TempDir(), fmt.Sprint("mirrors", i))
		}))
	}
	const n = 12
	var wg sync.WaitGroup
	codes := make([][2]int, n)
	for i := range n {
		p := pr("acme/shop", 100+i, repo.Head)
		p.BaseSHA = repo.Base
		ev := bot.Event{Kind: bot.EventRun, DeliveryID: fmt.Sprint("delivery-", i), PR: p}
		for r := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i][r] = replicas[r].post(t, ev)
			}()
		}
	}
	wg.Wait()
	for i, c := range codes {
		got := []int{c[0], c[1]}
		sort.Ints(got)
		if diff := cmp.Diff([]int{200, 202}, got); diff != "" {
			t.Errorf("delivery %d answers (-want +got):\n%s", i, diff)
		}
	}
	eventually(t, "every job to complete", func() bool {
		js := jobStates(t, replicas[0].Queue)
		if len(js) != n {
			return false
		}
		for _, j := range js {
			if j.State != rivertype.JobStateCompleted {
				return false
			}
		}
		return true
	})
	// Give a straggler the chance to show up as a second run.
	time.Sleep(200 * time.Millisecond)
	perPR := map[int]int{}
	perReplica := []int{0, 0}
	for r, h := range hosts {
		for _, c := range h.Comments() {
			perPR[c.PR]++
			perReplica[r]++
		}
	}
	want := map[int]int{}
	for i := range n {
		want[100+i] = 1
	}
	if diff := cmp.Diff(want, perPR); diff != "" {
		t.Errorf("comments per PR (-want +got):\n%s", diff)
	}
	t.Logf("jobs worked per replica: %v", perReplica)
}
