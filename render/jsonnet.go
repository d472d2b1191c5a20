package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/google/go-jsonnet"
)

// JsonnetOptions is Argo CD's spec.source.directory.jsonnet: external variables,
// top-level arguments and library directories for the .jsonnet files of a
// directory application.
type JsonnetOptions struct {
	ExtVars []JsonnetVar
	TLAs    []JsonnetVar
	// Libs are library directories relative to the checkout root, as Argo CD
	// resolves them (relative to the repository, not to the application path).
	Libs []string
}

// JsonnetVar is one external variable or top-level argument: a string, or Jsonnet
// code when Code is set.
type JsonnetVar struct {
	Name  string
	Value string
	Code  bool
}

// jsonnetMaxStack is go-jsonnet's default call depth; deeper recursion is an error
// instead of unbounded growth.
const jsonnetMaxStack = 500

// renderJsonnet evaluates one .jsonnet file the way Argo CD's repo server does for a
// directory application (reposerver/repository findManifests and makeJsonnetVM): a
// fresh VM per file with the ext vars and TLAs, imports searched next to the
// importing file, then in the libraries (last first) and the application
// directory; the output is one object or an array of objects. Unlike Argo CD, every
// import is read through the sandbox: only files inside the checkout, within the
// per-file and per-target byte limits, and never an absolute path.
func renderJsonnet(ctx context.Context, sb *sandbox, dir, file string, jo *JsonnetOptions) ([]parsedObject, []string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	data, err := sb.readFile(file)
	if err != nil {
		return nil, nil, err
	}
	jpaths := []string{dir}
	for _, l := range jo.Libs {
		// Argo CD resolves a library path against the repository root, an
		// absolute one too; one that leaves the repository is an error there.
		c, err := cleanRel(strings.TrimPrefix(l, "/"))
		if err != nil {
			return nil, nil, &Error{File: file, Err: fmt.Errorf("jsonnet library path %q leads outside the repository", l)}
		}
		jpaths = append(jpaths, c)
	}
	vm := jsonnet.MakeVM()
	vm.MaxStack = jsonnetMaxStack
	// The file itself comes through the importer too; it was read above.
	vm.Importer(&sandboxImporter{sb: sb, jpaths: jpaths, cache: map[string]*importEntry{
		file: {contents: jsonnet.MakeContentsRaw(data), exists: true},
	}})
	vm.SetTraceOut(&bytes.Buffer{}) // std.trace output goes nowhere, never to our stderr
	for _, v := range jo.ExtVars {
		if v.Code {
			vm.ExtCode(v.Name, v.Value)
		} else {
			vm.ExtVar(v.Name, v.Value)
		}
	}
	for _, v := range jo.TLAs {
		if v.Code {
			vm.TLACode(v.Name, v.Value)
		} else {
			vm.TLAVar(v.Name, v.Value)
		}
	}
	out, err := vm.EvaluateFile(file)
	if err != nil {
		return nil, nil, jsonnetError(file, err)
	}
	if err := sb.charge(file, int64(len(out))); err != nil {
		return nil, nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return nil, nil, &Error{File: file, Err: fmt.Errorf("jsonnet output is not JSON: %w", err)}
	}
	items, isArray := v.([]any)
	if !isArray {
		items = []any{v}
	}
	var objs []parsedObject
	var notes []string
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok || !isObject(m) {
			what := "the output"
			if isArray {
				what = fmt.Sprintf("item %d of the output array", i)
			}
			return nil, nil, &Error{File: file, Err: fmt.Errorf("%s is not a Kubernetes object (an object with apiVersion and kind); Argo CD fails to sync it too", what)}
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, nil, &Error{File: file, Err: err}
		}
		po, n, err := parse(b, file)
		if err != nil {
			return nil, nil, err
		}
		for j := range po {
			po[j].Line = 0 // a line of the generated JSON means nothing to the author
		}
		objs = append(objs, po...)
		notes = append(notes, n...)
	}
	return objs, notes, nil
}

// jsonnetPos is the position go-jsonnet puts in front of its messages.
var jsonnetPos = regexp.MustCompile(`([^\s:()]+\.(?:jsonnet|libsonnet|json)):(\d+):\d+(?:-\d+)?`)

// jsonnetError turns a jsonnet error into an *Error at the file and line it names,
// with only the first line of the message (the stack trace can be long).
func jsonnetError(file string, err error) error {
	var re *Error
	if errors.As(err, &re) {
		return re // an import the sandbox refused says why itself
	}
	msg := strings.TrimSpace(err.Error())
	first, _, _ := strings.Cut(msg, "\n")
	first = strings.TrimPrefix(strings.TrimSpace(first), "RUNTIME ERROR: ")
	first = strings.TrimPrefix(first, "STATIC ERROR: ")
	line := 0
	where := file
	if m := jsonnetPos.FindStringSubmatch(msg); m != nil {
		where = m[1]
		fmt.Sscan(m[2], &line)
		first = strings.TrimSpace(strings.TrimPrefix(strings.Replace(first, m[0], "", 1), ":"))
	}
	const maxLen = 400
	if len(first) > maxLen {
		first = first[:maxLen] + "…"
	}
	return &Error{File: where, Line: line, Err: fmt.Errorf("evaluating jsonnet: %s", first)}
}

// sandboxImporter resolves jsonnet imports inside the checkout only: relative to
// the importing file, then in each library path from the last to the first, as
// go-jsonnet's FileImporter does. foundAt is the checkout-relative path.
type sandboxImporter struct {
	sb     *sandbox
	jpaths []string

	mu    sync.Mutex
	cache map[string]*importEntry
}

type importEntry struct {
	contents jsonnet.Contents
	exists   bool
	err      error
}

func (im *sandboxImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	if path.IsAbs(importedPath) {
		return jsonnet.Contents{}, "", fmt.Errorf("import %q is an absolute path: only files inside the repository can be imported", importedPath)
	}
	dirs := []string{path.Dir(importedFrom)}
	for i := len(im.jpaths) - 1; i >= 0; i-- {
		dirs = append(dirs, im.jpaths[i])
	}
	outside := false
	for _, d := range dirs {
		p := path.Join(d, importedPath)
		c, err := cleanRel(p)
		if err != nil {
			outside = true
			continue
		}
		e := im.try(c)
		if e.err != nil {
			return jsonnet.Contents{}, "", e.err
		}
		if e.exists {
			return e.contents, c, nil
		}
	}
	if outside {
		return jsonnet.Contents{}, "", fmt.Errorf("import %q leads outside the repository", importedPath)
	}
	return jsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: not found next to %s or in the jsonnet library paths %s", importedPath, importedFrom, strings.Join(im.jpaths, ", "))
}

// try reads p once; a missing file is remembered as missing, any other problem
// (a symlink out of the checkout, a file over the limit) is an error.
func (im *sandboxImporter) try(p string) *importEntry {
	im.mu.Lock()
	defer im.mu.Unlock()
	if e, ok := im.cache[p]; ok {
		return e
	}
	e := &importEntry{}
	if fi, err := im.sb.rootLstat(p); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			e.err = im.sb.explain(p, err)
		}
		im.cache[p] = e
		return e
	} else if fi.IsDir() {
		im.cache[p] = e
		return e
	}
	data, err := im.sb.readFile(p)
	if err != nil {
		e.err = err
	} else {
		e.exists = true
		e.contents = jsonnet.MakeContentsRaw(data)
	}
	im.cache[p] = e
	return e
}
