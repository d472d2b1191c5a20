// Package diffing is the middle stage of the driftpreview pipeline: it compares the
// base and head ObjectSets of a target with each other and with the live cluster
// state, and turns the differences into a TargetReport of Changes and Findings.
//
// Findings carry stable rule IDs (prune, data-loss, field-conflict, live-drift…) that
// config, JSON and the PR comment share. Secret values are masked before a Change or
// Finding leaves this package. Reading the cluster lives in diffing/live; this package
// is pure and needs no cluster. ControllerKinds is the one table of the GitOps
// controller kinds (API, default namespace, name, field manager, tracking marks)
// that discovery, the live reads, the pipeline and the report share.
package diffing
