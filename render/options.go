package render

import (
	"time"

	"github.com/driftpreview/driftpreview/render/remote"
)

// Renderer names how a target's directory is turned into objects.
type Renderer string

// The renderers a target may ask for. RendererAuto picks by the files present:
// a kustomization means kustomize, a Chart.yaml means helm, anything else plain.
const (
	RendererAuto      Renderer = "auto"
	RendererKustomize Renderer = "kustomize"
	RendererHelm      Renderer = "helm"
	RendererPlain     Renderer = "plain"
)

// Options says how to render one target. Paths inside it are relative to the
// checkout root unless noted.
type Options struct {
	Renderer Renderer
	// Namespace is set on namespaced objects that have none, as Argo CD and Flux do
	// with their destination/target namespace.
	Namespace string
	Plain     PlainOptions
	Helm      HelmOptions
	Kustomize KustomizeOptions
	// ArgoCDHooks leaves out the objects Argo CD runs as sync hooks
	// (argocd.argoproj.io/hook, or helm.sh/hook from any source type), as an Argo
	// CD Application does. Helm hooks are always left out of a Helm render.
	ArgoCDHooks bool
	// Substitute are Flux postBuild variables, applied to the rendered
	// objects in the render process as kustomize-controller applies them
	// (github.com/fluxcd/pkg/envsubst; see substitute), their output counted
	// against MaxOutputBytes. As in Flux, nothing is substituted when there
	// are no variables, unless SubstituteAlways (postBuild.substituteStrategy:
	// Always).
	Substitute       map[string]string `json:"substitute,omitempty"`
	SubstituteAlways bool              `json:"substituteAlways,omitempty"`
	// SubstituteLenient turns strict substitution off: a variable that is
	// not set and has no default becomes empty instead of failing the
	// render. kustomize-controller is strict by default (feature gate
	// StrictPostBuildSubstitutions, v1.9); discovery sets this when a
	// substituteFrom object could not be read, so variables it would set
	// are not taken for missing ones.
	SubstituteLenient bool `json:"substituteLenient,omitempty"`

	// MaxFileBytes caps any single input file; MaxTotalBytes caps what the target
	// reads and renders together; MaxOutputBytes caps the rendered manifests
	// alone (template output before parsing, and the result handed back by the
	// render process); Timeout caps the whole render (wall clock).
	MaxFileBytes   int64
	MaxTotalBytes  int64
	MaxOutputBytes int64
	Timeout        time.Duration
	// MaxMemoryBytes is the memory limit (RLIMIT_DATA: heap and other private
	// writable memory) of the render process, and MaxCPUTime its CPU-time limit
	// (RLIMIT_CPU): the kernel enforces both.
	MaxMemoryBytes int64
	MaxCPUTime     time.Duration

	// Checkout, when set, names the checkout root is: a tree nothing changes
	// while the name is in use, such as a preview's checkout of one commit
	// (NewCheckoutID makes a name; a new checkout gets a new one, even at the
	// same path). A render process then keeps what it reads of the checkout
	// for the renders that follow (see treecache.go); without it, every
	// render reads every file from the file system again. It is not part of
	// what a render produces, so not of its JSON (content keys).
	Checkout string `json:"-"`

	// Remote fetches what the render needs from outside the checkout: the chart
	// of Helm.Chart and chart dependencies that charts/ does not hold. Render
	// fetches in the calling process, into the fetcher's cache, before the render
	// process starts; the render process reads only local files. nil fetches
	// nothing: such targets are *Unavailable.
	Remote *remote.Fetcher `json:"-"`
	// Budget, when set, is the CPU time the preview's renders share (see
	// Budget); nil leaves each render to its own limits only.
	Budget *Budget `json:"-"`
	// OCI, when set, renders the target path inside a Flux OCIRepository's
	// artifact (fetched by Remote) instead of inside the checkout.
	OCI *OCISource `json:"oci,omitempty"`
}

// OCISource is a Flux OCIRepository: spec.url, spec.ref (digest wins over
// semver, semver over tag; none means "latest"), spec.layerSelector and
// spec.insecure. With Renderer helm (a HelmRelease's chartRef to an
// OCIRepository) the artifact is a chart, rendered as the target; otherwise
// the target path is read inside it.
type OCISource struct {
	URL    string `json:"url"`
	Tag    string `json:"tag,omitempty"`
	SemVer string `json:"semver,omitempty"`
	// SemverFilter is spec.ref.semverFilter (a regular expression the tags
	// must match before SemVer is applied).
	SemverFilter string `json:"semverFilter,omitempty"`
	Digest       string `json:"digest,omitempty"`
	MediaType    string `json:"mediaType,omitempty"`
	Operation    string `json:"operation,omitempty"`
	Insecure     bool   `json:"insecure,omitempty"`
	// Argo makes this an Argo CD OCI source (repoURL oci://…): Tag is the
	// targetRevision (a tag, digest or semver constraint, resolved as Argo
	// CD's repo server does) and the target path is read inside the
	// artifact, a chart's directory being its root.
	Argo bool `json:"argo,omitempty"`
}

