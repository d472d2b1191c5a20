package gitops

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// fluxIndex holds the Flux sources and the ConfigMaps and Secrets found so far.
// Every key starts with the cluster the object is in ("" for a file outside any
// clusters/<name>/ directory that no cluster's target has rendered).
type fluxIndex struct {
	// gitRepos maps cluster|namespace/name of each GitRepository to its spec.
	gitRepos map[string]fluxGitRepo
	// helmRepos maps cluster|namespace/name of each HelmRepository or
	// OCIRepository to its URL.
	helmRepos map[string]string
	// helmRepoTypes maps a HelmRepository's key to its spec.type ("" or
	// "default" for an HTTP repository, "oci"), and helmCharts holds the Flux
	// HelmChart objects a HelmRelease's chartRef may name.
	helmRepoTypes map[string]string
	helmCharts    map[string]*manifest
	artifacts     map[string]*fluxArtifact
	configMaps    map[string]*manifest
	secrets       map[string]*manifest
}

// fluxGitRepo is what discovery reads of a GitRepository.
type fluxGitRepo struct {
	URL string `json:"url"`
	Ref struct {
		Branch string `json:"branch"`
		Tag    string `json:"tag"`
		SemVer string `json:"semver"`
		Name   string `json:"name"`
		Commit string `json:"commit"`
	} `json:"ref"`
}

func nsName(ns, name string) string { return ns + "/" + name }

func clusterKey(cluster, ns, name string) string { return cluster + "|" + nsName(ns, name) }

// fluxIndex indexes the sources, ConfigMaps and Secrets among the manifests.
func (d *discovery) fluxIndex() *fluxIndex {
	fx := &fluxIndex{gitRepos: map[string]fluxGitRepo{}, helmRepos: map[string]string{}, artifacts: map[string]*fluxArtifact{},
		helmRepoTypes: map[string]string{}, helmCharts: map[string]*manifest{},
		configMaps: map[string]*manifest{}, secrets: map[string]*manifest{}}
	for _, m := range d.manifests {
		if m.superseded {
			continue
		}
		switch {
		case m.group() == groupFluxSrc:
			k := clusterKey(m.Cluster, m.namespaceOr(defaultFluxNS), m.Name)
			var src struct {
				Spec fluxGitRepo `json:"spec"`
			}
			_ = m.decode(&src) // a source that cannot be read has no URL: outside this repo
			switch m.Kind {
			case "GitRepository":
				fx.gitRepos[k] = src.Spec
			case "HelmChart":
				fx.helmCharts[k] = m
			default:
				fx.helmRepos[k] = src.Spec.URL
				if m.Kind == "HelmRepository" {
					var hr struct {
						Spec struct {
							Type string `json:"type"`
						} `json:"spec"`
					}
					_ = m.decode(&hr)
					fx.helmRepoTypes[k] = firstNonEmpty(hr.Spec.Type, "default")
				}
			}
		case m.group() == groupFluxGen && m.Kind == "ArtifactGenerator":
			d.indexArtifacts(m, fx)
		case m.group() == "" && m.Kind == "ConfigMap":
			fx.configMaps[clusterKey(m.Cluster, m.Namespace, m.Name)] = m
		case m.group() == "" && m.Kind == "Secret":
			fx.secrets[clusterKey(m.Cluster, m.Namespace, m.Name)] = m
		}
	}
	return fx
}

// lookup finds a ConfigMap or Secret by cluster, namespace and name; objects that
// name no namespace in the repo match any namespace, since the applying
// Kustomization's targetNamespace usually sets it, and objects of no cluster match
// every cluster.
func (fx *fluxIndex) lookup(kind, cluster, ns, name string) *manifest {
	idx := fx.configMaps
	if kind == "Secret" {
		idx = fx.secrets
	}
	for _, c := range clusterKeys(cluster) {
		if m := idx[clusterKey(c, ns, name)]; m != nil {
			return m
		}
		if m := idx[clusterKey(c, "", name)]; m != nil {
			return m
		}
	}
	return nil
}

// clusterKeys are the clusters to look an object up in: its own, then none.
func clusterKeys(cluster string) []string {
	if cluster == "" {
		return []string{""}
	}
	return []string{cluster, ""}
}

// fluxSourceRef is a Flux sourceRef.
type fluxSourceRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// sourceCheck is what discovery knows about a Flux source: this repository at the
// revision a pull request changes, or why not.
type sourceCheck struct {
	ok bool
	// otherRevision is set when the source is this repository at another branch,
	// tag or commit: nothing this PR changes reaches it.
	otherRevision bool
	// reason names the source (its URL) or the revision, for the not-rendered
	// entry.
	reason string
}

