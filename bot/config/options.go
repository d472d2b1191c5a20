package config

import (
	"maps"
	"slices"

	"github.com/driftpreview/driftpreview/diffing"
)

// DiffOptions builds the diffing options for one target: the target's sync settings
// (prune, replace, field manager), the global policy, stateful kinds and human
// managers, the chart metadata folded in the diff shown, and the global ignore rules followed by the target's own (the
// pipeline has judged their expiry once for the report). Slices and maps are copied, so diffing
// may not change the Config through them. A nil Config gives the defaults.
func (c *Config) DiffOptions(t Target) diffing.Options {
	o := diffing.DefaultOptions()
	o.Prune = t.Sync.Prune
	o.Replace = t.Sync.Replace
	o.SelfHeal = t.Sync.SelfHeal
	o.HelmCRDs = t.Sync.HelmCRDs
	if t.Sync.Manager != "" {
		o.Manager = t.Sync.Manager
	}
	if t.Controller != nil && t.Controller.Argo != nil {
		a := *t.Controller.Argo
		a.Options = slices.Clone(a.Options)
		o.Argo = &a
	}
	if c != nil {
		o.StatefulKinds = slices.Clone(c.StatefulKinds)
		o.HumanManagers = slices.Clone(c.HumanManagers)
		o.Policy = diffing.Policy{Fail: slices.Clone(c.Policy.Fail), Severity: maps.Clone(c.Policy.Severity)}
		o.Ignore = slices.Clone(c.Ignore)
		if c.ChartMetadata != nil {
			o.ChartMetadata = slices.Clone(c.ChartMetadata)
		}
	}
	if !o.Argo.RespectsIgnores() {
		// An Application's ignoreDifferences, which its sync does not respect:
		// they hide nothing the merge does (ArgoSync.RespectsIgnores).
		return o
	}
	o.Ignore = append(o.Ignore, t.Ignore...)
	return o
}
