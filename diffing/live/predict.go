package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// csaManager is the field manager kubectl apply uses without --server-side.
const csaManager = "kubectl-client-side-apply"

// lastAppliedAnnotation is where client-side apply keeps the applied object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

var lastAppliedPath = fieldpath.MakePathOrDie("metadata", "annotations", lastAppliedAnnotation)

// job is one head object that exists live.
type job struct {
	key  render.ObjectKey
	res  resource
	head *unstructured.Unstructured // prepared for apply
	live *unstructured.Unstructured
	base map[string]any // the base render of the same key, if any
}

// predict fills out.Predictions for every head object: objects not live (or of a
// kind not served yet) are created as head says; live ones are merged by simulate
// or dry-run.
func (st *read) predict(ctx context.Context, base, head render.ObjectSet, out *diffing.LiveState) {
	baseObjs := base.Index()
	reuse := st.reusable(baseObjs, head, out)
	var jobs []job
	for _, o := range head.Objects {
		if o.Obj == nil {
			continue
		}
		gvk := o.Obj.GroupVersionKind()
		res, served := st.cat.lookup(gvk.GroupKind(), gvk.Version)
		live := out.Objects[o.Key]
		// Dry-run mode sends creates to the server too, so validation, admission
		// and RBAC escalation prevention judge new objects as well.
		create := live == nil && st.opts.Mode == ModeDryRun && served && res.gvr.Version == gvk.Version
		switch {
		case !served || (live == nil && !create):
			out.Predictions[o.Key] = diffing.Prediction{Object: st.masked(o.Key, o.Obj.DeepCopy())}
		case res.gvr.Version != gvk.Version:
			out.Predictions[o.Key] = diffing.Prediction{Err: fmt.Errorf(
				"applying %s on cluster %s: the cluster does not serve %s in version %s (it serves %s)",
				o.Key, st.cluster, gvk.Kind, gvk.GroupVersion(), res.gvr.GroupVersion())}
		default:
			ns := st.liveKey(o.Key, res).Namespace
			if live != nil {
				ns = live.GetNamespace()
			}
			if p, ok := reuse[o.Key]; ok {
				out.Predictions[o.Key] = p
				continue
			}
			j := job{key: o.Key, res: res, head: st.prepare(o.Obj, res, ns), live: live}
			if b := baseObjs[o.Key]; b != nil && b.Obj != nil {
				j.base = b.Obj.Object
			}
			jobs = append(jobs, j)
		}
	}
	run, limit := st.simulate, workers()
	if st.opts.Mode == ModeDryRun {
		run, limit = st.dryRunUnlessNoop(ctx), cap(st.r.inflight)
	}
	// A few long-lived workers, not a goroutine per job: a new goroutine
	// starts on a small stack and grows it by copying as structured-merge-
	// diff recurses, which was about 6% of the preview process's CPU on make
	// bench's PR-wide (runtime.copystack); a worker keeps its grown stack.
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan job)
	for range min(limit, len(jobs)) {
		wg.Go(func() {
			for j := range work {
				p := run(ctx, j)
				p.Object = st.masked(j.key, p.Object)
				mu.Lock()
				out.Predictions[j.key] = p
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
}

// reusable returns the predictions of opts.Reuse whose apply this read repeats:
// the same head object onto the same live object, with the same base object.
// Predictions are read only (diffing.Prediction), so they are shared, not
// copied; a no-op's, which is the earlier read's live object itself
// (simulate), becomes this read's live object, equal to it.
func (st *read) reusable(baseObjs map[render.ObjectKey]*render.Object, head render.ObjectSet, out *diffing.LiveState) map[render.ObjectKey]diffing.Prediction {
	ru := st.opts.Reuse
	if ru == nil || ru.State == nil || ru.State.Err != nil {
		return nil
	}
	prevBase, prevHead := ru.Base.Index(), ru.Head.Index()
	same := func(a, b *render.Object) bool {
		if a == b {
			return true
		}
		if a == nil || b == nil {
			return false
		}
		if a.Obj == nil || b.Obj == nil {
			return a.Obj == nil && b.Obj == nil
		}
		return diffing.JSONEqual(a.Obj.Object, b.Obj.Object)
	}
	reuse := map[render.ObjectKey]diffing.Prediction{}
	for i := range head.Objects {
		o := &head.Objects[i]
		p, ok := ru.State.Predictions[o.Key]
		if !ok || o.Obj == nil || !same(o, prevHead[o.Key]) || !same(baseObjs[o.Key], prevBase[o.Key]) {
			continue
		}
		lo, plo := out.Objects[o.Key], ru.State.Objects[o.Key]
		if (lo == nil) != (plo == nil) || (lo != nil && !diffing.JSONEqual(lo.Object, plo.Object)) {
			continue
		}
		if p.Object != nil && p.Object == plo {
			p.Object = lo
		}
		reuse[o.Key] = p
	}
	return reuse
}

// prepare returns head as an apply request: without server-set metadata, in
// namespace ns (the live object's), with the tracking marks the GitOps controller
// adds before it applies (in both modes: they are part of what the controller
// sends).
func (st *read) prepare(obj *unstructured.Unstructured, res resource, ns string) *unstructured.Unstructured {
	u := obj.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "generation", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if ts, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); found && ts == nil {
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	}
	if res.namespaced {
		u.SetNamespace(ns)
	} else {
		unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
	}
	st.opts.Tracking.stamp(u, res.namespaced)
	return u
}

// masked hides Secret values of a predicted object when MaskSecrets is on.
func (st *read) masked(k render.ObjectKey, obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil || !st.opts.MaskSecrets || !isSecret(k) {
		return obj
	}
	return diffing.Mask(obj)
}

func isSecret(k render.ObjectKey) bool { return k.Group == "" && k.Kind == "Secret" }

// simulate runs the apiserver's server-side apply locally: first without force, to
// collect conflicts, then with force, as Flux and Argo CD apply, for the predicted
// object. Client-side-apply managers are upgraded first, as kubectl and the GitOps
// controllers do when they move to server-side apply. When the GitOps manager
// itself keeps the object with client-side apply (Argo CD's default sync), the
// predicted object is kubectl's three-way merge instead (clientSideApply); the
// conflicts still come from the server-side apply, since they name the fields
// another manager owns that the merge changes. The prediction is then made what
// the server would store: server defaults the local merge dropped put back
// (withServerDefaults) and typed values in their canonical form (canonical).
func (st *read) simulate(ctx context.Context, j job) diffing.Prediction {
	simulations.Add(1)
	a, err := st.r.getSchemas().fieldManager(ctx, j.head.GroupVersionKind())
	if err != nil {
		return diffing.Prediction{Err: st.applyError("simulating apply of", j.key, err)}
	}
	csa, err := st.clientSide(j)
	if err != nil {
		return diffing.Prediction{Err: st.applyError("simulating apply of", j.key, err)}
	}
	upgrade, err := clientSideManagers(j.live)
	if err != nil {
		return diffing.Prediction{Err: st.applyError("upgrading client-side-apply managers of", j.key, err)}
	}
	if provenNoop(a, csa, upgrade, j, st.opts.Manager) {
		// The apiserver stores live as it is (applyIsNoop), and so does the
		// simulation below: the field manager returns live, which has every
		// field withServerDefaults could put back, in the form canonical
		// gives it, since the server wrote it. The prediction is live itself,
		// not a copy: predictions are read only (diffing.Prediction), and
		// diffing then sees at once that the apply changes nothing.
		noops.Add(1)
		return diffing.Prediction{Object: j.live}
	}
	live := j.live
	if upgrade.Len() > 0 {
		live = j.live.DeepCopy()
		// The fields of client-side-apply managers become manager's, so the apply
		// treats them as its own, as csaupgrade does for kubectl apply
		// --server-side and as Flux and Argo CD do when they move an object to
		// server-side apply.
		if err := csaupgrade.UpgradeManagedFields(live, upgrade, st.opts.Manager); err != nil {
			return diffing.Prediction{Err: st.applyError("upgrading client-side-apply managers of", j.key, err)}
		}
	}
	applyTo := live.DeepCopy
	if skipPrune && keepsOwned(a.tc, live, j.head, st.opts.Manager) {
		// The prune would remove nothing: skip it (keepsOwned).
		pruneSkips.Add(1)
		applyTo = func() *unstructured.Unstructured {
			u := live.DeepCopy()
			withoutApplyEntry(u, st.opts.Manager)
			return u
		}
	}
	obj, err := a.fm.Apply(applyTo(), j.head.DeepCopy(), st.opts.Manager, false)
	var p diffing.Prediction
	if err != nil {
		conflicts, ok := conflictsFrom(err, j.live, j.head)
		if !ok {
			return diffing.Prediction{Err: st.applyError("simulating apply of", j.key, err)}
		}
		p.Conflicts = conflicts
		if !csa {
			if obj, err = a.fm.Apply(applyTo(), j.head.DeepCopy(), st.opts.Manager, true); err != nil {
				return diffing.Prediction{Conflicts: conflicts, Err: st.applyError("simulating forced apply of", j.key, err)}
			}
		}
	}
	if csa {
		u, err := clientSideApply(j.live, j.head)
		if err != nil {
			return diffing.Prediction{Conflicts: p.Conflicts, Err: st.applyError("simulating client-side apply of", j.key, err)}
		}
		obj = u
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return diffing.Prediction{Err: fmt.Errorf("simulating apply of %s: unexpected result type %T", j.key, obj)}
	}
	// u is the field manager's answer on copies of live and head, or the client-side
	// merge's decoded patch: no one else holds it, so the defaults and canonical
	// forms go in place (withServerDefaults and canonical without their copies).
	// TestSimulateLeavesInputs holds live and head unchanged.
	restoreDefaults(u.Object, j.live.Object, j.base, j.head.Object, false)
	if skipCanonical && !csa && isCanonical(j.head) {
		// canonical would change nothing (isCanonical).
		canonicalSkips.Add(1)
		p.Object = u
		return p
	}
	p.Object = canonical(u)
	return p
}

// clientSide says whether the GitOps controller applies j client-side (kubectl's
// three-way merge). For an Argo CD Application its sync options decide, as the
// head declares them (ArgoSync.ServerSide, gitops-engine sync_context.go
// shouldUseServerSideApply), so a PR that switches the mode is predicted in the
// new one; otherwise the live object tells how its manager keeps it
// (appliesClientSide).
func (st *read) clientSide(j job) (bool, error) {
	if a := st.opts.Argo; a != nil {
		return !a.ServerSide(j.head), nil
	}
	return appliesClientSide(j.live, st.opts.Manager)
}

// clientSideManagers are kubectl's client-side-apply manager and whoever owns the
// last-applied annotation through an Update (Argo CD's client-side sync).
func clientSideManagers(obj *unstructured.Unstructured) (sets.Set[string], error) {
	_, hasLastApplied := obj.GetAnnotations()[lastAppliedAnnotation]
	csa := sets.New[string]()
	if !hasLastApplied && !hasUpdateBy(obj, csaManager) {
		return csa, nil
	}
	for _, e := range obj.GetManagedFields() {
		if e.Operation != metav1.ManagedFieldsOperationUpdate || e.Subresource != "" {
			continue
		}
		if e.Manager == csaManager {
			csa.Insert(e.Manager)
			continue
		}
		if !hasLastApplied || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("decoding managed fields of %s: %w", e.Manager, err)
		}
		if set.Has(lastAppliedPath) {
			csa.Insert(e.Manager)
		}
	}
	return csa, nil
}

// hasUpdateBy reports whether obj may have an Update entry of manager on its main
// resource; false only when the managed fields, read as they are in the
// unstructured object (without converting every entry to its Go type), surely have
// none.
func hasUpdateBy(obj *unstructured.Unstructured, manager string) bool {
	entries, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields")
	if !found {
		return false
	}
	list, ok := entries.([]any)
	if !ok {
		return true
	}
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return true
		}
		if m["manager"] == manager {
			return true
		}
	}
	return false
}