// thisRepoSource says whether a Flux sourceRef is a GitRepository of this
// repository at the branch pull requests merge into, and else why not.
func (d *discovery) thisRepoSource(ref fluxSourceRef, ns, cluster string, fx *fluxIndex) sourceCheck {
	if ref.Namespace != "" {
		ns = ref.Namespace
	}
	if ref.Kind != "GitRepository" {
		for _, c := range clusterKeys(cluster) {
			if url := fx.helmRepos[clusterKey(c, ns, ref.Name)]; url != "" {
				return sourceCheck{reason: url}
			}
		}
		return sourceCheck{reason: fmt.Sprintf("%s %s", ref.Kind, nsName(ns, ref.Name))}
	}
	var gr fluxGitRepo
	known := false
	for _, c := range clusterKeys(cluster) {
		if gr, known = fx.gitRepos[clusterKey(c, ns, ref.Name)]; known {
			break
		}
	}
	// flux bootstrap names the GitRepository of the repository it writes to
	// flux-system, so it is this repository even when its URL is spelled in a
	// way Options.RepoURLs does not list (a mirror, an internal host).
	if !d.repo.matches(gr.URL) && ref.Name != fluxSystemName {
		if known && gr.URL != "" {
			return sourceCheck{reason: gr.URL}
		}
		return sourceCheck{reason: "GitRepository " + nsName(ns, ref.Name)}
	}
	if rev := d.gitRepoRevision(gr); rev != "" {
		return sourceCheck{otherRevision: true, reason: fmt.Sprintf("GitRepository %s follows %s of this repository, not the branch this pull request merges into, so this PR does not change what it deploys", nsName(ns, ref.Name), rev)}
	}
	return sourceCheck{ok: true}
}

// gitRepoRevision names the revision a GitRepository of this repository follows
// when it is not the branch pull requests merge into (source-controller's
// spec.ref: commit, then name, then semver, then tag, then branch win, in that
// order); empty when it is that branch or spec.ref names none.
func (d *discovery) gitRepoRevision(gr fluxGitRepo) string {
	r := gr.Ref
	switch {
	case r.Commit != "":
		return "commit " + r.Commit
	case r.Name != "":
		if b, ok := strings.CutPrefix(r.Name, "refs/heads/"); ok && !d.otherRevision(b) {
			return ""
		}
		return "ref " + r.Name
	case r.SemVer != "":
		return "tags matching " + r.SemVer
	case r.Tag != "":
		return "tag " + r.Tag
	case r.Branch != "" && d.otherRevision(r.Branch):
		return "branch " + r.Branch
	}
	return ""
}

// fluxKustomizationSpec is the part of a Flux Kustomization discovery reads.
type fluxKustomizationSpec struct {
	Spec struct {
		Path            string           `json:"path"`
		Prune           bool             `json:"prune"`
		DeletionPolicy  string           `json:"deletionPolicy"`
		Force           bool             `json:"force"`
		Suspend         bool             `json:"suspend"`
		TargetNamespace string           `json:"targetNamespace"`
		NamePrefix      string           `json:"namePrefix"`
		NameSuffix      string           `json:"nameSuffix"`
		SourceRef       fluxSourceRef    `json:"sourceRef"`
		Patches         []map[string]any `json:"patches"`
		Components      []string         `json:"components"`
		// IgnoreMissingComponents skips components that do not exist
		// (fluxcd/pkg kustomize/kustomize_generator.go GenerateManifest).
		IgnoreMissingComponents bool            `json:"ignoreMissingComponents"`
		Images                  []fluxImage     `json:"images"`
		CommonMetadata          *fluxCommonMeta `json:"commonMetadata"`
		KubeConfig              map[string]any  `json:"kubeConfig"`
		PostBuild               *fluxPostBuild  `json:"postBuild"`
	} `json:"spec"`
}

type fluxImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

type fluxCommonMeta struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type fluxPostBuild struct {
	// SubstituteStrategy Always substitutes even without variables
	// (kustomize-controller api/v1 PostBuild; default WithVariables).
	SubstituteStrategy string            `json:"substituteStrategy"`
	Substitute         map[string]string `json:"substitute"`
	SubstituteFrom     []struct {
		Kind     string `json:"kind"`
		Name     string `json:"name"`
		Optional bool   `json:"optional"`
	} `json:"substituteFrom"`
}

// fluxCluster is the cluster a Flux object deploys to: its parent target's, or the
// <name> of a clusters/<name>/ directory it is declared in (the layout flux
// bootstrap creates), mapped through Options.ClusterNames.
func (d *discovery) fluxCluster(m *manifest) string {
	if m.Cluster != "" {
		return m.Cluster
	}
	return d.pathCluster(m.File)
}

