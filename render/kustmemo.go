package render

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// The render filesystem reads every kustomization file a build loads and
// parses it for its own checks: screenKustomization (bombs and paths),
// deprecations (kustomize's deprecation warnings, as notes), the source
// markers (noteKustomization) and the Helm namespace inheritance
// (noteChildren). A render process builds the same bases and components again
// for every overlay, at base and at head: on PR-wide at T=200 these parses of
// the same contents were about 5% of the render processes' CPU
// (`preview --render-cpuprofile`, issue 25). Each parse is a function of the
// bytes alone, so each is kept once per content (its SHA-256) and kind of
// parse, as checkYAML keeps its passes. Callers treat what they get as read
// only. Only a parse that succeeded is kept where the error would name a
// file: a failure is found again, with its own file's name.

// parseKind tells the parses of one content apart.
type parseKind uint8

const (
	parsedKustomization parseKind = iota // types.Kustomization.Unmarshal
	parsedScreen                         // DecodeYAML, for screenKustomization
	parsedChildren                       // noteChildren's fields
)

type parseKey struct {
	kind parseKind
	sum  [sha256.Size]byte
}

// kustParses holds the parses, bounded (maxKustParses entries; past that it
// starts again empty, which costs only parses). An entry is a kustomization's
// few fields or its YAML nodes: a few kilobytes.
var kustParses = struct {
	mu sync.Mutex
	m  map[parseKey]any
}{m: map[parseKey]any{}}

const maxKustParses = 1 << 11

// kustParsesRun counts the parses memoParse ran, for tests.
var kustParsesRun atomic.Int64

// memoParse returns parse(data), run once per content and kind in this
// process while keep says its result may be kept.
func memoParse[T any](kind parseKind, data []byte, parse func([]byte) T, keep func(T) bool) T {
	key := parseKey{kind, sha256.Sum256(data)}
	kustParses.mu.Lock()
	v, ok := kustParses.m[key]
	kustParses.mu.Unlock()
	if ok {
		return v.(T)
	}
	kustParsesRun.Add(1)
	t := parse(data)
	if keep(t) {
		kustParses.mu.Lock()
		if len(kustParses.m) >= maxKustParses {
			clear(kustParses.m)
		}
		kustParses.m[key] = t
		kustParses.mu.Unlock()
	}
	return t
}

func always[T any](T) bool { return true }

// kustomizationOf is data parsed as kustomize parses a kustomization file
// (nil when it does not parse; kustomize then says why).
func kustomizationOf(data []byte) *types.Kustomization {
	return memoParse(parsedKustomization, data, func(data []byte) *types.Kustomization {
		var k types.Kustomization
		if k.Unmarshal(data) != nil {
			return nil
		}
		return &k
	}, always)
}

// screened is DecodeYAML's documents of a kustomization file.
type screened struct {
	docs []Document
	err  error
}

// screenedOf is DecodeYAML(data, file), kept only when it succeeds (an error
// names file).
func screenedOf(data []byte, file string) ([]Document, error) {
	s := memoParse(parsedScreen, data, func(data []byte) screened {
		docs, err := DecodeYAML(data, file)
		return screened{docs, err}
	}, func(s screened) bool { return s.err == nil })
	return s.docs, s.err
}

// kustChildren are the fields of a kustomization noteChildren reads.
type kustChildren struct {
	Namespace  string   `yaml:"namespace"`
	Resources  []string `yaml:"resources"`
	Bases      []string `yaml:"bases"`
	Components []string `yaml:"components"`
}

// childrenOf is data's kustChildren (nil when it does not decode).
func childrenOf(data []byte) *kustChildren {
	return memoParse(parsedChildren, data, func(data []byte) *kustChildren {
		var kust kustChildren
		if yaml.Unmarshal(data, &kust) != nil {
			return nil
		}
		return &kust
	}, always)
}
