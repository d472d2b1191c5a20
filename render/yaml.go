package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Limits that protect the parser from hostile documents. They are far above what
// any real manifest needs.
const (
	// MaxDepth is how deeply collections may nest in one document.
	MaxDepth = 1000
	// maxExpandedNodes caps the nodes a document may expand to through aliases
	// (a "billion laughs" bomb expands a few hundred bytes to billions of nodes).
	maxExpandedNodes = 500_000
)

// Document is one YAML document of a file: its value in JSON-compatible form
// (map[string]any, []any, string, int64, float64, bool, nil), the line it starts on,
// and its root node for callers that want to point at the line of a field.
type Document struct {
	Line  int
	Value any
	Node  *yaml.Node
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// DecodeYAML splits data into YAML documents and converts each to JSON-compatible
// values, refusing alias bombs, documents nested deeper than MaxDepth and duplicate
// mapping keys. Errors are *Error naming file and line, fit for a PR comment.
// Empty documents are dropped. Render reads manifests, kustomize inputs and Helm
// values files through it, `driftpreview render` its input files, bot/gitops the
// files it scans for controller objects and bot/config .driftpreview.yaml;
// UnmarshalYAML is the same for typed values.
func DecodeYAML(data []byte, file string) ([]Document, error) {
	docs, _, err := decodeYAML(data, file, false)
	return docs, err
}

// DuplicateKey is a key that one mapping of a YAML document holds twice: at
// Line, first at First.
type DuplicateKey struct {
	File        string
	Key         string
	Line, First int
}

// Note says what a file Argo CD reads with a duplicate key deploys.
func (d DuplicateKey) Note() string {
	return fmt.Sprintf("%s:%d: duplicate key %q (first on line %d): read as Argo CD reads it, the last value wins (kustomize, and so Flux, refuses the file)", d.File, d.Line, d.Key, d.First)
}

// DecodeYAMLLastKeyWins is DecodeYAML for files Argo CD reads as manifests
// (a directory application, and the files discovery scans for controller
// objects): a mapping key given twice is not an error but read as Argo CD
// reads it, the last value winning, and returned. Argo CD's repo server
// splits a manifest file with apimachinery's YAMLOrJSONDecoder
// (argo-cd reposerver/repository/repository.go splitYAMLOrJSON;
// gitops-engine pkg/utils/kube/kube.go SplitYAML), which decodes each
// document with sigs.k8s.io/yaml.Unmarshal: the non-strict go-yaml v2
// Unmarshal (go.yaml.in/yaml/v2 decode.go setMapIndex sets a repeated key
// again; only UnmarshalStrict refuses it). kustomize (kyaml, on go-yaml v3)
// refuses it ("mapping key already defined"), so Flux, which always builds
// with kustomize, and Argo CD kustomize applications keep DecodeYAML's error.
func DecodeYAMLLastKeyWins(data []byte, file string) ([]Document, []DuplicateKey, error) {
	return decodeYAML(data, file, true)
}

func decodeYAML(data []byte, file string, lastKeyWins bool) ([]Document, []DuplicateKey, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Document
	var dups []DuplicateKey
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, dups, nil
		}
		if err != nil {
			return nil, nil, yamlError(err, file)
		}
		if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
			continue
		}
		root := n.Content[0]
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			continue // an empty document ("---" followed by nothing or comments)
		}
		c := newConverter(file)
		c.lastKeyWins = lastKeyWins
		if _, err := c.size(root, 0); err != nil {
			return nil, nil, err
		}
		v, err := c.value(root)
		if err != nil {
			return nil, nil, err
		}
		dups = append(dups, c.dups...)
		docs = append(docs, Document{Line: root.Line, Value: v, Node: root})
	}
}

