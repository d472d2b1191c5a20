package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/gitlab"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
)

// GitLabTokenVar is the CI/CD variable `driftpreview comment` reads GitLab's token
// from. CI_JOB_TOKEN cannot write merge request notes or commit statuses, so this
// is a project or group access token (role Developer, scope api), stored as a
// masked variable.
const GitLabTokenVar = "DRIFTPREVIEW_GITLAB_TOKEN"

// commentHost is what `comment` needs from an adapter (*github.Client,
// *gitlab.Client): the calls the bot's worker posts a result with, and the pull
// request's current head, read before posting so an older head's job never
// overwrites a newer head's comment.
type commentHost interface {
	UpsertComment(ctx context.Context, pr bot.PR, key string, pages []string) error
	SetStatus(ctx context.Context, pr bot.PR, s bot.Status) error
	ResolvePR(ctx context.Context, pr bot.PR) (bot.PR, error)
}

// completeTimeout bounds the call that completes the check after the run's context
// is done (a cancel, a timeout) or a step failed. GitHub Actions sends SIGINT,
// then SIGTERM 7.5 s later and SIGKILL 2.5 s after that; GitLab's runner sends
// SIGTERM and kills after its own grace period; so the completion must fit in
// seconds, and retries of a failing API give up with it.
var completeTimeout = 10 * time.Second

// ciCheck is the check run (GitHub) or commit status (GitLab) one `comment` run
// sets in progress. Once open, every way out of the run completes it (complete,
// or the net in runComment's deferred function), each with a fresh short deadline
// detached from the run's context, so a required check never stays in progress.
type ciCheck struct {
	host    commentHost
	pr      bot.PR
	name    string
	started time.Time
	details string
	open    bool // set in progress and not yet completed
}

// complete sets s as the check's final state with its own deadline, even when ctx
// is done.
func (c *ciCheck) complete(ctx context.Context, s bot.Status) error {
	if c == nil || !c.open {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), completeTimeout)
	defer cancel()
	s.StartedAt, s.DetailsURL = c.started, c.details
	if err := c.host.SetStatus(sctx, c.pr, s); err != nil {
		return err
	}
	c.open = false
	return nil
}

// fail completes the check as an error whose title names the step that failed
// and what to do; a failure to complete it is printed, never hidden.
func (c *ciCheck) fail(ctx context.Context, stderr io.Writer, title, summary string) {
	if c == nil || !c.open {
		return
	}
	if err := c.complete(ctx, bot.Status{State: bot.StateError, Title: title, Summary: summary}); err != nil {
		fmt.Fprintf(stderr, "driftpreview comment: completing %s after the failure above: %v\n", c.name, err)
	}
}

// stopped says why ctx ended, for the title of the check it leaves: the signal
// the CI host sent on cancel, or --timeout.
func stopped(ctx context.Context, timeout time.Duration) (title, summary string) {
	cause := context.Cause(ctx)
	if errors.Is(cause, context.DeadlineExceeded) && timeout > 0 {
		return fmt.Sprintf("driftpreview timed out after %s while previewing; raise --timeout or narrow the run with --target", timeout),
			fmt.Sprintf("The preview did not finish within --timeout %s, so there is no result for this commit. Raise --timeout (below the CI job's own timeout), or preview fewer targets (--target), then re-run the job.", timeout)
	}
	why := "the job was cancelled"
	if cause != nil && cause != context.Canceled {
		why = "the job was cancelled (" + cause.Error() + ")"
	}
	return "driftpreview stopped: " + why + "; re-run the job for a result",
		"The CI job was cancelled while driftpreview ran (" + why + "), so there is no result for this commit. Re-run the job to get one; a newer push runs its own job."
}

// ciEnv is the pull request a CI job runs for, read from the host's predefined
// variables. token is a secret: never printed.
type ciEnv struct {
	host       string // "github" or "gitlab"
	pr         bot.PR
	token      string
	apiURL     string // GitHub: the REST root; GitLab: the instance root
	detailsURL string // the job or run, linked from the check
	webURL     string // the repository's web URL, for --repo-url
	// readOnly is a GitHub pull_request run from a fork: its GITHUB_TOKEN cannot
	// write, so the comment goes to the job summary instead.
	readOnly bool
	summary  string // GITHUB_STEP_SUMMARY, when set
}