func (s OCISource) String() string {
	ref := s.Tag
	switch {
	case s.Argo:
		ref = " " + s.Tag
	case s.Digest != "":
		ref = "@" + s.Digest
	case s.SemVer != "" && s.SemverFilter != "":
		ref = " " + s.SemVer + " (tags matching " + s.SemverFilter + ")"
	case s.SemVer != "":
		ref = " " + s.SemVer
	case ref == "":
		ref = ":latest"
	default:
		ref = ":" + ref
	}
	return "OCI artifact " + remote.Redact(s.URL) + ref
}

// PlainOptions applies to directories of YAML/JSON manifests.
type PlainOptions struct {
	Recurse bool
	// Include and Exclude are glob patterns matched against paths relative to the
	// target directory (Argo CD's directory.include/exclude). Empty Include means all.
	Include []string
	Exclude []string
	// Jsonnet, when set, evaluates the .jsonnet files of the directory as Argo CD
	// does for a directory application; nil leaves them out, with a note (Flux and
	// plain directories do not evaluate jsonnet).
	Jsonnet *JsonnetOptions
}

// HelmOptions applies to charts.
type HelmOptions struct {
	ReleaseName string
	// ValuesFiles are relative to the checkout root.
	ValuesFiles []string
	// FluxValuesFiles gives ValuesFiles Flux's meaning instead of helm's -f:
	// source-controller merges them (in order, "values.yaml" of a fetched
	// chart standing for the chart's own) into a new default values.yaml that
	// replaces the chart's (internal/helm/chart: mergeFileValues /
	// mergeChartValues, OverwriteChartDefaultValues), so the chart's
	// values.yaml counts only when listed; a list of just "values.yaml"
	// changes nothing (BuildOptions.GetValuesFiles).
	FluxValuesFiles bool `json:"fluxValuesFiles,omitempty"`
	// IgnoreMissingValuesFiles skips values files that do not exist instead of
	// failing (Flux's ignoreMissingValuesFiles, Argo CD's ignoreMissingValueFiles).
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`
	// Values are merged over the values files, as helm's --set does.
	Values   map[string]any
	SkipCRDs bool
	// KubeVersion is the Capabilities.KubeVersion templates see; default v1.37.0.
	KubeVersion string
	// PostRenderers are a Flux HelmRelease's spec.postRenderers, run in order
	// over the templates' output, then CommonLabels and CommonAnnotations
	// (spec.commonMetadata) are set on every object's metadata, as
	// helm-controller does (see postRender); PostRenderStrategy is
	// spec.postRenderStrategy (Combined, Separate or NoHooks; empty is
	// Combined).
	PostRenderers      []PostRenderer    `json:"postRenderers,omitempty"`
	PostRenderStrategy string            `json:"postRenderStrategy,omitempty"`
	CommonLabels       map[string]string `json:"commonLabels,omitempty"`
	CommonAnnotations  map[string]string `json:"commonAnnotations,omitempty"`
	// Chart, when set, renders this chart from a Helm repository (fetched by
	// Options.Remote) instead of the target directory; ValuesFiles are then
	// relative to the chart, as Flux's valuesFiles and Argo CD's valueFiles of a
	// chart source are, except those starting with CheckoutPrefix ("$checkout/"),
	// which are files of the checkout (Argo CD's $ref value files).
	Chart *RemoteChart `json:"chart,omitempty"`

	// deps are the fetched dependency archives the render process adds to
	// charts/ (sent to it in the request, not in Options).
	deps []localDependency
	// checkoutValues are the parsed CheckoutPrefix values files of a remote
	// chart, by their ValuesFiles entry (sent in the request too).
	checkoutValues map[string]map[string]any
	// inflate, when set, renders a kustomize helmCharts entry's chart as
	// `helm template` does for kustomize (helmcharts.go).
	inflate *inflation
}

// inflation is where a helmCharts chart renders differently from a helm
// target: Helm hooks stay in the output unless skipHooks (--no-hooks), test
// hooks go with skipTests (--skip-tests), apiVersions add to
// Capabilities.APIVersions (--api-versions), and the output counts once,
// as kustomize's.
type inflation struct {
	skipHooks, skipTests bool
	apiVersions          []string
}

// KustomizeOptions are overrides applied on top of the target's kustomization, the
// way Argo CD's source.kustomize and Flux's Kustomization spec do. They are applied
// by wrapping the target in a generated kustomization, never by editing files.
type KustomizeOptions struct {
	NamePrefix        string
	NameSuffix        string
	Namespace         string
	Images            []string          // "name=newName:tag" or "name:tag"
	CommonLabels      map[string]string // labels only, selectors untouched
	CommonAnnotations map[string]string
	// MetadataOnlyAnnotations puts CommonAnnotations on each object's own
	// metadata only, as Flux's commonMetadata does; without it they reach pod
	// templates too, as kustomize's commonAnnotations (Argo CD's) do.
	MetadataOnlyAnnotations bool `json:",omitempty"`
	// Patches are kustomize patch entries (strategic merge or JSON6902) in YAML.
	Patches    []string
	Components []string // paths relative to the checkout root
	// RemoteBases maps a remote base or component exactly as a kustomization
	// names it (https://…, git::…, github.com/…//path?ref=…) to the fetched copy
	// the caller made (render itself never touches the network). A remote
	// entry missing here stops the render with an *Unavailable whose Remote
	// names it, so the caller can fetch it and render again.
	RemoteBases map[string]RemoteBase `json:",omitempty"`
	// Helm says how kustomize's helmCharts (and the deprecated
	// helmChartInflationGenerator) are inflated: in this process with the Helm
	// library, as `kustomize build --enable-helm` would with a helm binary
	// (see helmcharts.go). The zero value inflates them.
	Helm KustomizeHelm `json:",omitzero"`
}

// KustomizeHelm is how a target's kustomizations inflate Helm charts.
type KustomizeHelm struct {
	// RefusedBy, when set, names the controller that builds the target's
	// kustomizations without --enable-helm ("Flux's kustomize-controller",
	// "Argo CD (kustomize.buildOptions of argocd-cm has no --enable-helm)"):
	// a kustomization with helmCharts is then an *Error saying that
	// controller refuses it, as kustomize's "must specify --enable-helm".
	RefusedBy string `json:",omitempty"`
	// KubeVersion and APIVersions are kustomize build's --helm-kube-version
	// and --helm-api-versions: when set they win over every chart's
	// kubeVersion and apiVersions (kustomize HelmChartInflationGenerator
	// Config: "CLI args takes precedence"). A chart with neither renders
	// against Options.Helm.KubeVersion.
	KubeVersion string   `json:",omitempty"`
	APIVersions []string `json:",omitempty"`
	// Charts are the remote charts the caller fetched (render never touches
	// the network), by KustomizeChart.Key. A helmCharts entry whose chart is
	// neither in its chart home nor here stops the render with an
	// *Unavailable whose Chart names it, so the caller can fetch it and
	// render again.
	Charts map[string]FetchedChart `json:",omitempty"`
}

// KustomizeChart is a helmCharts entry's chart that kustomize would pull
// (helm pull --repo, or oci://repo/name): repo, name and version as the
// kustomization writes them.
type KustomizeChart struct {
	Repo    string `json:"repo"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Key identifies the chart in KustomizeHelm.Charts.
func (c KustomizeChart) Key() string { return c.Repo + " " + c.Name + " " + c.Version }

func (c KustomizeChart) String() string {
	return RemoteChart{RepoURL: c.Repo, Name: c.Name, Version: c.Version}.String()
}

// FetchedChart is a fetched chart: Dir is the absolute path of its unpacked
// directory (Chart.yaml inside) and Version the version it resolved to.
type FetchedChart struct {
	Dir     string
	Version string
}

// RemoteBase is a fetched remote kustomize base: Root is the absolute path of
// the repository's checkout on this machine, Path the base's directory in it,
// and Revision what was fetched (a commit), for error messages.
type RemoteBase struct {
	Root     string
	Path     string
	Revision string
}

// DefaultOptions gives the limits the design card sets: 10 MiB per file, 100 MiB
// read and rendered per target, 32 MiB of rendered manifests per target, 60 s per
// render, and a render process of at most 512 MiB of memory and 60 s of CPU time;
// and auto-detection of the renderer.
func DefaultOptions() Options {
	return Options{
		Renderer:       RendererAuto,
		MaxFileBytes:   10 << 20,
		MaxTotalBytes:  100 << 20,
		MaxOutputBytes: 32 << 20,
		Timeout:        60 * time.Second,
		MaxMemoryBytes: 512 << 20,
		MaxCPUTime:     60 * time.Second,
		Helm:           HelmOptions{KubeVersion: "v1.37.0"},
	}
}