// UnmarshalYAML decodes the one YAML document of data into v with DecodeYAML's
// limits (alias bombs, depth, duplicate keys refused), then through JSON the way
// sigs.k8s.io/yaml does: struct fields by their json tags (else their names, case
// insensitively), numbers in an any as float64. An empty input leaves v as it is;
// more than one document is an error. A value of the wrong type for a field is an
// error too, but, as with encoding/json, the other fields are filled. Errors are
// *Error naming file and line. Discovery and the repo config read the YAML of a
// PR (git-generator files, templatePatch, Helm values strings, kustomizations)
// through it.
func UnmarshalYAML(data []byte, file string, v any) error {
	docs, err := DecodeYAML(data, file)
	if err != nil {
		return err
	}
	switch len(docs) {
	case 0:
		return nil
	case 1:
	default:
		return &Error{File: file, Line: docs[1].Line, Err: errors.New("invalid YAML: only one document is allowed here; remove the \"---\" separator")}
	}
	b, err := json.Marshal(docs[0].Value)
	if err != nil {
		return &Error{File: file, Line: docs[0].Line, Err: fmt.Errorf("invalid YAML: %w", err)}
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			at := ""
			if te.Field != "" {
				at = te.Field + ": "
			}
			err = fmt.Errorf("%sa %s where %s is expected", at, te.Value, te.Type)
		}
		return &Error{File: file, Line: docs[0].Line, Err: err}
	}
	return nil
}

// checkYAML refuses alias bombs and over-deep nesting in data without converting it,
// for files a library parses after us (chart values, kustomize inputs). Syntax
// errors are reported too; callers decide whether those are fatal.
//
// A content that passed is remembered (passedYAML): the overlays of a
// repository read the same bases and components, and a render process reads
// them again for every overlay at base and at head; checking them was a
// twentieth of a render process's CPU on PR-wide at T=200
// (`preview --render-cpuprofile`). The answer depends on the bytes alone (the
// file name only names them in an error), so only a pass is remembered, by the
// content's SHA-256: a failure is found again, with its own file's name.
func checkYAML(data []byte, file string) error {
	sum := sha256.Sum256(data)
	if passedYAML.has(sum) {
		return nil
	}
	if err := checkYAMLUncached(data, file); err != nil {
		return err
	}
	passedYAML.add(sum)
	return nil
}

// passedYAML is the set of contents checkYAML passed in this process, bounded
// (maxPassedYAML sums, 40 bytes each with the map's slot; past that it starts
// again empty, which costs only checks).
var passedYAML = yamlPassSet{sums: map[[sha256.Size]byte]struct{}{}}

const maxPassedYAML = 1 << 15

type yamlPassSet struct {
	mu   sync.Mutex
	sums map[[sha256.Size]byte]struct{}
}

func (s *yamlPassSet) has(sum [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sums[sum]
	return ok
}

func (s *yamlPassSet) add(sum [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sums) >= maxPassedYAML {
		clear(s.sums)
	}
	s.sums[sum] = struct{}{}
}

// yamlChecks counts the contents checkYAMLUncached read, for tests.
var yamlChecks atomic.Int64

func checkYAMLUncached(data []byte, file string) error {
	yamlChecks.Add(1)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return yamlError(err, file)
		}
		c := newConverter(file)
		if _, err := c.size(&n, 0); err != nil {
			return err
		}
	}
}

// yamlError turns a go-yaml error into an *Error with the line it names.
func yamlError(err error, file string) error {
	msg := err.Error()
	line := 0
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		// go-yaml reports parser (not scanner) errors at the 0-based line of
		// the collection that is left open; make it 1-based and say so.
		if strings.HasPrefix(msg, "did not find expected") || strings.HasPrefix(msg, "found undefined tag") {
			line++
			msg += " (in the collection that starts on this line)"
		}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if strings.Contains(msg, "max depth") {
		msg = fmt.Sprintf("nested more than %d levels deep", MaxDepth)
	}
	return &Error{File: file, Line: line, Err: fmt.Errorf("invalid YAML: %s", msg)}
}

// converter turns yaml.Nodes into JSON-compatible values with depth and alias
// expansion limits.
type converter struct {
	file   string
	sizes  map[*yaml.Node]int // memoized expanded size per node
	height map[*yaml.Node]int // memoized expanded depth below each node
	active map[*yaml.Node]bool
	// lastKeyWins reads a repeated mapping key as go-yaml v2 does (the last
	// value wins) instead of refusing it; dups lists each once.
	lastKeyWins bool
	dups        []DuplicateKey
	dupSeen     map[*yaml.Node]bool
}

