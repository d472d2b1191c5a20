// Package live reads a target's live state from the Kubernetes API; with
// diffing/live/controller (the controller objects) and bot/preview's read of Argo
// CD's cluster Secrets, it is all the code of driftpreview that talks to the API.
// It sits between rendering and diffing: given the base and head ObjectSets of one
// target, a Reader reads the live objects that matter (one LIST per type and
// namespace, never a GET per object), finds what belongs to the target by Argo CD,
// Flux and Helm tracking marks or a controller inventory, counts what a pruned
// Namespace or CRD would take with it, finds the volumes behind PVCs, and predicts
// what applying head would do. The result is a diffing.LiveState, which package
// diffing turns into live diffs and findings.
//
// Predictions come in two modes. "simulate" (the default) needs only read RBAC: it
// runs the apiserver's own server-side-apply field manager
// (k8s.io/apimachinery/pkg/util/managedfields) locally, with schemas from the
// cluster's OpenAPI v3 document or, for built-in types, the ones compiled into
// k8s.io/client-go/applyconfigurations. "dry-run" asks the apiserver for a
// server-side apply with dryRun=All, which needs patch RBAC but also shows admission
// webhooks and validation errors. Both report field-manager conflicts the same way.
// simulate answers an apply that changes nothing (the manager already owns exactly
// the fields head sets, with the values live has: most objects of most PRs) with
// live itself, without running the field manager (noop.go).
//
// A cluster that cannot be read completely gives LiveState.Err and no objects at
// all: diffing then reports live-unavailable instead of a partial, misleading diff.
// Secret values never leave this package in errors, and nothing here logs.
package live
