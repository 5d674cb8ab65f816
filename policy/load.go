package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/admit-go/admit/internal/readlimit"
	"go.yaml.in/yaml/v3"
)

// Format is a policy file format.
type Format uint8

const (
	// FormatUnknown is neither format.
	FormatUnknown Format = iota
	// FormatAdmit is this package's YAML format (see the package
	// documentation): rules with rates, quotas, concurrency caps and tier
	// tables, several domains, stores and failure policies.
	FormatAdmit
	// FormatEnvoy is envoyproxy/ratelimit's configuration format: one
	// domain and its nested descriptors (see ParseEnvoy).
	FormatEnvoy
)

// String returns "admit", "envoy" or "unknown".
func (f Format) String() string {
	switch f {
	case FormatAdmit:
		return "admit"
	case FormatEnvoy:
		return "envoy"
	}
	return "unknown"
}

// DetectFormat tells which format a policy file is in, from the keys of
// its top-level mapping: descriptors (with domain) is envoyproxy/
// ratelimit's format; rules, domains, tier_tables, defaults or version is
// this package's. A file with a domain and neither is envoyproxy/
// ratelimit's (a domain without descriptors). It returns FormatUnknown and
// an error wrapping ErrUnknownFormat for anything else, including a file
// that is not YAML or has keys of both formats.
func DetectFormat(data []byte) (Format, error) {
	if len(data) > MaxFileSize {
		return FormatUnknown, fmt.Errorf("%w: file of %d bytes is larger than the maximum of %d", ErrUnknownFormat, len(data), MaxFileSize)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return FormatUnknown, fmt.Errorf("%w: %v", ErrUnknownFormat, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return FormatUnknown, fmt.Errorf("%w: empty file", ErrUnknownFormat)
	}
	return detectRoot(doc.Content[0])
}

func detectRoot(root *yaml.Node) (Format, error) {
	if root.Kind != yaml.MappingNode {
		return FormatUnknown, fmt.Errorf("%w: the file is not a YAML mapping", ErrUnknownFormat)
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
		return FormatUnknown, fmt.Errorf("%w: the file has %s (admit's format) and %s (envoyproxy/ratelimit's)", ErrUnknownFormat, admitKey, envoyKey)
	case admitKey != "":
		return FormatAdmit, nil
	case envoyKey != "" || hasDomain:
		return FormatEnvoy, nil
	}
	return FormatUnknown, fmt.Errorf("%w: want rules or domains (admit's format) or domain and descriptors (envoyproxy/ratelimit's)", ErrUnknownFormat)
}

// Parse parses a policy file in either format, which it detects (see
// DetectFormat): ParseYAML for this package's, ParseEnvoy for envoyproxy/
// ratelimit's. name names the file in errors. The error is an Errors
// listing every problem (matching ErrInvalidPolicy), each at its file and
// line; for a file of neither format, its one entry also wraps
// ErrUnknownFormat.
func Parse(name string, data []byte) (*Policy, error) {
	var errs errList
	root, _ := parseYAML(name, data, &errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	if root == nil {
		return nil, Errors{{File: name, Line: 1, Msg: "empty file: want a policy"}}
	}
	f, err := detectRoot(root)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "policy: ")
		return nil, Errors{{File: name, Line: root.Line, Column: root.Column, Msg: msg, Err: ErrUnknownFormat}}
	}
	if f == FormatEnvoy {
		return ParseEnvoy(name, data)
	}
	return ParseYAML(name, data)
}

// ParseFile reads the policy file at path with ReadFile and parses it
// (see Parse).
func ParseFile(path string) (*Policy, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// ReadFile reads the policy file at path, at most MaxFileSize bytes: it
// reads no further, so that a larger file, or one that never ends (such
// as /dev/zero, or a FIFO written forever), costs no more and is an
// Errors naming the file and the limit. Any file may be read, a pipe such
// as /dev/stdin included; opening a FIFO waits for its writer. A file that
// cannot be read is the file system's error (an *os.PathError).
func ReadFile(path string) ([]byte, error) {
	data, err := readlimit.ReadFile(path, MaxFileSize)
	var tl *readlimit.TooLargeError
	if errors.As(err, &tl) {
		return nil, Errors{{File: path, Line: 1, Msg: fmt.Sprintf("file larger than the maximum of %d bytes", MaxFileSize)}}
	}
	return data, err
}

// LoadFiles reads and parses policy files, each in either format, and
// merges them into one Policy (see Merge): envoyproxy/ratelimit's
// deployments keep one domain per file. It reports the problems of every
// file.
func LoadFiles(paths ...string) (*Policy, error) {
	return loadFiles(paths, Merge)
}

// loadFiles parses the files of paths and merges them with merge.
func loadFiles(paths []string, merge func(...*Policy) (*Policy, error)) (*Policy, error) {
	var ps []*Policy
	var all Errors
	for _, path := range paths {
		p, err := ParseFile(path)
		if err != nil {
			if es, ok := err.(Errors); ok {
				all = append(all, es...)
				continue
			}
			return nil, err
		}
		ps = append(ps, p)
	}
	if len(all) > 0 {
		return nil, all
	}
	return merge(ps...)
}

// LoadFilesMergingDomains is LoadFiles with MergeDomains instead of Merge:
// several files may define one domain, as envoyproxy/ratelimit allows with
// MERGE_DOMAIN_CONFIG.
func LoadFilesMergingDomains(paths ...string) (*Policy, error) {
	return loadFiles(paths, MergeDomains)
}

// MergeDomains is Merge, except that the domains of one name are merged
// into one, as envoyproxy/ratelimit merges them with MERGE_DOMAIN_CONFIG:
// the rules of the later ones follow those of the first, and all are
// validated together (a descriptor limited twice is still an error, naming
// both places). Domains merged must agree on everything but their rules:
// their format (admit's or envoyproxy/ratelimit's), keys, shadow mode and
// how they enforce inline limits; a domain that does not is an error
// naming both places. The policies given are not changed.
func MergeDomains(ps ...*Policy) (*Policy, error) {
	out := &Policy{}
	byName := map[string]*Domain{}
	var errs errList
	for _, p := range ps {
		if p == nil {
			continue
		}
		for _, d := range p.Domains {
			if d == nil || d.Name == "" {
				out.Domains = append(out.Domains, d) // Validate reports it
				continue
			}
			first := byName[d.Name]
			if first == nil {
				cp := *d
				cp.Rules = append([]*Rule(nil), d.Rules...)
				byName[d.Name] = &cp
				out.Domains = append(out.Domains, &cp)
				continue
			}
			if !sameDomainSettings(first, d) {
				_, at := first.src.at("domain")
				path, pos := d.src.at("domain")
				errs.add(pos, path, fmt.Sprintf("domain %q cannot merge with its definition at %s: their format, keys, shadow mode and overrides must agree", truncate(d.Name), at))
				continue
			}
			first.Rules = append(first.Rules, d.Rules...)
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// sameDomainSettings reports whether a and b agree on all but their
// names' places and their rules.
func sameDomainSettings(a, b *Domain) bool {
	return a.envoy == b.envoy && a.Shadow == b.Shadow && a.Override == b.Override && slices.Equal(a.Keys, b.Keys)
}

// Merge returns a Policy with the domains of every policy given, in order,
// validated together: a domain defined twice, or a rule name used in two
// files, is an error (an Errors naming both places).
func Merge(ps ...*Policy) (*Policy, error) {
	out := &Policy{}
	for _, p := range ps {
		if p != nil {
			out.Domains = append(out.Domains, p.Domains...)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}
