// Command k8sschema writes standalone, strict JSON schemas for kubeconform
// (one file per kind, named {kind}-{group}-{version}.json as kubeconform's
// -schema-location template {{ .ResourceKind }}{{ .KindSuffix }} expects)
// from a Kubernetes OpenAPI definitions document (every $ref inlined) or
// from CustomResourceDefinition YAML files. Strict: an object schema that
// lists properties and says nothing of others admits no others, so a
// misspelt field fails validation.
//
//	k8sschema -definitions _definitions.json -kinds Deployment,Service -out dir
//	k8sschema -crd servicemonitors.yaml -out dir
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	defs := flag.String("definitions", "", "Kubernetes OpenAPI document with a definitions object")
	kinds := flag.String("kinds", "", "comma-separated kinds to write from -definitions (every version of each)")
	crds := flag.String("crd", "", "comma-separated CustomResourceDefinition YAML files")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if err := run(*defs, *kinds, *crds, *out); err != nil {
		fmt.Fprintln(os.Stderr, "k8sschema:", err)
		os.Exit(1)
	}
}

func run(defsPath, kinds, crds, out string) error {
	if out == "" {
		return errors.New("-out is required")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if defsPath != "" {
		if err := fromDefinitions(defsPath, split(kinds), out); err != nil {
			return err
		}
	}
	for _, f := range split(crds) {
		if err := fromCRD(f, out); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

type gvk struct{ Group, Version, Kind string }

func fileName(g gvk) string {
	name := strings.ToLower(g.Kind)
	if g.Group != "" {
		name += "-" + strings.ToLower(strings.Split(g.Group, ".")[0])
	}
	return name + "-" + strings.ToLower(g.Version) + ".json"
}

func fromDefinitions(path string, kinds []string, out string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	found := map[string]bool{}
	for name, def := range doc.Definitions {
		gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
		if len(gvks) != 1 {
			continue
		}
		m, _ := gvks[0].(map[string]any)
		g := gvk{Group: str(m["group"]), Version: str(m["version"]), Kind: str(m["kind"])}
		if !want[g.Kind] {
			continue
		}
		s, err := inline(def, doc.Definitions, []string{name})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := write(filepath.Join(out, fileName(g)), strict(s)); err != nil {
			return err
		}
		found[g.Kind] = true
	}
	for _, k := range kinds {
		if !found[k] {
			return fmt.Errorf("kind %s not in %s", k, path)
		}
	}
	return nil
}

func str(v any) string { s, _ := v.(string); return s }

// inline replaces every {"$ref": "#/definitions/X"} by a copy of X.
func inline(v any, defs map[string]map[string]any, stack []string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			name, ok := strings.CutPrefix(ref, "#/definitions/")
			if !ok || defs[name] == nil {
				return nil, fmt.Errorf("unresolvable $ref %q", ref)
			}
			for _, s := range stack {
				if s == name {
					return nil, fmt.Errorf("recursive $ref %q", ref)
				}
			}
			return inline(defs[name], defs, append(stack, name))
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := inline(e, defs, stack)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := inline(e, defs, stack)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// strict closes every object schema that lists properties.
func strict(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["properties"]; ok {
			if _, set := x["additionalProperties"]; !set && x["x-kubernetes-preserve-unknown-fields"] != true {
				x["additionalProperties"] = false
			}
		}
		for _, e := range x {
			strict(e)
		}
	case []any:
		for _, e := range x {
			strict(e)
		}
	}
	return v
}

func fromCRD(path, out string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd struct {
		Kind string `json:"kind"`
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return err
	}
	if crd.Kind != "CustomResourceDefinition" || len(crd.Spec.Versions) == 0 {
		return errors.New("not a CustomResourceDefinition with versions")
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("version %s has no openAPIV3Schema", v.Name)
		}
		g := gvk{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		if err := write(filepath.Join(out, fileName(g)), strict(v.Schema.OpenAPIV3Schema)); err != nil {
			return err
		}
	}
	return nil
}

func write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