// runComment is `driftpreview comment`: the preview of the pull request a CI job
// runs for (GitHub Actions or GitLab CI, from their predefined variables), posted
// through the bot's own adapters: the sticky comment split into numbered
// follow-ups (stale ones deleted) and a check run (GitHub) or commit status
// (GitLab). Exit codes are preview's.
func runComment(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	fl := flag.NewFlagSet("comment", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		hostFlag  = fl.String("host", "auto", "github, gitlab, or auto (GITHUB_ACTIONS or GITLAB_CI decides)")
		dryRun    = fl.Bool("dry-run", false, "print the comment and the check instead of posting them")
		botLogin  = fl.String("github-login", "github-actions[bot]", "GitHub: the login comments are posted as, so only its earlier comments are edited (set it to the user of a personal access token)")
		checkName = fl.String("check-name", jobs.DefaultCheckName, "name of the check run (GitHub) or commit status (GitLab); required checks refer to it, and each name keeps its own sticky comment")
		timeout   = fl.Duration("timeout", 0, "bound the preview: when it runs out, the check is completed as timed out (set it below the CI job's timeout, which kills the job without a word); 0 for none")
		reportOut = fl.String("report-file", "", "write the full report page (HTML, as preview --format html) to `path`, for the job to keep as an artifact; the comment links it (GitLab: the job's artifact file, under $CI_PROJECT_DIR; GitHub: the run's artifacts)")
		reportURL = fl.String("report-url", "", "link the full report at this `URL` instead (where the job publishes --report-file)")
	)
	pf := addPreviewFlags(fl)
	if err := fl.Parse(args); err != nil {
		return exitError
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "driftpreview comment: "+format+"\n", a...)
		return exitError
	}
	if fl.NArg() > 0 {
		return fail("unexpected argument %q", fl.Arg(0))
	}
	if strings.TrimSpace(*checkName) == "" || strings.ContainsAny(*checkName, "\r\n") {
		return fail("--check-name %q must be one non-empty line", *checkName)
	}
	if *timeout < 0 {
		return fail("--timeout must not be negative")
	}
	env, err := readCIEnv(*hostFlag, os.Getenv)
	if err != nil {
		return fail("%v", err)
	}
	req, err := pf.request()
	if err != nil {
		return fail("%v", err)
	}
	req.Base, req.Head = env.pr.BaseSHA, env.pr.HeadSHA
	// The working tree is the PR's head: --config is read from the base commit.
	req.ConfigAtBase = true
	if req.BaseBranch == "" {
		req.BaseBranch = env.pr.BaseRef
	}
	if env.webURL != "" {
		req.RepoURLs = append(req.RepoURLs, env.webURL)
	}
	if err := haveCommits(ctx, req.RepoDir, env.host, env.pr.BaseSHA, env.pr.HeadSHA); err != nil {
		return fail("%v", err)
	}
	var host commentHost
	if !*dryRun {
		if host, err = newCommentHost(env, *botLogin, *checkName); err != nil {
			return fail("%v", err)
		}
	}
	where := fmt.Sprintf("%s#%d", env.pr.Repo, env.pr.Number)
	if env.host == "gitlab" {
		where = fmt.Sprintf("%s!%d", env.pr.Repo, env.pr.Number)
	}
	started := time.Now()
	post := host != nil && !env.readOnly
	if env.readOnly {
		forkNotice(stderr, env)
	}
	var chk *ciCheck
	// Whatever ends the run once the check is in progress (a step's error, a
	// panic, a cancel that left nothing else to do), the check is completed.
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "driftpreview comment: internal error (please report it): %v\n%s", r, debug.Stack())
			chk.fail(ctx, stderr, "driftpreview crashed (internal error); re-run the job, and report it if it happens again",
				fmt.Sprintf("driftpreview stopped with an internal error: %v. Re-run the job; if it happens again, report it with the job's log.", r))
			code = exitError
			return
		}
		if chk != nil && chk.open {
			title, summary := "driftpreview stopped before it finished; re-run the job", "driftpreview stopped before it set a result for this commit; the job's log says why."
			if ctx.Err() != nil {
				title, summary = stopped(ctx, 0)
			}
			chk.fail(ctx, stderr, title, summary)
		}
	}()
	if post {
		err := host.SetStatus(ctx, env.pr, bot.Status{State: bot.StateInProgress,
			Title:     "Previewing " + shortSHA(env.pr.BaseSHA) + ".." + shortSHA(env.pr.HeadSHA),
			StartedAt: started, DetailsURL: env.detailsURL})
		switch {
		case err != nil && env.host == "github" && github.IsForbidden(err):
			// The first write says what the payload could not: this token may
			// not write (a fork, or the workflow's permissions block).
			post = false
			env.readOnly = true
			forkNotice(stderr, env)
		case err != nil:
			// A cancel or a timeout may have cut the call after it reached the
			// host: complete the check in case it was set.
			chk = &ciCheck{host: host, pr: env.pr, name: *checkName, started: started, details: env.detailsURL, open: true}
			chk.fail(ctx, stderr, "driftpreview could not start: setting the check failed; re-run the job", "Setting this check in progress failed: "+err.Error())
			return fail("setting the in-progress status on %s: %v", where, err)
		default:
			chk = &ciCheck{host: host, pr: env.pr, name: *checkName, started: started, details: env.detailsURL, open: true}
		}
	}

	pctx := ctx
	if *timeout > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeoutCause(ctx, *timeout, context.DeadlineExceeded)
		defer cancel()
	}
	rep, err := previewRun(pctx, req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			title, summary := stopped(ctx, 0)
			chk.fail(ctx, stderr, title, summary)
		case pctx.Err() != nil:
			title, summary := stopped(pctx, *timeout)
			chk.fail(ctx, stderr, title, summary)
		default:
			chk.fail(ctx, stderr, "driftpreview failed while previewing: "+firstLine(err.Error()),
				"The preview failed, so there is no result for this commit:\n\n"+mdtext.Fence(err.Error(), "")+"\nFix what the error names (a pull request over driftpreview's limits is refused on purpose) and push, or re-run the job if it was a passing failure.")
		}
		return fail("%v", err)
	}
	jo := jobs.DefaultOptions()
	jo.Report.RerunHint = "Re-run the CI job to refresh against the live cluster."
	if *reportOut != "" {
		if err := writeReportFile(*reportOut, rep); err != nil {
			// The comment still goes out, without the link.
			fmt.Fprintf(stderr, "driftpreview comment: writing the report page: %v\n", err)
		} else {
			jo.Report.ReportURL, jo.Report.ReportArtifact = reportLinkFor(env, *reportOut, os.Getenv)
		}
	}
	if *reportURL != "" {
		jo.Report.ReportURL, jo.Report.ReportArtifact = *reportURL, false
	}
	pages := jo.CommentPages(rep, env.pr, commentLimit(env.host)-jobs.CheckNameOverhead(*checkName))
	fmt.Fprint(stdout, strings.Join(pages, "\n"))
	if env.summary != "" {
		if err := appendSummary(env.summary, pages); err != nil {
			fmt.Fprintf(stderr, "driftpreview comment: writing the job summary: %v\n", err)
		}
	}
	state := jobs.Verdict(rep)
	switch {
	case *dryRun:
		fmt.Fprintf(stderr, "driftpreview comment: dry run: would post %d comment page(s) on %s and set %s to %s\n", len(pages), where, *checkName, state)
	case post:
		// The newest head wins: a job of an older head that finishes last leaves
		// the sticky comment to the newer head's job.
		if newer, err := newerHead(ctx, host, env.pr, req.RepoDir); err != nil {
			fmt.Fprintf(stderr, "driftpreview comment: reading the current head of %s (posting anyway): %v\n", where, err)
		} else if newer != "" {
			if err := chk.complete(ctx, bot.Status{State: bot.StateSuperseded, Title: "Superseded by " + shortSHA(newer) + ": its job posts the preview",
				Summary: "The pull request's head moved to " + newer + " while this job previewed " + env.pr.HeadSHA + ", so this job left the comment to the newer commit's job.\n\n" + pages[0]}); err != nil {
				return fail("completing %s as superseded on %s: %v", *checkName, where, err)
			}
			fmt.Fprintf(stderr, "driftpreview comment: %s is superseded by %s: the comment is left to its job; %s is completed as superseded\n", shortSHA(env.pr.HeadSHA), shortSHA(newer), *checkName)
			return exitOK
		}
		if err := host.UpsertComment(ctx, env.pr, "", pages); err != nil {
			title, summary := "driftpreview could not post its comment: "+firstLine(err.Error())+"; re-run the job",
				"The preview finished, but posting the comment failed: "+err.Error()+"\n\nRe-run the job to post it."
			if ctx.Err() != nil {
				title, summary = stopped(ctx, 0)
			}
			chk.fail(ctx, stderr, title, summary+"\n\nThe preview:\n\n"+pages[0])
			return fail("posting the comment on %s: %v", where, err)
		}
		if err := chk.complete(ctx, bot.Status{State: state, Title: report.Title(rep), Summary: pages[0]}); err != nil {
			chk.fail(ctx, stderr, "driftpreview could not set its result: "+firstLine(err.Error())+"; re-run the job",
				"The comment is posted, but setting this check's result failed: "+err.Error())
			return fail("setting the final status on %s: %v", where, err)
		}
		fmt.Fprintf(stderr, "driftpreview comment: posted %d comment page(s) on %s; %s is %s\n", len(pages), where, *checkName, state)
	}
	return exitCode(rep, "comment", stderr)
}