// dryRunUnlessNoop returns dry-run mode's prediction of a job: live itself when
// the apply is a proven no-op (dryRunSkippable), else the apiserver's answer
// (dryRun), with at most dryRunInflight requests of the Reader in flight.
func (st *read) dryRunUnlessNoop(ctx context.Context) func(context.Context, job) diffing.Prediction {
	adm := st.r.getAdmission(ctx, st.cat)
	return func(ctx context.Context, j job) diffing.Prediction {
		if st.dryRunSkippable(ctx, j, adm) {
			dryRunSkips.Add(1)
			return diffing.Prediction{Object: j.live} // as simulate's no-op
		}
		select {
		case st.r.inflight <- struct{}{}:
		case <-ctx.Done():
			return diffing.Prediction{Err: st.applyError("dry-run apply of", j.key, ctx.Err())}
		}
		defer func() { <-st.r.inflight }()
		return st.dryRun(ctx, j)
	}
}

// dryRunSkippable reports whether dry-run mode may answer j without asking the
// apiserver, because the apiserver would answer it with live unchanged: the
// apply is the server-side apply simulate proves a no-op (applyIsNoop, under the
// same conditions as in simulate: no client-side apply, no client-side-apply
// manager to upgrade), and nothing the simulation cannot see would act on it.
// Everything else goes to the server: objects that are not live yet (creates),
// applies that change live (including those the server would refuse, as an
// immutable field, or default), Argo CD's replace and client-side syncs, objects
// of a resource some admission webhook or policy of the cluster may act on for an
// UPDATE (a mutating webhook may change even an unchanged object, a validating
// one refuse it; see admission), and, in the read that judges the base
// (Options.Reuse), objects whose head apply the server refused: the refusal
// (RBAC, a policy) may hold at base too, and that is what makes it pre-existing.
// RBAC is not checked for a skipped object: an identity without patch on an
// object the PR leaves as it is gets no live-unavailable finding for it.
func (st *read) dryRunSkippable(ctx context.Context, j job, adm *admission) bool {
	if !skipNoops || j.live == nil || adm.mayAct(j.res) {
		return false
	}
	if _, replace := st.opts.Argo.Replaces(j.key, j.head, j.live); replace {
		return false
	}
	if ru := st.opts.Reuse; ru != nil && ru.State != nil {
		if p, ok := ru.State.Predictions[j.key]; ok && (p.Err != nil || p.Refusal != nil) {
			return false
		}
	}
	a, err := st.r.getSchemas().fieldManager(ctx, j.head.GroupVersionKind())
	if err != nil {
		return false
	}
	csa, err := st.clientSide(j)
	if err != nil {
		return false
	}
	upgrade, err := clientSideManagers(j.live)
	if err != nil {
		return false
	}
	return provenNoop(a, csa, upgrade, j, st.opts.Manager)
}

