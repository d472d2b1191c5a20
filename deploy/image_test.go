package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, USER, …
	args string
	line int
}

// stage is one FROM … block of a Dockerfile.
type stage struct {
	from, name string
	ins        []instruction
}

// parseDockerfile splits a Dockerfile into its global ARGs and stages. It knows the
// Dockerfile syntax this project uses: comments, `\` continuations, instructions.
func parseDockerfile(t *testing.T, path string) (globals []instruction, stages []stage) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cur strings.Builder
	start := 0
	flush := func() {
		s := strings.TrimSpace(cur.String())
		cur.Reset()
		if s == "" {
			return
		}
		cmd, args, _ := strings.Cut(s, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			st := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
		case len(stages) == 0:
			globals = append(globals, in)
		default:
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	return globals, stages
}

func (s stage) last(cmd string) (instruction, bool) {
	for i := len(s.ins) - 1; i >= 0; i-- {
		if s.ins[i].cmd == cmd {
			return s.ins[i], true
		}
	}
	return instruction{}, false
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// execForm decodes an exec-form (JSON array) ENTRYPOINT or CMD.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var out []string
	if err := yaml.Unmarshal([]byte(in.args), &out); err != nil || !strings.HasPrefix(in.args, "[") {
		t.Fatalf("Dockerfile:%d: %s %s is not the exec form", in.line, in.cmd, in.args)
	}
	return out
}

// TestDockerfileMatchesChart checks offline what the image promises the chart: the
// final stage runs as a numeric non-root user (the one the chart's pod runs as),
// its entrypoint is the driftpreview binary the chart's args are given to, it
// exposes the ports the chart's container declares, keeps HOME and TMPDIR on the
// volume the chart mounts writable under a read-only root filesystem, and has git.
func TestDockerfileMatchesChart(t *testing.T) {
	_, stages := parseDockerfile(t, "../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a multi-stage build", len(stages))
	}
	final := stages[len(stages)-1]

	user, ok := final.last("USER")
	if !ok {
		t.Fatal("the final stage sets no USER: it would run as root")
	}
	uidStr, gidStr, _ := strings.Cut(user.args, ":")
	uid, err := strconv.Atoi(uidStr)
	if err != nil || uid == 0 {
		t.Fatalf("Dockerfile:%d: USER %s is not a numeric non-root user (runAsNonRoot needs a number to verify)", user.line, user.args)
	}
	if gidStr != "" {
		if gid, err := strconv.Atoi(gidStr); err != nil || gid == 0 {
			t.Errorf("Dockerfile:%d: USER %s: group is not numeric and non-root", user.line, user.args)
		}
	}
	entry, ok := final.last("ENTRYPOINT")
	if !ok {
		t.Fatal("the final stage has no ENTRYPOINT")
	}
	ep := execForm(t, entry)
	if len(ep) != 1 || filepath.Base(ep[0]) != "driftpreview" || !filepath.IsAbs(ep[0]) {
		t.Fatalf("ENTRYPOINT %v, want the absolute path of the driftpreview binary alone", ep)
	}
	var copied bool
	for _, c := range final.all("COPY") {
		if f := strings.Fields(c.args); strings.HasPrefix(f[0], "--from=") && f[len(f)-1] == ep[0] {
			copied = true
		}
	}
	if !copied {
		t.Errorf("no COPY --from=… puts the binary at the ENTRYPOINT %s", ep[0])
	}
	var exposed []int
	for _, e := range final.all("EXPOSE") {
		for _, p := range strings.Fields(e.args) {
			n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
			if err != nil {
				t.Fatalf("Dockerfile:%d: EXPOSE %s", e.line, p)
			}
			exposed = append(exposed, n)
		}
	}
	env := map[string]string{}
	for _, e := range final.all("ENV") {
		for _, kv := range strings.Fields(e.args) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	var installsGit bool
	for _, r := range final.all("RUN") {
		if regexp.MustCompile(`apt-get install[^&]* git( |$)`).MatchString(r.args) {
			installsGit = true
		}
	}
	if !installsGit {
		t.Error("the final stage does not install git, which the bot runs to fetch pull requests")
	}

	set := renderChart(t, map[string]any{"metrics": map[string]any{"enabled": true}})
	deps := byKind(set, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("got %d Deployments, want 1", len(deps))
	}
	pod, _, _ := unstructured.NestedMap(deps[0].Object, "spec", "template", "spec")
	runAs, _, _ := unstructured.NestedInt64(pod, "securityContext", "runAsUser")
	if runAs != int64(uid) {
		t.Errorf("the chart runs the pod as %d, the image as %d", runAs, uid)
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	if cmd, ok := c["command"]; ok {
		if got, _ := cmd.([]any); len(got) == 0 || got[0] != ep[0] {
			t.Errorf("the chart's command %v does not run the image's binary %s", cmd, ep[0])
		}
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if len(args) == 0 || args[0] != "serve" {
		t.Errorf("the chart's args %v do not start with a driftpreview subcommand (serve)", args)
	}
	ports, _, _ := unstructured.NestedSlice(c, "ports")
	if len(ports) < 2 {
		t.Fatalf("the chart declares ports %v, want http and metrics", ports)
	}
	for _, p := range ports {
		n, _, _ := unstructured.NestedInt64(p.(map[string]any), "containerPort")
		if !slices.Contains(exposed, int(n)) {
			t.Errorf("the chart's container port %d is not EXPOSEd by the Dockerfile (EXPOSE %v)", n, exposed)
		}
	}
	mounted := map[string]bool{}
	ms, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	for _, m := range ms {
		mm := m.(map[string]any)
		if ro, _ := mm["readOnly"].(bool); !ro {
			mounted[mm["mountPath"].(string)] = true
		}
	}
	for _, k := range []string{"HOME", "TMPDIR"} {
		if !mounted[env[k]] {
			t.Errorf("the image's %s=%q is not a writable volume of the chart (writable mounts %v): a read-only root filesystem would break git", k, env[k], mounted)
		}
	}
}

// goreleaser is the part of .goreleaser.yaml this project uses, with the field
// names of GoReleaser v2's config (pkg/config: Project, Build, Archive, Checksum,
// DockerV2). Decoding rejects unknown keys, so a misspelt key fails here as it
// would fail `goreleaser check`.
type goreleaser struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Before      struct {
		Hooks []string `yaml:"hooks"`
	} `yaml:"before"`
	Builds []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		ModTime string   `yaml:"mod_timestamp"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string   `yaml:"id"`
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
		Files        []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Snapshot struct {
		VersionTemplate string `yaml:"version_template"`
	} `yaml:"snapshot"`
	DockersV2 []struct {
		ID         string            `yaml:"id"`
		IDs        []string          `yaml:"ids"`
		Dockerfile string            `yaml:"dockerfile"`
		Images     []string          `yaml:"images"`
		Tags       []string          `yaml:"tags"`
		Platforms  []string          `yaml:"platforms"`
		BuildArgs  map[string]string `yaml:"build_args"`
		Labels     map[string]string `yaml:"labels"`
	} `yaml:"dockers_v2"`
	Changelog struct {
		Sort string `yaml:"sort"`
	} `yaml:"changelog"`
}

// TestReleaseConfig checks .goreleaser.yaml offline: its shape, linux and darwin on
// amd64 and arm64, checksums, the version stamp `make build` uses, and an image of
// the chart's repository built from the Dockerfile's prebuilt stage.
func TestReleaseConfig(t *testing.T) {
	b, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var g goreleaser
	if err := dec.Decode(&g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if g.Version != 2 || len(g.Builds) != 1 || len(g.Archives) != 1 || len(g.DockersV2) != 1 {
		t.Fatalf("want version 2 with one build, archive and image: %+v", g)
	}
	bd := g.Builds[0]
	if bd.Main != "./cmd/driftpreview" || bd.Binary != "driftpreview" || !slices.Contains(bd.Env, "CGO_ENABLED=0") {
		t.Errorf("build %+v", bd)
	}
	slices.Sort(bd.Goos)
	slices.Sort(bd.Goarch)
	if !slices.Equal(bd.Goos, []string{"darwin", "linux"}) || !slices.Equal(bd.Goarch, []string{"amd64", "arm64"}) {
		t.Errorf("builds for %v × %v, want darwin, linux × amd64, arm64", bd.Goos, bd.Goarch)
	}
	ldflags := strings.Join(bd.Ldflags, " ")
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, stages := parseDockerfile(t, "../Dockerfile")
	var dockerBuild string
	for _, st := range stages {
		for _, r := range st.all("RUN") {
			if strings.Contains(r.args, "go build") {
				dockerBuild = r.args
			}
		}
	}
	for _, x := range []string{"-X main.version=", "-X main.commit="} {
		if !strings.Contains(ldflags, x) {
			t.Errorf(".goreleaser.yaml ldflags %q lack %s", ldflags, x)
		}
		if !strings.Contains(string(mk), x) {
			t.Errorf("the Makefile's build does not stamp %s", x)
		}
		if !strings.Contains(dockerBuild, x) {
			t.Errorf("the Dockerfile's go build does not stamp %s", x)
		}
	}
	if g.Checksum.NameTemplate == "" || g.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v, want a sha256 checksums file", g.Checksum)
	}
	if a := g.Archives[0]; !slices.Contains(a.IDs, bd.ID) {
		t.Errorf("archive %+v does not package build %s", a, bd.ID)
	}
	img := g.DockersV2[0]
	if img.Dockerfile != "Dockerfile" || !slices.Contains(img.IDs, bd.ID) {
		t.Errorf("image %+v: want the repository's Dockerfile with build %s", img, bd.ID)
	}
	names := map[string]bool{}
	for _, st := range stages {
		names[st.name] = true
	}
	if stageName := img.BuildArgs["BINARY"]; !names[stageName] {
		t.Errorf("image build arg BINARY=%q names no Dockerfile stage (%v)", stageName, names)
	}
	slices.Sort(img.Platforms)
	if !slices.Equal(img.Platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("image platforms %v", img.Platforms)
	}
	values, err := os.ReadFile("chart/driftpreview/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Image struct {
			Repository string `yaml:"repository"`
		} `yaml:"image"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(img.Images, v.Image.Repository) {
		t.Errorf("the release pushes %v, the chart pulls %s", img.Images, v.Image.Repository)
	}
	if !strings.Contains(string(mk), "IMAGE       ?= "+v.Image.Repository+":") {
		t.Errorf("make image does not tag %s", v.Image.Repository)
	}
}

// TestMakeImage runs `make image` with stand-in builders: a docker without a daemon
// is reported and skipped, buildah is then used with the version stamp, and with no
// builder at all the target says so and succeeds.
func TestMakeImage(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for _, b := range []string{"docker", "podman", "buildah"} {
		for _, dir := range []string{"/usr/bin", "/bin"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err == nil {
				t.Skipf("%s/%s is installed; the stand-ins could not shadow it", dir, b)
			}
		}
	}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "buildah.log")
	write := func(name, script string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("docker", "echo 'Cannot connect to the Docker daemon' >&2; exit 1\n")
	write("buildah", `echo "$@" > `+log+"\n")
	makeImage := func(path string) string {
		cmd := exec.Command("make", "-s", "-C", "..", "image", "VERSION=v1.2.3", "COMMIT=abc123")
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make image: %v\n%s", err, out)
		}
		return string(out)
	}
	out := makeImage(bin + ":/usr/bin:/bin")
	if !strings.Contains(out, "docker is installed but cannot build here") || !strings.Contains(out, "with buildah") {
		t.Errorf("make image output:\n%s", out)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("buildah was not run: %v\n%s", err, out)
	}
	want := "build --build-arg VERSION=v1.2.3 --build-arg COMMIT=abc123 -t ghcr.io/driftpreview/driftpreview:v1.2.3 ."
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("buildah %s, want %s", got, want)
	}
	if err := os.Remove(filepath.Join(bin, "buildah")); err != nil {
		t.Fatal(err)
	}
	out = makeImage(bin + ":/usr/bin:/bin")
	if !strings.Contains(out, "make image: skipped: no working container builder") {
		t.Errorf("make image without a builder:\n%s", out)
	}
}