// previewRun is preview.Run; a test replaces it to make the run panic.
var previewRun = preview.Run

// newerHead asks the host for the pull request's current head and returns it when
// it is not the head this run previewed; "" when it is. A head the host reports
// that is an ancestor of this run's head (in the clone at dir) is the host's view
// lagging behind the push that started this job (GitLab computes a merge
// request's diff after the push), not a newer commit.
func newerHead(ctx context.Context, host commentHost, pr bot.PR, dir string) (string, error) {
	cur, err := host.ResolvePR(ctx, pr)
	if err != nil {
		return "", err
	}
	if cur.HeadSHA == "" || cur.HeadSHA == pr.HeadSHA || gitOK(ctx, dir, "merge-base", "--is-ancestor", cur.HeadSHA, pr.HeadSHA) {
		return "", nil
	}
	return cur.HeadSHA, nil
}

// readCIEnv reads the pull request, token and URLs from the CI host's predefined
// variables. host "auto" picks GitHub Actions (GITHUB_ACTIONS=true) or GitLab CI
// (GITLAB_CI=true).
func readCIEnv(host string, getenv func(string) string) (*ciEnv, error) {
	if host == "auto" {
		switch {
		case getenv("GITHUB_ACTIONS") == "true":
			host = "github"
		case getenv("GITLAB_CI") == "true":
			host = "gitlab"
		default:
			return nil, errors.New("not in GitHub Actions (GITHUB_ACTIONS) nor GitLab CI (GITLAB_CI); pass --host github or --host gitlab with their variables set, or run `driftpreview preview` to print the comment")
		}
	}
	switch host {
	case "github":
		return githubEnv(getenv)
	case "gitlab":
		return gitlabEnv(getenv)
	}
	return nil, fmt.Errorf("--host must be github, gitlab or auto, not %q", host)
}