// fluxKustomization turns a Kustomization into a target; skipped is true when its
// source is not this repository.
func (d *discovery) fluxKustomization(m *manifest, fx *fluxIndex) (t config.Target, skipped bool) {
	ns := m.namespaceOr(defaultFluxNS)
	key := render.ObjectKey{Group: groupFluxKS, Kind: diffing.FluxKustomization.Kind, Namespace: ns, Name: m.Name}
	ctrl := &diffing.Controller{Kind: diffing.FluxKustomization.Kind, Name: m.Name, Namespace: ns, Source: m.File}
	t = config.Target{Name: m.Name, Controller: ctrl, Cluster: d.fluxCluster(m)}
	var ks fluxKustomizationSpec
	if err := m.decode(&ks); err != nil {
		t.Skip = fmt.Sprintf("invalid Kustomization: %v", err)
		t.Findings = []diffing.Finding{notRenderedFinding(key, fmt.Sprintf("Kustomization %s is not rendered: %v", m.Name, err))}
		return t, true
	}
	s := ks.Spec
	ctrl.AutoSync, ctrl.Prune, ctrl.SelfHeal, ctrl.Suspended, ctrl.Replace = !s.Suspend, s.Prune, !s.Suspend, s.Suspend, s.Force
	ctrl.DeletionPolicy = s.DeletionPolicy
	t.Sync = config.Sync{Prune: s.Prune, SelfHeal: true, Manager: diffing.FluxKustomization.Manager, Replace: s.Force}
	t.Namespace = s.TargetNamespace
	if s.Suspend {
		t.Findings = append(t.Findings, diffing.Finding{
			Rule: diffing.RuleSyncDisabled, Severity: diffing.DefaultSeverity[diffing.RuleSyncDisabled], Key: key,
			Message: fmt.Sprintf("Kustomization %s is suspended: this PR will not be applied until it is resumed.", m.Name),
		})
	}
	notRendered := func(reason string) (config.Target, bool) {
		t.Skip = reason
		t.Findings = append(t.Findings, notRenderedFinding(key, fmt.Sprintf("Kustomization %s is not rendered: %s", m.Name, reason)))
		return t, true
	}
	p, ok := cleanRel(s.Path)
	if !ok {
		return notRendered(fmt.Sprintf("spec.path %q leaves the repository", s.Path))
	}
	var ociSrc *render.OCISource
	if s.SourceRef.Kind == "ExternalArtifact" {
		rp, note, reason := d.artifactPath(s.SourceRef, ns, t.Cluster, p, fx)
		if reason != "" {
			return notRendered(reason)
		}
		p = rp
		t.Notes = append(t.Notes, note)
	} else if s.SourceRef.Kind == "OCIRepository" {
		// An OCIRepository's artifact is fetched when the target is rendered
		// (if the remote policy allows the registry), and spec.path is read
		// inside it, as kustomize-controller does with the artifact.
		src, notes, reason := d.ociRepository(s.SourceRef, ns, t.Cluster)
		if src == nil {
			return notRendered("source outside this repo: " + reason)
		}
		ociSrc = src
		t.Notes = append(t.Notes, notes...)
	} else if src := d.thisRepoSource(s.SourceRef, ns, t.Cluster, fx); src.otherRevision {
		return notRendered("not affected by this PR: " + src.reason)
	} else if !src.ok {
		return notRendered("source outside this repo: " + src.reason)
	}
	t.Path = p
	if len(s.KubeConfig) > 0 {
		t.Notes = append(t.Notes, "spec.kubeConfig: Flux applies this Kustomization to a remote cluster; map it with the cluster name "+strings.TrimSpace(t.Cluster))
	}
	opts := render.DefaultOptions()
	r, exists := detectRenderer(d.root, p)
	if ociSrc != nil {
		// The path is inside the artifact: the kustomize renderer builds it,
		// generating a kustomization where there is none, as Flux does.
		r, exists = render.RendererKustomize, true
		opts.OCI = ociSrc
	}
	if !exists {
		t.Notes = append(t.Notes, fmt.Sprintf("path %s does not exist in this checkout", p))
	}
	if r == render.RendererPlain {
		// kustomize-controller generates a kustomization for a path without one
		// (fluxcd/pkg kustomize, findOrGenerateKustomization): its resources are
		// the manifests below the path and the subdirectories that have their
		// own kustomization. The kustomize renderer does the same.
		r = render.RendererKustomize
	}
	opts.Renderer = r
	opts.Namespace = s.TargetNamespace
	k := &opts.Kustomize
	// kustomize-controller builds with kustomize's plugins disabled, Helm
	// included (fluxcd/pkg kustomize/kustomize_generator.go Build:
	// PluginConfig: kustypes.DisabledPluginConfig()), so helmCharts fail
	// there with "must specify --enable-helm".
	k.Helm.RefusedBy = "Flux's kustomize-controller"
	k.Namespace = s.TargetNamespace
	k.NamePrefix, k.NameSuffix = s.NamePrefix, s.NameSuffix
	for _, img := range s.Images {
		k.Images = append(k.Images, fluxImageString(img))
	}
	if cm := s.CommonMetadata; cm != nil {
		k.CommonLabels, k.CommonAnnotations = cm.Labels, cm.Annotations
		k.MetadataOnlyAnnotations = len(cm.Annotations) > 0
	}
	for _, pt := range s.Patches {
		b, err := yaml.Marshal(pt)
		if err != nil {
			return notRendered(fmt.Sprintf("%s: patch: %v", m.where(), err))
		}
		k.Patches = append(k.Patches, string(b))
	}
	for _, c := range s.Components {
		cp, ok := cleanRel(p + "/" + c)
		if !ok {
			return notRendered(fmt.Sprintf("component %q leaves the repository", c))
		}
		if _, err := os.Stat(filepath.Join(d.root, filepath.FromSlash(cp))); err != nil && s.IgnoreMissingComponents {
			t.Notes = append(t.Notes, fmt.Sprintf("component %s does not exist and spec.ignoreMissingComponents is set: it is skipped, as kustomize-controller does", c))
			continue
		}
		k.Components = append(k.Components, cp)
	}
	if pb := s.PostBuild; pb != nil {
		// The variables go into the render options too, so discovery's own
		// render of the target, which looks for nested GitOps objects, sees
		// the substituted names (a component's HelmRelease ${APP}-anubis).
		var lenient bool
		t.Substitute, lenient, t.Notes = d.fluxVars(pb, ns, t.Cluster, fx, t.Notes)
		opts.Substitute, opts.SubstituteLenient = t.Substitute, lenient
		opts.SubstituteAlways = pb.SubstituteStrategy == "Always"
	}
	t.Render = opts
	return t, false
}