func newConverter(file string) converter {
	return converter{file: file, sizes: map[*yaml.Node]int{}, height: map[*yaml.Node]int{}, active: map[*yaml.Node]bool{}}
}

// size returns how many nodes n expands to, following aliases, and fails on
// excessive expansion, alias cycles or excessive depth. It is linear in the
// document thanks to memoization, so the check itself cannot be bombed. Depth is
// counted through aliases too: each anchored node remembers how deep it expands,
// so a chain of aliases that each add a level cannot build an object deeper than
// MaxDepth out of shallow pieces.
func (c *converter) size(n *yaml.Node, depth int) (int, error) {
	if depth > MaxDepth {
		return 0, c.tooDeep(n)
	}
	if s, ok := c.sizes[n]; ok {
		if depth+c.height[n] > MaxDepth {
			return 0, c.tooDeep(n)
		}
		return s, nil
	}
	if c.active[n] {
		return 0, &Error{File: c.file, Line: n.Line, Err: errors.New("invalid YAML: an alias refers to its own anchor")}
	}
	c.active[n] = true
	defer delete(c.active, n)
	total, height := 1, 0
	switch n.Kind {
	case yaml.AliasNode:
		s, err := c.size(n.Alias, depth)
		if err != nil {
			return 0, err
		}
		total, height = s, c.height[n.Alias]
	case yaml.MappingNode, yaml.SequenceNode, yaml.DocumentNode:
		for _, ch := range n.Content {
			s, err := c.size(ch, depth+1)
			if err != nil {
				return 0, err
			}
			total += s
			height = max(height, c.height[ch]+1)
			if total > maxExpandedNodes {
				break
			}
		}
	}
	if total > maxExpandedNodes {
		return 0, &Error{File: c.file, Line: n.Line, Err: fmt.Errorf("invalid YAML: aliases expand the document to more than %d nodes (a YAML alias bomb?)", maxExpandedNodes)}
	}
	c.sizes[n] = total
	c.height[n] = height
	return total, nil
}

func (c *converter) tooDeep(n *yaml.Node) error {
	return &Error{File: c.file, Line: n.Line, Err: fmt.Errorf("invalid YAML: nested more than %d levels deep", MaxDepth)}
}

func (c *converter) errorf(n *yaml.Node, format string, args ...any) error {
	return &Error{File: c.file, Line: n.Line, Err: fmt.Errorf(format, args...)}
}

// value converts n, already checked by size, into a JSON-compatible value the way
// sigs.k8s.io/yaml would (timestamps stay strings, keys become strings).
func (c *converter) value(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return c.value(n.Alias)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, ch := range n.Content {
			v, err := c.value(ch)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.ScalarNode:
		return c.scalar(n)
	}
	return nil, c.errorf(n, "invalid YAML: unexpected node")
}

func (c *converter) mapping(n *yaml.Node) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	// Merge keys ("<<") first, so explicit keys override them wherever they are.
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!merge" {
			continue
		}
		srcs := []*yaml.Node{v}
		if resolve(v).Kind == yaml.SequenceNode {
			srcs = resolve(v).Content
		}
		for _, s := range srcs {
			if resolve(s).Kind != yaml.MappingNode {
				return nil, c.errorf(s, "invalid YAML: a merge key (<<) needs a mapping")
			}
			m, err := c.mapping(resolve(s))
			if err != nil {
				return nil, err
			}
			for mk, mv := range m {
				if _, ok := out[mk]; !ok {
					out[mk] = mv
				}
			}
		}
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, c.errorf(n.Content[i], "invalid YAML: mapping keys must be scalars")
		}
		key := k.Value
		if k.ShortTag() == "!!null" {
			key = "null"
		}
		if first, dup := seen[key]; dup {
			if !c.lastKeyWins {
				return nil, c.errorf(n.Content[i], "invalid YAML: duplicate key %q (first defined on line %d)", key, first)
			}
			if c.dupSeen == nil {
				c.dupSeen = map[*yaml.Node]bool{}
			}
			if !c.dupSeen[n.Content[i]] { // an alias converts a mapping again
				c.dupSeen[n.Content[i]] = true
				c.dups = append(c.dups, DuplicateKey{File: c.file, Key: key, Line: n.Content[i].Line, First: first})
			}
		} else {
			seen[key] = n.Content[i].Line
		}
		val, err := c.value(v)
		if err != nil {
			return nil, err
		}
		out[key] = val
	}
	return out, nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func (c *converter) scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, c.errorf(n, "invalid YAML: not a boolean")
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, c.errorf(n, "invalid YAML: integer out of range")
		}
		return f, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, c.errorf(n, "invalid YAML: not a number")
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return n.Value, nil // JSON has no NaN/Inf; keep the text
		}
		return f, nil
	default: // !!str, !!timestamp, !!binary and custom tags stay text
		return n.Value, nil
	}
}

