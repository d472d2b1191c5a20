package render

import "errors"

// Unavailable is why a target cannot be rendered here although its controller can
// render it: something the controller fetches when it syncs, such as a chart
// dependency from a Helm repository, is not in the checkout, and a render never
// touches the network. It comes wrapped in an *Error that names the file and line
// that asks for it. It is a limit of the preview, not a problem of the pull
// request: callers list the target as not rendered with this reason instead of
// reporting a render error.
type Unavailable struct {
	Reason string
	// Remote, when set, is a remote kustomize base or component (as the
	// kustomization writes it) that the caller may fetch and pass in
	// KustomizeOptions.RemoteBases before rendering again.
	Remote string
	// Chart, when set, is a kustomize helmCharts chart that the caller may
	// fetch and pass in KustomizeHelm.Charts before rendering again.
	Chart *KustomizeChart
}

// ChartNeeded returns the helmCharts chart err asks the caller to fetch, if any.
func ChartNeeded(err error) (KustomizeChart, bool) {
	var u *Unavailable
	if err == nil || !errors.As(err, &u) || u.Chart == nil {
		return KustomizeChart{}, false
	}
	return *u.Chart, true
}

// RemoteNeeded returns the remote base err asks the caller to fetch, if any.
func RemoteNeeded(err error) (string, bool) {
	var u *Unavailable
	if err == nil || !errors.As(err, &u) || u.Remote == "" {
		return "", false
	}
	return u.Remote, true
}

func (u *Unavailable) Error() string { return u.Reason }

// IsUnavailable reports whether err, or an error it wraps, is *Unavailable, and
// returns the full text (file, line and reason).
func IsUnavailable(err error) (string, bool) {
	var u *Unavailable
	if err == nil || !errors.As(err, &u) {
		return "", false
	}
	return err.Error(), true
}