// githubEvent is the part of a pull_request or pull_request_target event payload
// (GITHUB_EVENT_PATH) that names the pull request.
// https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request
type githubEvent struct {
	Number      int `json:"number"`
	PullRequest *struct {
		Number  int    `json:"number"`
		HTMLURL string `json:"html_url"`
		Base    struct {
			Ref  string `json:"ref"`
			SHA  string `json:"sha"`
			Repo *struct {
				FullName string `json:"full_name"`
			} `json:"repo"`
		} `json:"base"`
		Head struct {
			Ref  string `json:"ref"`
			SHA  string `json:"sha"`
			Repo *struct {
				FullName string `json:"full_name"`
			} `json:"repo"` // null when the fork was deleted
		} `json:"head"`
	} `json:"pull_request"`
}

// maxEventBytes bounds the event payload read; GitHub caps webhook payloads at
// 25 MB.
const maxEventBytes = 25 << 20

func githubEnv(getenv func(string) string) (*ciEnv, error) {
	event := getenv("GITHUB_EVENT_NAME")
	if event != "pull_request" && event != "pull_request_target" {
		return nil, fmt.Errorf("GITHUB_EVENT_NAME is %q: run driftpreview comment on pull_request (or pull_request_target) events; `driftpreview preview` prints the comment elsewhere", event)
	}
	path := getenv("GITHUB_EVENT_PATH")
	if path == "" {
		return nil, errors.New("GITHUB_EVENT_PATH is not set; it is the event payload file GitHub Actions provides")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the event payload: %w", err)
	}
	defer f.Close()
	var ev githubEvent
	if err := json.NewDecoder(io.LimitReader(f, maxEventBytes)).Decode(&ev); err != nil {
		return nil, fmt.Errorf("reading the event payload %s: %v", path, err)
	}
	p := ev.PullRequest
	if p == nil || p.Base.SHA == "" || p.Head.SHA == "" {
		return nil, fmt.Errorf("event payload %s has no pull_request with base.sha and head.sha", path)
	}
	repo := getenv("GITHUB_REPOSITORY")
	if p.Base.Repo != nil && p.Base.Repo.FullName != "" {
		if repo != "" && !strings.EqualFold(repo, p.Base.Repo.FullName) {
			return nil, fmt.Errorf("GITHUB_REPOSITORY %q is not the pull request's base repository %q", repo, p.Base.Repo.FullName)
		}
		repo = p.Base.Repo.FullName
	}
	if repo == "" {
		return nil, errors.New("GITHUB_REPOSITORY is not set")
	}
	number := p.Number
	if number == 0 {
		number = ev.Number
	}
	env := &ciEnv{
		host: "github",
		pr: bot.PR{Host: "github", Repo: repo, Number: number, BaseRef: p.Base.Ref, BaseSHA: p.Base.SHA,
			HeadRef: p.Head.Ref, HeadSHA: p.Head.SHA, URL: p.HTMLURL},
		token:   getenv("GITHUB_TOKEN"),
		apiURL:  getenv("GITHUB_API_URL"),
		summary: getenv("GITHUB_STEP_SUMMARY"),
	}
	if p.Head.Repo == nil || !strings.EqualFold(p.Head.Repo.FullName, repo) {
		env.pr.Fork = true
		if p.Head.Repo != nil {
			env.pr.HeadRepo = p.Head.Repo.FullName
		}
		// pull_request runs from forks get a read-only GITHUB_TOKEN, so nothing
		// is posted; pull_request_target runs have a write token. Other tokens
		// that may not write are found by the 403 of the first write.
		env.readOnly = event == "pull_request"
	}
	if env.apiURL == "" {
		env.apiURL = "https://api.github.com"
	}
	if server := strings.TrimSuffix(getenv("GITHUB_SERVER_URL"), "/"); server != "" {
		env.webURL = server + "/" + repo
		if run := getenv("GITHUB_RUN_ID"); run != "" {
			env.detailsURL = env.webURL + "/actions/runs/" + run
		}
	}
	if env.token == "" && !env.readOnly {
		return nil, errors.New("GITHUB_TOKEN is not set: pass it to the step (env: GITHUB_TOKEN: ${{ github.token }}) and grant the job permissions pull-requests: write, checks: write, contents: read")
	}
	return env, nil
}

