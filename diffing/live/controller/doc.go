// Package controller reads the live GitOps controller object behind a discovered
// target (an Argo CD Application, a Flux Kustomization or HelmRelease) and says
// whether the merge will actually reach the cluster.
//
// It is part of the live stage of the pipeline, next to diffing/live: the bot calls
// Read for each target whose config.Target.Controller is set, then Findings to turn
// the difference between the controller object in git and the one on the cluster
// into sync-disabled and controller-missing findings (automated sync switched off by
// hand, a suspended Kustomization, prune off live, an Application nobody created).
// State.Inventory is the controller's own list of what it manages, which widens the
// prune scope beyond tracking labels.
//
// For an Application, Read also gets argocd-cm (in the Application's namespace, else
// argocd) for Argo CD's tracking method, instance label key and installation ID,
// which decide the marks Argo CD writes on what it applies; when it cannot be read,
// State.Argo is empty and Argo CD's defaults apply.
//
// Read needs only get on the one controller object (and argocd-cm, optionally).
package controller