// fluxVars gathers postBuild variables as kustomize-controller does (fluxcd/pkg
// kustomize/kustomize_varsub.go LoadVariables, SubstituteVariables):
// substituteFrom objects in order, a later one overwriting an earlier one's
// keys, then substitute, which wins. Values from Secrets are replaced by a
// placeholder so they can never reach a diff, a comment or a log. lenient is
// true when a substituteFrom object is not in the repository: its variables
// are unknown, so the render does not take them for missing ones (strict
// substitution would fail on them).
func (d *discovery) fluxVars(pb *fluxPostBuild, ns, cluster string, fx *fluxIndex, notes []string) (vars map[string]string, lenient bool, _ []string) {
	vars = map[string]string{}
	for _, ref := range pb.SubstituteFrom {
		kind := ref.Kind
		if kind == "" {
			kind = "ConfigMap"
		}
		opt := ""
		if ref.Optional {
			opt = " (optional)"
		}
		var data map[string]string
		if src := fx.lookup(kind, cluster, ns, ref.Name); src != nil {
			data = stringData(src)
		} else if r, ok := d.liveData(kind, cluster, ns, ref.Name); ok && r.err == nil && r.found {
			// kustomize-controller reads substituteFrom objects from the
			// cluster (fluxcd/pkg kustomize LoadVariables).
			data = r.data
			notes = append(notes, fmt.Sprintf("postBuild.substituteFrom %s %s is not in the repository: its variables were read from the live cluster", kind, ref.Name))
		} else if ok && r.err == nil && ref.Optional {
			continue // absent and optional: kustomize-controller goes on without it
		} else {
			why := "the variables it sets are left empty (Flux reads it from the cluster)"
			switch {
			case ok && r.err == nil:
				why = "it does not exist on the live cluster either: kustomize-controller fails the reconciliation; its variables are left empty here"
			case ok:
				why = fmt.Sprintf("reading it from the live cluster failed (%v): the variables it sets are left empty", r.err)
			}
			notes = append(notes, fmt.Sprintf("postBuild.substituteFrom %s %s%s is not in the repository: %s", kind, ref.Name, opt, why))
			lenient = true
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(data)) {
			if kind == "Secret" {
				vars[name] = secretPlaceholder(ref.Name, name)
			} else {
				vars[name] = data[name]
			}
		}
		if kind == "Secret" {
			notes = append(notes, fmt.Sprintf("postBuild.substituteFrom Secret %s: its values are substituted as hidden placeholders, so fields that use them show no real value", ref.Name))
		}
	}
	maps.Copy(vars, pb.Substitute)
	if len(vars) == 0 {
		return nil, lenient, notes
	}
	return vars, lenient, notes
}

// secretPlaceholder stands in for a value read from a Secret.
func secretPlaceholder(secret, key string) string {
	// No ": " or " #": substituted into YAML text it must stay one plain scalar.
	return fmt.Sprintf("(hidden Secret %s/%s)", secret, key)
}

// stringData reads a ConfigMap's data, or a Secret's data and stringData. Callers
// must not show a Secret's values.
func stringData(m *manifest) map[string]string {
	out := map[string]string{}
	if data, ok := m.Obj["data"].(map[string]any); ok {
		for k, v := range data {
			s, _ := v.(string)
			if m.Kind == "Secret" {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					s = string(b)
				}
			}
			out[k] = s
		}
	}
	if data, ok := m.Obj["stringData"].(map[string]any); ok && m.Kind == "Secret" {
		for k, v := range data {
			s, _ := v.(string)
			out[k] = s
		}
	}
	return out
}

func fluxImageString(img fluxImage) string {
	s := img.Name
	if img.NewName != "" {
		s += "=" + img.NewName
	}
	if img.NewTag != "" {
		s += ":" + img.NewTag
	}
	if img.Digest != "" {
		s += "@" + img.Digest
	}
	return s
}

// fluxChartTemplate is a HelmRelease's spec.chart, and the same fields of a Flux
// HelmChart object.
type fluxChartTemplate struct {
	Spec struct {
		Chart       string        `json:"chart"`
		Version     string        `json:"version"`
		SourceRef   fluxSourceRef `json:"sourceRef"`
		ValuesFiles []string      `json:"valuesFiles"`
		// IgnoreMissingValuesFiles skips valuesFiles that do not exist.
		IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles"`
	} `json:"spec"`
}

// fluxHelmReleaseSpec is the part of a Flux HelmRelease discovery reads.
type fluxHelmReleaseSpec struct {
	Spec fluxHelmReleaseBody `json:"spec"`
}

// fluxHelmReleaseBody is a HelmRelease's spec.
type fluxHelmReleaseBody struct {
	ReleaseName     string             `json:"releaseName"`
	TargetNamespace string             `json:"targetNamespace"`
	Suspend         bool               `json:"suspend"`
	Chart           *fluxChartTemplate `json:"chart"`
	ChartRef        *fluxSourceRef     `json:"chartRef"`
	Values          map[string]any     `json:"values"`
	ValuesFrom      []struct {
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		ValuesKey  string `json:"valuesKey"`
		TargetPath string `json:"targetPath"`
		Optional   bool   `json:"optional"`
		Literal    bool   `json:"literal"`
	} `json:"valuesFrom"`
	// PostRenderers run kustomize over the chart's output (spec.postRenderers),
	// then CommonMetadata sets labels and annotations on every object.
	PostRenderers []struct {
		Kustomize *struct {
			Patches []map[string]any `json:"patches"`
			Images  []fluxImage      `json:"images"`
		} `json:"kustomize"`
	} `json:"postRenderers"`
	PostRenderStrategy string          `json:"postRenderStrategy"`
	CommonMetadata     *fluxCommonMeta `json:"commonMetadata"`
	Install            *struct {
		CRDs string `json:"crds"`
	} `json:"install"`
	Upgrade *struct {
		Force           bool   `json:"force"`
		CRDs            string `json:"crds"`
		ServerSideApply string `json:"serverSideApply"`
	} `json:"upgrade"`
	DriftDetection *struct {
		Mode   string `json:"mode"`
		Ignore []struct {
			Paths  []string       `json:"paths"`
			Target map[string]any `json:"target"`
		} `json:"ignore"`
	} `json:"driftDetection"`
}