func gitlabEnv(getenv func(string) string) (*ciEnv, error) {
	iid, _ := strconv.Atoi(getenv("CI_MERGE_REQUEST_IID"))
	if iid <= 0 {
		return nil, errors.New("CI_MERGE_REQUEST_IID is not set: run driftpreview comment in a merge request pipeline (rules: - if: $CI_PIPELINE_SOURCE == \"merge_request_event\")")
	}
	// The merge request's project: where the notes go. In a pipeline of a fork's
	// merge request run in the parent project, CI_PROJECT_ID is the parent too.
	projectVar := "CI_MERGE_REQUEST_PROJECT_ID"
	if getenv(projectVar) == "" {
		projectVar = "CI_PROJECT_ID"
	}
	project, err := strconv.ParseInt(getenv(projectVar), 10, 64)
	if err != nil || project <= 0 {
		return nil, fmt.Errorf("%s %q is not a project ID", projectVar, getenv(projectVar))
	}
	repo := getenv("CI_MERGE_REQUEST_PROJECT_PATH")
	if repo == "" {
		repo = getenv("CI_PROJECT_PATH")
	}
	// In a merged results pipeline CI_COMMIT_SHA is the temporary merge commit;
	// the merge request's head is then CI_MERGE_REQUEST_SOURCE_BRANCH_SHA.
	head := getenv("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA")
	if head == "" {
		head = getenv("CI_COMMIT_SHA")
	}
	base := getenv("CI_MERGE_REQUEST_DIFF_BASE_SHA")
	if base == "" || head == "" {
		return nil, errors.New("CI_MERGE_REQUEST_DIFF_BASE_SHA or CI_COMMIT_SHA is not set: run driftpreview comment in a merge request pipeline")
	}
	api := strings.TrimSuffix(getenv("CI_API_V4_URL"), "/")
	root, ok := strings.CutSuffix(api, "/api/v4")
	if !ok || root == "" {
		return nil, fmt.Errorf("CI_API_V4_URL %q does not end in /api/v4", api)
	}
	env := &ciEnv{
		host: "gitlab",
		pr: bot.PR{Host: "gitlab", Repo: repo, Number: iid, ProjectID: project,
			BaseRef: getenv("CI_MERGE_REQUEST_TARGET_BRANCH_NAME"), BaseSHA: base,
			HeadRef: getenv("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"), HeadSHA: head},
		token:  getenv(GitLabTokenVar),
		apiURL: root,
		webURL: strings.TrimSuffix(getenv("CI_MERGE_REQUEST_PROJECT_URL"), "/"),
	}
	if env.webURL == "" {
		env.webURL = strings.TrimSuffix(getenv("CI_PROJECT_URL"), "/")
	}
	if env.webURL != "" {
		env.pr.URL = env.webURL + "/-/merge_requests/" + strconv.Itoa(iid)
	}
	if src := getenv("CI_MERGE_REQUEST_SOURCE_PROJECT_ID"); src != "" && src != strconv.FormatInt(project, 10) {
		env.pr.Fork = true
		env.pr.HeadRepo = getenv("CI_MERGE_REQUEST_SOURCE_PROJECT_PATH")
	}
	env.detailsURL = getenv("CI_JOB_URL")
	if env.detailsURL == "" {
		env.detailsURL = getenv("CI_PIPELINE_URL")
	}
	if env.token == "" {
		msg := GitLabTokenVar + " is not set: CI_JOB_TOKEN cannot write merge request notes, so create a project access token (role Developer, scope api) and store it as a masked CI/CD variable " + GitLabTokenVar
		if env.pr.Fork {
			msg += "; pipelines of merge requests from forks run in the fork and do not see the parent's variables: run them in the parent project (Run pipeline on the merge request)"
		}
		return nil, errors.New(msg)
	}
	return env, nil
}

