// Package watch keeps open pull requests' previews true while the cluster changes:
// it watches the live objects the previews compared (diffing.TargetReport.Live)
// and calls back, debounced and rate-limited per repository, when a change can
// alter a preview, so the server queues a re-preview of that pull request's head.
//
// Per cluster it runs one client-go shared informer per resource type and
// namespace that open previews use (not one per pull request), over the dynamic
// client, with a transform that keeps of each object only its name and, for the
// objects a preview compared, the fields the comparison reads
// (diffing.SeenLive: hashes of the values and their managers, no status, no
// managedFields). An index maps each object to the pull requests whose previews
// include it; an event is compared with what each of those previews saw, so a
// status-only or resourceVersion-only update triggers nothing, while a changed
// field, a new manager, a creation or a deletion does. Where the identity may not
// watch a type (the watch is forbidden), the same comparison runs on a periodic
// LIST instead. It sits between bot/server, which feeds it every posted preview
// and every close, and the Kubernetes API; it never queues anything itself.
package watch