// parsedObject is an Object plus the line it starts on, for error messages.
type parsedObject struct {
	Object
	Line int
}

// Parse reads Kubernetes objects from one file of YAML or JSON manifests. It
// flattens List kinds, drops empty documents, and reports documents that are not
// Kubernetes objects (no apiVersion or kind) as notes rather than errors, so a
// values file or a README.yaml next to the manifests does not fail the target.
// file names the source in errors, notes and each Object's Source.
func Parse(data []byte, file string) ([]Object, []string, error) {
	pos, notes, err := parse(data, file)
	if err != nil {
		return nil, nil, err
	}
	objs := make([]Object, len(pos))
	for i := range pos {
		objs[i] = pos[i].Object
	}
	return objs, notes, nil
}

func parse(data []byte, file string) ([]parsedObject, []string, error) {
	docs, err := DecodeYAML(data, file)
	if err != nil {
		return nil, nil, err
	}
	out, notes := objectsOf(docs, file)
	return out, notes, nil
}

// parseLastKeyWins is parse for a manifest file of a plain directory, read
// as Argo CD (and kubectl apply, through the same decoder) reads it: a key
// given twice in a mapping takes its last value, with a note naming it
// (DecodeYAMLLastKeyWins).
func parseLastKeyWins(data []byte, file string) ([]parsedObject, []string, error) {
	docs, dups, err := DecodeYAMLLastKeyWins(data, file)
	if err != nil {
		return nil, nil, err
	}
	out, notes := objectsOf(docs, file)
	for _, d := range dups {
		notes = append(notes, d.Note())
	}
	return out, notes, nil
}

// objectsOf is parse's reading of decoded documents: the Kubernetes objects
// (List kinds flattened) and a note for each document that is none.
func objectsOf(docs []Document, file string) ([]parsedObject, []string) {
	var out []parsedObject
	var notes []string
	for _, d := range docs {
		m, ok := d.Value.(map[string]any)
		if !ok || !isObject(m) {
			notes = append(notes, fmt.Sprintf("%s:%d: skipped a document that is not a Kubernetes object (no apiVersion/kind)", file, d.Line))
			continue
		}
		items, isList := m["items"].([]any)
		if kind, _ := m["kind"].(string); isList && strings.HasSuffix(kind, "List") {
			for i, it := range items {
				line := d.Line
				if in := listItemNode(d.Node, i); in != nil {
					line = in.Line
				}
				im, ok := it.(map[string]any)
				if !ok || !isObject(im) {
					notes = append(notes, fmt.Sprintf("%s:%d: skipped a list item that is not a Kubernetes object (no apiVersion/kind)", file, line))
					continue
				}
				out = append(out, newParsed(im, file, line))
			}
			continue
		}
		out = append(out, newParsed(m, file, d.Line))
	}
	return out, notes
}

func isObject(m map[string]any) bool {
	av, _ := m["apiVersion"].(string)
	k, _ := m["kind"].(string)
	return av != "" && k != ""
}

func newParsed(m map[string]any, file string, line int) parsedObject {
	u := &unstructured.Unstructured{Object: m}
	return parsedObject{Object: Object{Key: KeyOf(u), Obj: u, Source: file}, Line: line}
}

// listItemNode finds the node of items[i] in a List document, for its line.
func listItemNode(n *yaml.Node, i int) *yaml.Node {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == "items" {
			s := resolve(n.Content[j+1])
			if s.Kind == yaml.SequenceNode && i < len(s.Content) {
				return s.Content[i]
			}
		}
	}
	return nil
}