// commentLimit is the comment size limit of host (github or gitlab).
func commentLimit(host string) int {
	if host == "gitlab" {
		return gitlab.MaxCommentLength
	}
	return github.MaxCommentLength
}

// retrySleep, when set, replaces how the adapters wait between retries (tests).
var retrySleep func(ctx context.Context, d time.Duration) error

// newCommentHost builds the bot's adapter for env, authenticated with its token.
func newCommentHost(env *ciEnv, botLogin, checkName string) (commentHost, error) {
	switch env.host {
	case "github":
		o := github.DefaultOptions()
		o.Retry.Sleep = retrySleep
		o.Token = env.token
		o.APIURL = env.apiURL
		o.BotLogin = botLogin
		o.CheckName = checkName
		if o.Token == "" {
			return nil, nil
		}
		return github.New(o)
	case "gitlab":
		o := gitlab.DefaultOptions()
		o.Retry.Sleep = retrySleep
		o.URL = env.apiURL
		o.Token = env.token
		o.PostOnly = true
		o.StatusName = checkName
		return gitlab.New(o)
	}
	return nil, fmt.Errorf("unknown host %q", env.host)
}

// forkNotice says why nothing is posted and how to post for fork pull requests.
// The ::warning:: line is an Actions workflow command (an annotation on the run).
func forkNotice(w io.Writer, env *ciEnv) {
	fmt.Fprintf(w, "::warning title=driftpreview::The GITHUB_TOKEN of this run cannot write to %s (a pull_request run from a fork gets a read-only token), so the preview goes to the job summary instead of a comment.\n", env.pr.Repo)
	fmt.Fprint(w, `driftpreview comment: to comment on pull requests from forks, run the workflow on pull_request_target (it gets a write token and the base repository's secrets) and keep it safe:
  - check out the PR head by SHA (ref: ${{ github.event.pull_request.head.sha }}, persist-credentials: false) and run nothing from it but driftpreview, which only reads manifests and never executes the PR's code;
  - pin the driftpreview version and the actions by SHA, and give the job only pull-requests: write, checks: write, contents: read;
  - give the kubeconfig read-only RBAC (--live-mode simulate) and gate the job with an environment that requires approval for outside contributors.
`)
}