// fluxHelmRelease turns a HelmRelease into a Helm target; skipped is true when its
// chart is neither in this repository nor vendored.
func (d *discovery) fluxHelmRelease(m *manifest, fx *fluxIndex) (t config.Target, skipped bool) {
	ns := m.namespaceOr(defaultFluxNS)
	key := render.ObjectKey{Group: groupFluxHelm, Kind: diffing.FluxHelmRelease.Kind, Namespace: ns, Name: m.Name}
	ctrl := &diffing.Controller{Kind: diffing.FluxHelmRelease.Kind, Name: m.Name, Namespace: ns, Source: m.File}
	t = config.Target{Name: m.Name, Controller: ctrl, Cluster: d.fluxCluster(m)}
	notRendered := func(reason string) (config.Target, bool) {
		t.Skip = reason
		t.Findings = append(t.Findings, notRenderedFinding(key, fmt.Sprintf("HelmRelease %s is not rendered: %s", m.Name, reason)))
		return t, true
	}
	var hr fluxHelmReleaseSpec
	if err := m.decode(&hr); err != nil {
		return notRendered(fmt.Sprintf("invalid HelmRelease: %v", err))
	}
	s := hr.Spec
	selfHeal := s.DriftDetection != nil && s.DriftDetection.Mode == "enabled"
	if s.DriftDetection != nil {
		ctrl.DriftDetection = s.DriftDetection.Mode
	}
	// spec.upgrade.force never turns a refused update into a delete and
	// create: helm-controller ignores it under server-side apply, its default
	// (internal/action/upgrade.go: ForceReplace = Force && !serverSideApply),
	// and otherwise Helm replaces the object with a PUT (helm v4
	// pkg/kube/client.go replaceResource), which the apiserver refuses for an
	// immutable field as it refuses a patch.
	ctrl.AutoSync, ctrl.Prune, ctrl.SelfHeal, ctrl.Suspended = !s.Suspend, true, selfHeal, s.Suspend
	t.Sync = config.Sync{Prune: true, SelfHeal: selfHeal, Manager: diffing.FluxHelmRelease.Manager}
	t.Notes = append(t.Notes, helmReleaseOptionNotes(s)...)
	if s.Install != nil {
		t.Sync.HelmCRDs.Install = s.Install.CRDs
	}
	if s.Upgrade != nil {
		t.Sync.HelmCRDs.Upgrade = s.Upgrade.CRDs
	}
	t.Namespace = firstNonEmpty(s.TargetNamespace, m.Namespace)
	if s.Suspend {
		t.Findings = append(t.Findings, diffing.Finding{
			Rule: diffing.RuleSyncDisabled, Severity: diffing.DefaultSeverity[diffing.RuleSyncDisabled], Key: key,
			Message: fmt.Sprintf("HelmRelease %s is suspended: this PR will not be applied until it is resumed.", m.Name),
		})
	}
	srcNS := ns // the namespace the chart's sourceRef defaults to
	if r := s.ChartRef; r != nil && r.Kind == "OCIRepository" {
		// A chartRef to an OCIRepository: helm-controller loads its artifact
		// (usually the Helm chart layer, layerSelector operation copy) as the
		// chart, with no valuesFiles. It is fetched when rendered, if the
		// remote policy allows the registry.
		src, notes, reason := d.ociRepository(*r, ns, t.Cluster)
		if src == nil {
			return notRendered("source outside this repo: chartRef " + reason)
		}
		t.Notes = append(t.Notes, notes...)
		opts := render.DefaultOptions()
		opts.Renderer = render.RendererHelm
		opts.Namespace = t.Namespace
		opts.OCI = src
		t.Path = path.Dir(m.File)
		return d.fluxReleaseValues(t, m, s, ns, fx, opts), false
	}
	if s.ChartRef != nil {
		// A chartRef to a HelmChart object of the repository reads like
		// spec.chart.spec (helm-controller: the HelmChart is what spec.chart
		// generates), with the HelmChart's namespace for its sourceRef.
		hc, hcNS := fx.helmChart(s.ChartRef, ns, t.Cluster)
		if hc == nil {
			return notRendered(fmt.Sprintf("source outside this repo: chartRef %s %s", s.ChartRef.Kind, s.ChartRef.Name))
		}
		s.Chart = hc
		srcNS = hcNS
	}
	if s.Chart == nil || s.Chart.Spec.Chart == "" {
		return notRendered("spec.chart.spec.chart is empty")
	}
	cs := s.Chart.Spec
	opts := render.DefaultOptions()
	opts.Renderer = render.RendererHelm
	opts.Namespace = t.Namespace
	// valuesFiles compose the chart's default values.yaml, replacing the
	// chart's own unless it is listed (source-controller's chart builders),
	// and the release's values go over them.
	opts.Helm.FluxValuesFiles = true
	opts.Helm.IgnoreMissingValuesFiles = cs.IgnoreMissingValuesFiles
	src := d.thisRepoSource(cs.SourceRef, srcNS, t.Cluster, fx)
	if src.otherRevision {
		return notRendered("not affected by this PR: " + src.reason)
	}
	if src.ok {
		p, ok := cleanRel(cs.Chart)
		if !ok {
			return notRendered(fmt.Sprintf("chart path %q leaves the repository", cs.Chart))
		}
		t.Path = p
		for _, f := range cs.ValuesFiles {
			vf, ok := cleanRel(f)
			if !ok {
				return notRendered(fmt.Sprintf("values file %q leaves the repository", f))
			}
			opts.Helm.ValuesFiles = append(opts.Helm.ValuesFiles, vf)
		}
	} else if vendored := "charts/" + path.Base(cs.Chart); !isChartDir(d.root, vendored) {
		repoURL, ok := fx.chartRepo(cs.SourceRef, srcNS, t.Cluster)
		if !ok {
			return notRendered("source outside this repo: " + src.reason)
		}
		if why := d.remoteRefusal(repoURL); why != "" {
			return notRendered(why)
		}
		// A chart from a Helm HTTP or OCI repository: fetched when rendered,
		// if the remote policy allows the repository (else not rendered, with
		// the reason). valuesFiles are files of the chart, as in Flux.
		t.Path = path.Dir(m.File)
		opts.Helm.Chart = &render.RemoteChart{RepoURL: repoURL, Name: cs.Chart, Version: cs.Version}
		for _, f := range cs.ValuesFiles {
			vf, ok := cleanRel(f)
			if !ok {
				return notRendered(fmt.Sprintf("values file %q leaves the chart", f))
			}
			opts.Helm.ValuesFiles = append(opts.Helm.ValuesFiles, vf)
		}
	} else {
		t.Path = vendored
		t.Notes = append(t.Notes, fmt.Sprintf("chart %s %s from %s is rendered from the vendored copy in %s", cs.Chart, cs.Version, src.reason, vendored))
		if len(cs.ValuesFiles) > 0 {
			t.Notes = append(t.Notes, "spec.chart.spec.valuesFiles of a chart outside this repo are not read")
		}
	}
	if _, exists := detectRenderer(d.root, t.Path); !exists && opts.Helm.Chart == nil {
		t.Notes = append(t.Notes, fmt.Sprintf("chart path %s does not exist in this checkout", t.Path))
	}
	return d.fluxReleaseValues(t, m, s, ns, fx, opts), false
}

