// Package policyfmt tells the two formats of policy files apart: admit's
// YAML format and envoyproxy/ratelimit's. Package policy's Parse uses it,
// and admit check-config to report each file's format. It also holds the
// bounds of a policy that package policy applies and package server and
// admit's commands share (each stated in the documentation of what applies
// it).
package policyfmt

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Bounds of a policy.
const (
	// MaxFileSize is the largest policy file the loaders read, in bytes
	// (4 MiB).
	MaxFileSize = 4 << 20

	// MaxNameLength is the longest rule, domain or tier name, and key
	// prefix (policy.Config.KeyPrefix), in bytes.
	MaxNameLength = 256
)

// Format is a policy file format.
type Format uint8

// The formats.
const (
	// Unknown is neither format.
	Unknown Format = iota
	// Admit is package policy's YAML format: rules with rates, quotas,
	// concurrency caps and tier tables, several domains, stores and
	// failure policies.
	Admit
	// Envoy is envoyproxy/ratelimit's configuration format: one domain
	// and its nested descriptors.
	Envoy
)

// String returns "admit", "envoy" or "unknown".
func (f Format) String() string {
	switch f {
	case Admit:
		return "admit"
	case Envoy:
		return "envoy"
	}
	return "unknown"
}

// ErrUnknown reports a file of neither format.
var ErrUnknown = errors.New("unknown file format")

// Detect tells which format a policy file is in (see Root). It returns
// Unknown and an error wrapping ErrUnknown for anything else, including a
// file that is not YAML. It reads data whole: bound it first.
func Detect(data []byte) (Format, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Unknown, fmt.Errorf("%w: %v", ErrUnknown, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return Unknown, fmt.Errorf("%w: empty file", ErrUnknown)
	}
	return Root(doc.Content[0])
}

// Root tells which format a policy file is in, from the keys of its
// top-level mapping, root: descriptors (with domain) is envoyproxy/
// ratelimit's format; rules, domains, tier_tables, defaults or version is
// admit's. A file with a domain and neither is envoyproxy/ ratelimit's (a
// domain without descriptors). It returns Unknown and an error wrapping
// ErrUnknown for anything else, including a file with keys of both
// formats.
func Root(root *yaml.Node) (Format, error) {
	if root.Kind != yaml.MappingNode {
		return Unknown, fmt.Errorf("%w: the file is not a YAML mapping", ErrUnknown)
	}
	var admitKey, envoyKey string
	hasDomain := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch k := root.Content[i].Value; k {
		case "descriptors":
			envoyKey = k
		case "rules", "domains", "tier_tables", "defaults", "version":
			admitKey = k
		case "domain":
			hasDomain = true
		}
	}
	switch {
	case admitKey != "" && envoyKey != "":
		return Unknown, fmt.Errorf("%w: the file has %s (admit's format) and %s (envoyproxy/ratelimit's)", ErrUnknown, admitKey, envoyKey)
	case admitKey != "":
		return Admit, nil
	case envoyKey != "" || hasDomain:
		return Envoy, nil
	}
	return Unknown, fmt.Errorf("%w: want rules or domains (admit's format) or domain and descriptors (envoyproxy/ratelimit's)", ErrUnknown)
}
