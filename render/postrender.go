package render

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kfilterannotations "sigs.k8s.io/kustomize/api/filters/annotations"
	kfilterlabels "sigs.k8s.io/kustomize/api/filters/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// PostRenderer is one entry of a Flux HelmRelease's spec.postRenderers: its
// kustomize patches and images, applied to the chart's output.
type PostRenderer struct {
	// Patches are kustomize patch entries in YAML: patch: (a strategic merge
	// patch or a JSON6902 patch), and an optional target: selector.
	Patches []string `json:"patches,omitempty"`
	// Images are "name=newName:tag@digest" (any part after the name may be
	// left out), as KustomizeOptions.Images.
	Images []string `json:"images,omitempty"`
}

// postRenderSource is the annotation that carries each object's index through
// the post-renderers, so the object keeps its template file as its Source
// (Helm carries the file name the same way: postrenderer.helm.sh/postrender-filename).
const postRenderSource = "driftpreview.io/postrender-source"

// postRender runs a HelmRelease's post-renderers over the objects the chart's
// templates rendered, as helm-controller does (fluxcd/helm-controller
// internal/postrender/build.go BuildPostRenderers): each spec.postRenderers
// entry in order, a kustomize build of the previous output with its patches and
// images (internal/postrender/kustomize.go: no plugins, no load restrictions,
// an in-memory file system), then spec.commonMetadata's labels and annotations
// set on metadata only (common_renderer.go: kustomize's label and annotation
// transformers with the field specs metadata/labels and metadata/annotations,
// never selectors or pod templates). helm-controller's origin labels
// (helm.toolkit.fluxcd.io/name, /namespace) come last there; the live
// prediction adds them with the other tracking marks. Helm runs post-renderers
// on the templates' output only (pkg/action renderResources), not on the
// chart's crds/ directory; the hooks they also see are left out of the render
// anyway. Growth of the manifests counts against the target's limits.
func postRender(ctx context.Context, sb *sandbox, dir string, objs []parsedObject, h HelmOptions) ([]parsedObject, error) {
	if len(h.PostRenderers) == 0 && len(h.CommonLabels) == 0 && len(h.CommonAnnotations) == 0 {
		return objs, nil
	}
	// spec.postRenderStrategy (helm-controller internal/action/post_render.go,
	// Helm's PostRenderStrategy): Combined (the default) runs the
	// post-renderers once over hooks and manifests together, Separate once
	// over each, NoHooks over the manifests only. Hooks are left out of the
	// render afterwards, but a post-renderer that fails on them fails the
	// release.
	switch h.PostRenderStrategy {
	case "", "Combined":
	case "Separate", "NoHooks":
		var hooks, rest []parsedObject
		for _, o := range objs {
			if isHelmHook(o.Object) {
				hooks = append(hooks, o)
			} else {
				rest = append(rest, o)
			}
		}
		out, err := postRenderAll(ctx, sb, dir, rest, h)
		if err != nil || h.PostRenderStrategy == "NoHooks" || len(hooks) == 0 {
			return append(out, hooks...), err
		}
		hooks, err = postRenderAll(ctx, sb, dir, hooks, h)
		return append(out, hooks...), err
	default:
		return nil, &Error{File: dir, Err: fmt.Errorf("spec.postRenderStrategy %q: want Combined, Separate or NoHooks", h.PostRenderStrategy)}
	}
	return postRenderAll(ctx, sb, dir, objs, h)
}