// helmReleaseOptionNotes says what the HelmRelease options that change the
// outcome of a merge do, as helm-controller implements them.
func helmReleaseOptionNotes(s fluxHelmReleaseBody) []string {
	var notes []string
	if s.Upgrade != nil && s.Upgrade.Force {
		why := "helm-controller ignores it under server-side apply, its default (internal/action/upgrade.go)"
		if strings.EqualFold(s.Upgrade.ServerSideApply, "disabled") {
			why = "with server-side apply disabled Helm replaces objects with a PUT, which the API refuses for an immutable field as it refuses a patch"
		}
		notes = append(notes, "spec.upgrade.force does not recreate objects: "+why+". A change to an immutable field still fails the upgrade.")
	}
	if dd := s.DriftDetection; dd != nil && len(dd.Ignore) > 0 {
		var paths []string
		for _, r := range dd.Ignore {
			paths = append(paths, r.Paths...)
		}
		notes = append(notes, fmt.Sprintf("spec.driftDetection.ignore (%s) applies to helm-controller's drift detection and correction only: a Helm upgrade, such as this merge's, applies every field the chart renders, ignored or not (internal/reconcile/state.go passes the rules to action.Diff alone).",
			strings.Join(paths, ", ")))
	}
	return notes
}

// fluxReleaseValues fills the release name, CRD policy and values of a
// HelmRelease's target and sets its render options.
func (d *discovery) fluxReleaseValues(t config.Target, m *manifest, s fluxHelmReleaseBody, ns string, fx *fluxIndex, opts render.Options) config.Target {
	opts.Helm.ReleaseName = releaseName(m.Name, s)
	// The chart's crds/ CRDs are rendered unless no policy ever applies them;
	// diffing judges the others by the policy (diffing.HelmCRDs).
	opts.Helm.SkipCRDs = s.Install != nil && s.Install.CRDs == "Skip" && s.Upgrade != nil && s.Upgrade.CRDs == "Skip"
	for i, pr := range s.PostRenderers {
		if pr.Kustomize == nil {
			continue
		}
		var r render.PostRenderer
		for _, img := range pr.Kustomize.Images {
			r.Images = append(r.Images, fluxImageString(img))
		}
		for j, pt := range pr.Kustomize.Patches {
			b, err := yaml.Marshal(pt)
			if err != nil {
				t.Notes = append(t.Notes, fmt.Sprintf("%s: spec.postRenderers[%d].kustomize.patches[%d]: %v", m.where(), i, j, err))
				continue
			}
			r.Patches = append(r.Patches, string(b))
		}
		opts.Helm.PostRenderers = append(opts.Helm.PostRenderers, r)
	}
	opts.Helm.PostRenderStrategy = s.PostRenderStrategy
	if cm := s.CommonMetadata; cm != nil {
		opts.Helm.CommonLabels, opts.Helm.CommonAnnotations = cm.Labels, cm.Annotations
	}
	// valuesFrom as helm-controller reads it (fluxcd/pkg chartutil/values.go
	// ChartValuesFromReferences): each reference in order merged over the
	// ones before, a targetPath value set at its path (typed as --set does,
	// a quoted one or literal: true as a string), then spec.values over all.
	values := map[string]any{}
	for _, vf := range s.ValuesFrom {
		kind := firstNonEmpty(vf.Kind, "ConfigMap")
		opt := ""
		if vf.Optional {
			opt = " (optional)"
		}
		var data map[string]string
		var where string
		if src := fx.lookup(kind, t.Cluster, ns, vf.Name); src != nil {
			data, where = stringData(src), src.File+" "+vf.Name
		} else if r, ok := d.liveData(kind, t.Cluster, ns, vf.Name); ok && r.err == nil && r.found {
			// helm-controller reads valuesFrom objects from the cluster
			// (ChartValuesFromReferences).
			data, where = r.data, "live "+kind+" "+nsName(ns, vf.Name)
			t.Notes = append(t.Notes, fmt.Sprintf("valuesFrom %s %s is not in the repository: its values were read from the live cluster", kind, vf.Name))
		} else if ok && r.err == nil && vf.Optional {
			continue // absent and optional: helm-controller goes on without it
		} else {
			why := "its values are not used (helm-controller reads it from the cluster, and fails the release when a reference that is not optional is missing)"
			switch {
			case ok && r.err == nil:
				why = "it does not exist on the live cluster either: helm-controller fails the release"
			case ok:
				why = fmt.Sprintf("reading it from the live cluster failed (%v): its values are not used", r.err)
			}
			t.Notes = append(t.Notes, fmt.Sprintf("valuesFrom %s %s%s is not in the repository: %s", kind, vf.Name, opt, why))
			continue
		}
		vkey := firstNonEmpty(vf.ValuesKey, "values.yaml")
		raw, ok := data[vkey]
		if !ok {
			t.Notes = append(t.Notes, fmt.Sprintf("valuesFrom %s %s%s has no key %s: its values are not used (helm-controller fails the release unless the reference is optional)", kind, vf.Name, opt, vkey))
			continue
		}
		if vf.TargetPath != "" {
			v := raw
			if kind == "Secret" {
				v = secretPlaceholder(vf.Name, vkey)
			}
			if err := replacePathValue(values, vf.TargetPath, v, vf.Literal || kind == "Secret"); err != nil {
				note := fmt.Sprintf("valuesFrom %s %s targetPath %s: its value cannot be set there (helm-controller fails the release)", kind, vf.Name, vf.TargetPath)
				if kind != "Secret" {
					note += ": " + err.Error()
				}
				t.Notes = append(t.Notes, note)
			}
			if kind == "Secret" {
				t.Notes = append(t.Notes, fmt.Sprintf("valuesFrom Secret %s: its value is passed to the chart at %s as a hidden placeholder", vf.Name, vf.TargetPath))
			}
			continue
		}
		var vals map[string]any
		if err := render.UnmarshalYAML([]byte(raw), where+"/"+vkey, &vals); err != nil {
			note := fmt.Sprintf("valuesFrom %s %s key %s is not a YAML map: its values are not used", kind, vf.Name, vkey)
			if kind != "Secret" { // never quote the parse error of a Secret: it may quote the value
				note += " (" + err.Error() + ")"
			}
			t.Notes = append(t.Notes, note)
			continue
		}
		if kind == "Secret" {
			vals = hideLeaves(vals, vf.Name, vkey)
			t.Notes = append(t.Notes, fmt.Sprintf("valuesFrom Secret %s: its values are passed to the chart as hidden placeholders", vf.Name))
		}
		values = deepMerge(values, vals)
	}
	values = deepMerge(values, s.Values)
	if len(values) > 0 {
		opts.Helm.Values = values
	}
	t.Render = opts
	return t
}

