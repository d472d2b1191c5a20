package preview

import (
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/discover"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// notAffectedReason is why a target the pull request does not touch is not
// rendered (TargetReport.NotAffected).
const notAffectedReason = "none of the files it is rendered from changes"

// notAffected is the report of a target the pull request does not touch: no
// changes, not rendered, no live comparison. Discovery's findings about it hold
// at base when the base declares it.
func (p *pipeline) notAffected(t config.Target, reason string) diffing.TargetReport {
	findings := slices.Clone(t.Findings)
	if p.atBase[discover.Key(t)] {
		diffing.MarkAllPreExisting(findings)
	}
	return diffing.TargetReport{Name: t.Name, Path: t.Path, Cluster: t.Cluster, Controller: t.Controller,
		NotAffected: reason, Notes: slices.Clone(t.Notes), Findings: findings, Changes: []diffing.Change{}}
}

// notAffectedBy returns, per target, why the pull request cannot change it (empty
// when it may): none of the files its render reads at base or at head
// (render.FindInputs) is among the changed files, nor its controller object's
// file, nor a file its watch globs match, and nothing that renders its
// controller object changes. What the walker cannot follow counts as touched:
// such a target is always rendered. Targets already listed as not rendered
// keep their reason. base and head find the inputs in the two checkouts.
func notAffectedBy(targets []config.Target, base, head *render.InputFinder, changed []string) []string {
	inputs := make([]render.Inputs, len(targets))
	touched := make([]bool, len(targets))
	// The two checkouts are walked at the same time, one goroutine each.
	atHead := make([]render.Inputs, len(targets))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, t := range targets {
			if t.Skip == "" {
				inputs[i] = base.Find(t.Path, t.Render)
			}
		}
	})
	wg.Go(func() {
		for i, t := range targets {
			switch {
			case t.Skip != "":
			case t.HeadSide != nil:
				atHead[i] = head.Find(t.HeadSide.Path, t.HeadSide.Render)
			default:
				atHead[i] = head.Find(t.Path, t.Render)
			}
		}
	})
	wg.Wait()
	for i, t := range targets {
		if t.Skip != "" {
			touched[i] = true // listed as it is
			continue
		}
		if t.HeadSide != nil {
			// The head declares it differently (values, path, variables).
			touched[i] = true
		}
		in := inputs[i].Merge(atHead[i])
		if c := t.Controller; c != nil {
			if c.Deleted {
				touched[i] = true
			}
			if c.Source != "" {
				in.Files = append(in.Files, c.Source)
			}
		}
		inputs[i] = in
		if _, ok := in.Touched(changed); ok || watched(t.Watch, changed) {
			touched[i] = true
		}
	}
	// A controller object that another target renders (an app-of-apps chart, a
	// kustomization that patches Flux Kustomizations) changes when that target's
	// render may: its file is then read by, or lies under, that target. Not
	// when discovery, which rendered both sides, found it declared alike at
	// base and head (SameAtHead).
	for again := true; again; {
		again = false
		for i, t := range targets {
			if touched[i] || t.Controller == nil || t.Controller.Source == "" || t.SameAtHead {
				continue
			}
			for j, p := range targets {
				if j != i && touched[j] && p.Skip == "" && reads(inputs[j], p.Path, t.Controller.Source) {
					touched[i], again = true, true
					break
				}
			}
		}
	}
	reasons := make([]string, len(targets))
	for i := range targets {
		if !touched[i] {
			reasons[i] = notAffectedReason
		}
	}
	return reasons
}

// reads reports whether a target at dir with inputs in reads file. When its
// inputs could not all be told, everything under dir counts as read; when
// they could, only they do: a Flux Kustomization over a directory of apps
// without a kustomization reads the apps' kustomizations and the files
// they name (their ks.yaml), not every file below it, so a file changed in
// one app touches that app's controller object only when the Kustomization
// that renders it reads that file (render.InputFinder, generated
// kustomizations).
func reads(in render.Inputs, dir, file string) bool {
	known := render.Inputs{Files: in.Files, Dirs: in.Dirs}
	if in.Unknown != "" {
		known.Dirs = append([]string{dir}, in.Dirs...)
	}
	_, ok := known.Touched([]string{file})
	return ok
}

// watched reports whether any changed file matches one of the target's watch
// globs: path.Match patterns on the repository path, where a pattern ending in
// "/**" matches everything under its directory.
func watched(globs, changed []string) bool {
	for _, g := range globs {
		for _, c := range changed {
			if dir, ok := strings.CutSuffix(g, "/**"); ok {
				if m, _ := path.Match(dir, c); m || prefixMatch(dir, c) {
					return true
				}
				continue
			}
			if m, _ := path.Match(g, c); m {
				return true
			}
		}
	}
	return false
}

// prefixMatch reports whether some parent directory of file matches the
// pattern dir.
func prefixMatch(dir, file string) bool {
	for p := path.Dir(file); p != "." && p != "/"; p = path.Dir(p) {
		if m, _ := path.Match(dir, p); m {
			return true
		}
	}
	return false
}
