package config

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// FileName is the repo config file, read from the base branch by the bot.
const FileName = ".driftpreview.yaml"

// Config is a parsed .driftpreview.yaml.
type Config struct {
	Version       int
	Targets       []Target
	Policy        diffing.Policy
	StatefulKinds []schema.GroupKind
	HumanManagers []string
	Ignore        []diffing.IgnoreRule
	// Discovered is true when Targets came from auto-discovery, not the file.
	Discovered bool
	// ArgoKustomizeBuildOptions is argocd.kustomizeBuildOptions: Argo CD's
	// kustomize.buildOptions (argocd-cm) for when argocd-cm cannot be read
	// from the cluster; nil when unset.
	ArgoKustomizeBuildOptions *string
	// ChartMetadata is noise.chartMetadata: the label and annotation keys
	// (path.Match patterns) whose changes the comment folds into one line per
	// object; nil when unset (diffing.DefaultChartMetadata), empty to fold
	// nothing.
	ChartMetadata []string
}

// Target is one thing to render and compare: a directory (kustomization, chart or
// plain YAML) at a path in the repo, and where and how it is deployed.
type Target struct {
	Name      string
	Path      string // relative to the repo root, slash-separated
	Render    render.Options
	Namespace string
	Cluster   string
	Sync      Sync
	// Ignore holds rules that apply to this target only (Argo CD ignoreDifferences).
	Ignore []diffing.IgnoreRule
	// Watch are glob patterns of repository paths (path.Match; "dir/**" is
	// everything under dir) whose change makes the target affected by a pull
	// request, on top of the files its render reads (render.FindInputs).
	Watch []string
	// Controller is set when the target was discovered from a GitOps object.
	Controller *diffing.Controller
	// Notes are remarks the report shows, e.g. an ignoreDifferences jq expression
	// that could not be evaluated.
	Notes []string
	// Findings are target-level findings known before rendering (suspended
	// Kustomization, source outside the repo).
	Findings []diffing.Finding
	// Skip, when non-empty, says why the target is listed but not rendered.
	Skip string
	// Substitute holds Flux postBuild variables: the render process applies
	// them to the rendered objects (render.Options.Substitute: ${VAR},
	// ${VAR:=default}) before diffing. Values that came from Secrets are
	// already hidden placeholders.
	Substitute map[string]string
	// HeadSide is set only on discovered targets that the head commit declares
	// too but renders differently (a HelmRelease's values, a Kustomization's path
	// or variables): the head side is rendered that way, because that is what
	// the controller deploys after the merge. Everything else (whether the target
	// is compared, sync, ignore rules, policy) stays as the base declares it.
	HeadSide *HeadSide
	// DeclaredBy is, for a discovered target, the key (cluster and name, as
	// discover.Key gives it) of the target whose render declares its controller
	// object (an app of apps, a Flux Kustomization applying a directory of
	// Kustomizations); empty when a file of the repository declares it.
	DeclaredBy string
	// SameAtHead is set on a discovered target that the head declares
	// exactly as the base does (its controller object as discovery reads
	// it, path, options, variables, notes and findings): a change to what
	// renders its controller object does not change it, so only its own
	// inputs can (issue 25: a Flux Kustomization over a directory of apps
	// re-emits each app's Kustomization; a change there touches only the
	// apps whose objects it changes).
	SameAtHead bool `json:"-"`
}

// HeadSide is how the head commit renders a discovered target.
type HeadSide struct {
	Path       string
	Render     render.Options
	Substitute map[string]string
}

// Sync describes how the GitOps controller applies the target.
type Sync struct {
	Prune    bool
	SelfHeal bool
	Manager  string
	Replace  bool
	// HelmCRDs are a Flux HelmRelease's CRD policies (discovery only).
	HelmCRDs diffing.HelmCRDs
}