// releaseName is the Helm release name helm-controller gives a HelmRelease
// (api/v2 HelmRelease.GetReleaseName, shortened by internal/release/name.go
// ShortenName): spec.releaseName, else <targetNamespace>-<name> or <name>; a
// name longer than 53 characters becomes its first 40, a dash and the first 12
// hex digits of its SHA-256.
func releaseName(name string, s fluxHelmReleaseBody) string {
	n := name
	switch {
	case s.ReleaseName != "":
		n = s.ReleaseName
	case s.TargetNamespace != "":
		n = s.TargetNamespace + "-" + name
	}
	if len(n) <= 53 {
		return n
	}
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(n)))
	return n[:53-13] + "-" + sum[:12]
}

// replacePathValue sets value at the strvals path p as helm-controller does
// for a valuesFrom targetPath (fluxcd/pkg chartutil/values.go
// ReplacePathValue, ReplacePathLiteralValue): typed as helm's --set types it,
// a value in single or double quotes as a string without them; literal keeps
// the whole value one string (commas and brackets escaped).
func replacePathValue(values map[string]any, p, value string, literal bool) error {
	if literal {
		esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`)
		return strvals.ParseIntoString(p+"="+esc.Replace(value), values)
	}
	single := strings.HasPrefix(value, "'") && strings.HasSuffix(value, "'")
	double := strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`)
	if single || double {
		return strvals.ParseIntoString(p+"="+strings.Trim(value, `'"`), values)
	}
	return strvals.ParseInto(p+"="+value, values)
}