// provenNoop is the no-op test of both modes: an apply that is server-side, with
// no client-side-apply manager to upgrade first, and changes nothing
// (applyIsNoop).
func provenNoop(a *applier, csa bool, upgrade sets.Set[string], j job, manager string) bool {
	return skipNoops && !csa && upgrade.Len() == 0 && applyIsNoop(a.tc, j.live, j.head, manager)
}

// dryRun asks the apiserver: a server-side apply with dryRun=All without force for
// the conflicts, then with force for the predicted object. Every refusal is
// classified (diffing.Refusal), so diffing can tell the manifest's faults from the
// asking identity's.
func (st *read) dryRun(ctx context.Context, j job) diffing.Prediction {
	var ri dynamic.ResourceInterface = st.r.dryDyn.Resource(j.res.gvr)
	if j.res.namespaced {
		ri = st.r.dryDyn.Resource(j.res.gvr).Namespace(j.head.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: st.opts.Manager, DryRun: []string{metav1.DryRunAll}}
	if j.live == nil {
		return st.dryRunCreate(ctx, ri, j, opts)
	}
	obj, err := ri.Apply(ctx, j.head.GetName(), j.head, opts)
	var p diffing.Prediction
	if _, replace := st.opts.Argo.Replaces(j.key, j.head, j.live); replace {
		// Argo CD's Replace=true: kubectl replace, a PUT of head at the live
		// resourceVersion (gitops-engine sync_context.go applyObject,
		// ReplaceResource). The PUT refuses an immutable change as an update
		// does; when Force=true deletes and recreates instead, diffing says so
		// (ArgoSync.Recreates).
		return st.dryRunInstead(j, err, "dry-run replace of", func() (*unstructured.Unstructured, error) {
			u := j.head.DeepCopy()
			u.SetResourceVersion(j.live.GetResourceVersion())
			return ri.Update(ctx, u, metav1.UpdateOptions{FieldManager: st.opts.Manager, DryRun: []string{metav1.DryRunAll}})
		})
	}
	if st.opts.Argo != nil && !st.opts.Argo.ServerSide(j.head) {
		// Argo CD's default sync: kubectl apply without --server-side, the
		// three-way patch of the live object's last-applied annotation, head
		// and live (threeWayPatch).
		return st.dryRunInstead(j, err, "dry-run client-side apply of", func() (*unstructured.Unstructured, error) {
			patch, err := threeWayPatch(j.live, j.head)
			if err != nil {
				return nil, err
			}
			return ri.Patch(ctx, j.head.GetName(), patch.typ, patch.patch, metav1.PatchOptions{FieldManager: st.opts.Manager, DryRun: []string{metav1.DryRunAll}})
		})
	}
	if err != nil {
		conflicts, ok, cerr := applyConflicts(err, j)
		if !ok {
			return st.refused("dry-run apply of", j.key, err)
		}
		if cerr != nil {
			return diffing.Prediction{Err: st.applyError("dry-run apply of", j.key, cerr)}
		}
		p.Conflicts = conflicts
		opts.Force = true
		if obj, err = ri.Apply(ctx, j.head.GetName(), j.head, opts); err != nil {
			r := st.refused("dry-run forced apply of", j.key, err)
			r.Conflicts = p.Conflicts
			return r
		}
	}
	p.Object = obj
	return p
}

// applyConflicts are the conflicts of a refused server-side apply, ok false when
// applyErr is no conflict. Those of client-side-apply managers are left out: the
// apiserver does not upgrade them, the GitOps controllers do before they apply,
// so their fields are no conflict.
func applyConflicts(applyErr error, j job) ([]diffing.Conflict, bool, error) {
	conflicts, ok := conflictsFrom(applyErr, j.live, j.head)
	if !ok {
		return nil, false, nil
	}
	csa, err := clientSideManagers(j.live)
	if err != nil {
		return nil, true, err
	}
	return slices.DeleteFunc(conflicts, func(c diffing.Conflict) bool { return csa.Has(c.Manager) }), true, nil
}

// dryRunInstead asks the apiserver what an Argo CD sync that does not
// server-side apply does to an object that exists: send is its request as a dry
// run (a PUT under Replace=true, kubectl's three-way PATCH for a client-side
// apply). The conflicts are those of the server-side apply tried first
// (applyErr), so that both live modes name the fields it overwrites.
func (st *read) dryRunInstead(j job, applyErr error, op string, send func() (*unstructured.Unstructured, error)) diffing.Prediction {
	var p diffing.Prediction
	if applyErr != nil {
		conflicts, ok, err := applyConflicts(applyErr, j)
		if err != nil {
			return diffing.Prediction{Err: st.applyError(op, j.key, err)}
		}
		if ok {
			p.Conflicts = conflicts
		}
	}
	obj, err := send()
	if err != nil {
		r := st.refused(op, j.key, err)
		r.Conflicts = p.Conflicts
		return r
	}
	p.Object = obj
	return p
}

// dryRunCreate sends an object that is not live yet to the server as a dry-run
// apply, which creates it. A namespace that does not exist yet (the merge creates
// it) cannot be dry-run into: the dry-run of the Namespace persists nothing, so
// the object is shown as head says, with a note saying why. On success the
// prediction is head as it is, as in simulate mode; the server's defaults are not
// part of what the PR creates.
func (st *read) dryRunCreate(ctx context.Context, ri dynamic.ResourceInterface, j job, opts metav1.ApplyOptions) diffing.Prediction {
	_, err := ri.Apply(ctx, j.head.GetName(), j.head, opts)
	if err == nil {
		return diffing.Prediction{Object: j.head}
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) && apierrors.IsNotFound(err) {
		if d := se.Status().Details; d != nil && d.Kind == "namespaces" {
			return diffing.Prediction{Object: j.head, Note: fmt.Sprintf(
				"Objects in namespace `%s` were not dry-run: the namespace does not exist on cluster `%s` yet, and the apiserver cannot dry-run into a namespace that does not exist (a dry-run of the Namespace persists nothing). They are shown as head says.",
				d.Name, st.cluster)}
		}
	}
	return st.refused("dry-run create of", j.key, err)
}

// refused is the prediction for a refused dry-run: the error for messages, and the
// server's answer classified. For Secrets, free text that may quote a value
// (admission messages, other validation) is dropped from the classification.
func (st *read) refused(op string, k render.ObjectKey, err error) diffing.Prediction {
	r := classify(err, isSecret(k))
	if r != nil && isSecret(k) && r.Kind == diffing.RefusalAdmission {
		r.Detail = ""
	}
	return diffing.Prediction{Err: st.applyError(op, k, err), Refusal: r}
}

// applyError names the operation, object and cluster. For Secrets it keeps only the
// status reason and the field names, since API messages can quote values.
func (st *read) applyError(op string, k render.ObjectKey, err error) error {
	if !isSecret(k) {
		return fmt.Errorf("%s %s on cluster %s: %w", op, k, st.cluster, err)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		var fields []string
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				if c.Field != "" {
					fields = append(fields, c.Field)
				}
			}
		}
		sort.Strings(fields)
		msg := fmt.Sprintf("%s %s on cluster %s: %s (HTTP %d)", op, k, st.cluster, s.Reason, s.Code)
		if len(fields) > 0 {
			msg += " in " + strings.Join(fields, ", ")
		}
		return &hiddenError{msg: msg + "; details hidden for Secrets", status: metav1.Status{
			Status: s.Status, Reason: s.Reason, Code: s.Code, Message: "details hidden for Secrets",
		}}
	}
	return fmt.Errorf("%s %s on cluster %s failed; details hidden for Secrets", op, k, st.cluster)
}

// hiddenError is an API error of a Secret without its message. It keeps the status
// reason and code, so apierrors.IsForbidden and friends still recognise it.
type hiddenError struct {
	msg    string
	status metav1.Status
}

func (e *hiddenError) Error() string { return e.msg }

// Status implements apierrors.APIStatus.
func (e *hiddenError) Status() metav1.Status { return e.status }