// writeReportFile writes rep's HTML page to path.
func writeReportFile(path string, rep *diffing.Report) error {
	page, err := report.HTML(rep)
	if err != nil {
		return err
	}
	return os.WriteFile(path, page, 0o644)
}

// reportLinkFor is where a reader finds the page written to path: on GitLab the
// job's artifact file (${CI_JOB_URL}/artifacts/file/<path under
// $CI_PROJECT_DIR>, which GitLab serves once the job keeps it under
// artifacts:paths); on GitHub the run's page, whose artifacts list holds it
// (actions/upload-artifact gives no URL before the upload, which runs after
// this step). "" when neither is known.
func reportLinkFor(env *ciEnv, path string, getenv func(string) string) (link string, artifact bool) {
	switch env.host {
	case "gitlab":
		job := strings.TrimSuffix(getenv("CI_JOB_URL"), "/")
		rel := path
		if dir := getenv("CI_PROJECT_DIR"); filepath.IsAbs(path) && dir != "" {
			r, err := filepath.Rel(dir, path)
			if err != nil || r == ".." || strings.HasPrefix(r, "../") {
				return "", false // GitLab keeps artifacts from the project dir only
			}
			rel = r
		}
		if job == "" || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(filepath.Clean(rel), "../") {
			return "", false
		}
		var segs []string
		for _, s := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
			segs = append(segs, url.PathEscape(s))
		}
		return job + "/artifacts/file/" + strings.Join(segs, "/"), false
	case "github":
		if env.detailsURL != "" {
			return env.detailsURL, true
		}
	}
	return "", false
}

// appendSummary adds the comment to the GitHub Actions job summary (markdown).
func appendSummary(path string, pages []string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, strings.Join(pages, "\n")+"\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// haveCommits makes sure base and head are in the checkout, fetching them by SHA
// from origin when a shallow clone lacks them.
func haveCommits(ctx context.Context, dir, host string, shas ...string) error {
	for _, sha := range shas {
		if gitOK(ctx, dir, "cat-file", "-e", sha+"^{commit}") {
			continue
		}
		if gitOK(ctx, dir, "fetch", "--quiet", "--no-tags", "origin", sha) && gitOK(ctx, dir, "cat-file", "-e", sha+"^{commit}") {
			continue
		}
		hint := "check out with fetch-depth: 0 (actions/checkout)"
		if host == "gitlab" {
			hint = "set GIT_DEPTH: 0 on the job"
		}
		return fmt.Errorf("commit %s is not in the checkout %s and could not be fetched from origin: %s", sha, dir, hint)
	}
	return nil
}

func gitOK(ctx context.Context, dir string, args ...string) bool {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	return cmd.Run() == nil
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