// postRenderAll runs the post-renderers once over objs.
func postRenderAll(ctx context.Context, sb *sandbox, dir string, objs []parsedObject, h HelmOptions) ([]parsedObject, error) {
	if len(objs) == 0 {
		return nil, nil
	}
	var in bytes.Buffer
	for i, o := range objs {
		u := o.Obj.DeepCopy()
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[postRenderSource] = strconv.Itoa(i)
		u.SetAnnotations(ann)
		b, err := sigsyaml.Marshal(u.Object)
		if err != nil {
			return nil, &Error{File: o.Source, Err: fmt.Errorf("post-rendering: encoding %s: %w", o.Key, err)}
		}
		in.WriteString("---\n")
		in.Write(b)
	}
	before := int64(in.Len())
	text := in.Bytes()
	select {
	case kustomizeLock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	text, err := func() ([]byte, error) {
		defer func() { <-kustomizeLock }()
		defer resetOpenAPISchema()
		for i, pr := range h.PostRenderers {
			out, err := kustomizePostRender(text, pr)
			if err != nil {
				return nil, fmt.Errorf("spec.postRenderers[%d].kustomize: %w (helm-controller fails the release the same way)", i, err)
			}
			text = out
		}
		return commonMetadata(text, h.CommonLabels, h.CommonAnnotations)
	}()
	if err != nil {
		return nil, &Error{File: dir, Err: err}
	}
	if grown := int64(len(text)) - before; grown > 0 {
		if err := sb.charge(dir, grown); err != nil {
			return nil, err
		}
		if err := sb.output(dir, grown); err != nil {
			return nil, err
		}
	}
	got, _, err := parse(text, dir)
	if err != nil {
		return nil, &Error{File: dir, Err: fmt.Errorf("reading the post-rendered manifests: %w", err)}
	}
	byKey := make(map[ObjectKey]int, len(objs))
	for i, o := range objs {
		byKey[o.Key] = i
	}
	for i := range got {
		u := got[i].Obj
		ann := u.GetAnnotations()
		// A patch that replaced the annotations took the index along: the
		// object is found by its key then, else it is the chart's.
		n, err := strconv.Atoi(ann[postRenderSource])
		if err != nil || n < 0 || n >= len(objs) {
			var ok bool
			if n, ok = byKey[KeyOf(u)]; !ok {
				n = -1
			}
		}
		got[i].Source = dir
		if n >= 0 {
			got[i].Source, got[i].Line = objs[n].Source, objs[n].Line
		}
		delete(ann, postRenderSource)
		if len(ann) == 0 {
			unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
		} else {
			u.SetAnnotations(ann)
		}
		got[i].Key = KeyOf(u)
	}
	return got, nil
}

// kustomizePostRender is helm-controller's Kustomize post-renderer
// (internal/postrender/kustomize.go Run): the input as the one resource of a
// generated kustomization with the entry's images and patches.
func kustomizePostRender(in []byte, pr PostRenderer) ([]byte, error) {
	fs := filesys.MakeFsInMemory()
	const input = "helm-output.yaml"
	k := types.Kustomization{Resources: []string{input}}
	k.APIVersion, k.Kind = types.KustomizationVersion, types.KustomizationKind
	for _, im := range pr.Images {
		img, err := parseImage(im)
		if err != nil {
			return nil, fmt.Errorf("images: %w", err)
		}
		k.Images = append(k.Images, img)
	}
	for i, p := range pr.Patches {
		var patch types.Patch
		if err := sigsyaml.UnmarshalStrict([]byte(p), &patch); err != nil || patch.Patch == "" {
			return nil, fmt.Errorf("patches[%d]: not a patch entry (want patch: and an optional target:)", i)
		}
		k.Patches = append(k.Patches, types.Patch{Patch: patch.Patch, Target: patch.Target})
	}
	kb, err := sigsyaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile(input, in); err != nil {
		return nil, err
	}
	if err := fs.WriteFile("kustomization.yaml", kb); err != nil {
		return nil, err
	}
	opts := &krusty.Options{LoadRestrictions: types.LoadRestrictionsNone, PluginConfig: types.DisabledPluginConfig()}
	rm, err := krusty.MakeKustomizer(opts).Run(fs, ".")
	if err != nil {
		return nil, err
	}
	return rm.AsYaml()
}

// commonMetadata is helm-controller's CommonRenderer
// (internal/postrender/common_renderer.go, transformer.go).
func commonMetadata(in []byte, labels, annotations map[string]string) ([]byte, error) {
	if len(labels) == 0 && len(annotations) == 0 {
		return in, nil
	}
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	rm, err := resmap.NewFactory(rf).NewResMapFromBytes(in)
	if err != nil {
		return nil, err
	}
	// The filters kustomize's LabelTransformerPlugin and
	// AnnotationsTransformerPlugin apply (internal/builtins), which
	// helm-controller's transformer.go configures.
	if len(labels) > 0 {
		f := kfilterlabels.Filter{Labels: labels, FsSlice: types.FsSlice{{Path: "metadata/labels", CreateIfNotPresent: true}}}
		if err := rm.ApplyFilter(f); err != nil {
			return nil, fmt.Errorf("spec.commonMetadata.labels: %w", err)
		}
	}
	if len(annotations) > 0 {
		f := kfilterannotations.Filter{Annotations: annotations, FsSlice: types.FsSlice{{Path: "metadata/annotations", CreateIfNotPresent: true}}}
		if err := rm.ApplyFilter(f); err != nil {
			return nil, fmt.Errorf("spec.commonMetadata.annotations: %w", err)
		}
	}
	return rm.AsYaml()
}