// helmChart finds the Flux HelmChart a chartRef names and turns its spec into a
// HelmRelease's spec.chart; it returns the HelmChart's namespace too.
func (fx *fluxIndex) helmChart(ref *fluxSourceRef, ns, cluster string) (*fluxChartTemplate, string) {
	if ref.Kind != "HelmChart" {
		return nil, ""
	}
	ns = firstNonEmpty(ref.Namespace, ns)
	for _, c := range clusterKeys(cluster) {
		m := fx.helmCharts[clusterKey(c, ns, ref.Name)]
		if m == nil {
			continue
		}
		var hc fluxChartTemplate
		if err := m.decode(&hc); err != nil || hc.Spec.Chart == "" {
			return nil, ""
		}
		return &hc, ns
	}
	return nil, ""
}

// chartRepo returns the URL of the HelmRepository ref names when render/remote
// can fetch its charts: a Helm HTTP repository (spec.type default, an http(s)
// URL) or an OCI one (spec.type oci, an oci:// URL, which source-controller
// requires of that type; its charts are <url>/<chart>:<version>, the version
// resolved against the tags as OCIChartRepository.GetChartVersion does).
func (fx *fluxIndex) chartRepo(ref fluxSourceRef, ns, cluster string) (string, bool) {
	if ref.Kind != "HelmRepository" {
		return "", false
	}
	ns = firstNonEmpty(ref.Namespace, ns)
	for _, c := range clusterKeys(cluster) {
		k := clusterKey(c, ns, ref.Name)
		url := fx.helmRepos[k]
		if url == "" {
			continue
		}
		switch fx.helmRepoTypes[k] {
		case "default":
			return url, strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://")
		case "oci":
			return url, strings.HasPrefix(url, "oci://")
		}
		return "", false
	}
	return "", false
}

func isChartDir(root, dir string) bool {
	r, ok := detectRenderer(root, dir)
	return ok && r == render.RendererHelm
}

// hideLeaves replaces every leaf value of Secret-sourced Helm values by a placeholder.
func hideLeaves(v map[string]any, secret, key string) map[string]any {
	out := make(map[string]any, len(v))
	for k, e := range v {
		if m, ok := e.(map[string]any); ok {
			out[k] = hideLeaves(m, secret, key)
			continue
		}
		out[k] = secretPlaceholder(secret, key)
	}
	return out
}

// fluxOCIRepository is what discovery reads of an OCIRepository.
type fluxOCIRepository struct {
	Spec struct {
		URL string `json:"url"`
		Ref *struct {
			Tag          string `json:"tag"`
			SemVer       string `json:"semver"`
			SemverFilter string `json:"semverFilter"`
			Digest       string `json:"digest"`
		} `json:"ref"`
		LayerSelector *struct {
			MediaType string `json:"mediaType"`
			Operation string `json:"operation"`
		} `json:"layerSelector"`
		Insecure bool `json:"insecure"`
		Verify   *struct {
			Provider string `json:"provider"`
		} `json:"verify"`
	} `json:"spec"`
}

// ociRepository finds the OCIRepository a sourceRef names (in the target's
// cluster, or in no cluster) and returns it as a render source with the notes
// the target gets, or why not.
func (d *discovery) ociRepository(ref fluxSourceRef, ns, cluster string) (*render.OCISource, []string, string) {
	ns = firstNonEmpty(ref.Namespace, ns)
	for _, c := range clusterKeys(cluster) {
		for _, m := range d.manifests {
			if m.superseded || m.group() != groupFluxSrc || m.Kind != "OCIRepository" || m.Name != ref.Name ||
				m.namespaceOr(defaultFluxNS) != ns || m.Cluster != c {
				continue
			}
			var o fluxOCIRepository
			if err := m.decode(&o); err != nil {
				return nil, nil, fmt.Sprintf("OCIRepository %s cannot be read: %v", nsName(ns, ref.Name), err)
			}
			s := o.Spec
			if !strings.HasPrefix(s.URL, "oci://") {
				return nil, nil, fmt.Sprintf("OCIRepository %s: spec.url %q is not an oci:// URL", nsName(ns, ref.Name), s.URL)
			}
			src := &render.OCISource{URL: s.URL, Insecure: s.Insecure}
			var notes []string
			if r := s.Ref; r != nil {
				src.Tag, src.SemVer, src.SemverFilter, src.Digest = r.Tag, r.SemVer, r.SemverFilter, r.Digest
			}
			if l := s.LayerSelector; l != nil {
				src.MediaType, src.Operation = l.MediaType, l.Operation
			}
			if v := s.Verify; v != nil {
				// source-controller refuses an artifact whose cosign or
				// notation signature does not verify (spec.verify); that
				// needs the keys and the signatures' registries, which a
				// preview does not have.
				notes = append(notes, fmt.Sprintf("OCIRepository %s: spec.verify (%s) was not performed: driftpreview does not verify artifact signatures; Flux will refuse the artifact if its signature does not verify",
					nsName(ns, ref.Name), firstNonEmpty(v.Provider, "cosign")))
			}
			return src, notes, ""
		}
	}
	return nil, nil, fmt.Sprintf("OCIRepository %s", nsName(ns, ref.Name))
}
