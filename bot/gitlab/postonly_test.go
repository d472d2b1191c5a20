package gitlab_test

import (
	"context"
	"errors"
	"testing"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/gitlab"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
)

// TestPostOnly covers the client `driftpreview comment` uses in a GitLab CI job: no
// webhook secret needed, and no delivery ever verifies (not even an empty token).
func TestPostOnly(t *testing.T) {
	srv := gitlabtest.New(t)
	opts := gitlab.DefaultOptions()
	opts.URL = srv.URL()
	opts.Token = srv.Token
	if _, err := gitlab.New(opts); err == nil {
		t.Fatal("New accepted no webhook secret without PostOnly")
	}
	opts.PostOnly = true
	c, err := gitlab.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.AddProject(project, path)
	pr := bot.PR{Host: "gitlab", Repo: path, ProjectID: project, Number: 7, BaseSHA: base, HeadSHA: head1}
	if err := c.UpsertComment(context.Background(), pr, "", []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Notes(project, 7)); n != 1 {
		t.Errorf("%d notes, want 1", n)
	}
	for _, tok := range []string{"", "x"} {
		h := gitlabtest.WebhookHeader("Merge Request Hook", "u1", tok)
		if _, _, err := c.VerifyWebhook(h); !errors.Is(err, bot.ErrUnauthorized) {
			t.Errorf("post-only client verified X-Gitlab-Token %q: %v", tok, err)
		}
	}
}
