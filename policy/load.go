package policy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/admit-go/admit/internal/policyfmt"
	"github.com/admit-go/admit/internal/readlimit"
)

// Parse parses a policy file in either format, which it detects from the
// keys of its top-level mapping: descriptors (with domain) is envoyproxy/
// ratelimit's format; rules, domains, tier_tables, defaults or version is
// this package's (see the package documentation); a file with a domain
// and neither is envoyproxy/ratelimit's (a domain without descriptors).
// name names the file in errors. The error is an Errors
// listing every problem (matching ErrInvalidPolicy), each at its file and
// line; a file of neither format is one entry saying "unknown file
// format" and why.
func Parse(name string, data []byte) (*Policy, error) {
	var errs errList
	root, _ := parseYAML(name, data, &errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	if root == nil {
		return nil, Errors{{File: name, Line: 1, Msg: "empty file: want a policy"}}
	}
	f, err := policyfmt.Root(root)
	if err != nil {
		return nil, Errors{{File: name, Line: root.Line, Column: root.Column, Msg: err.Error(), Err: err}}
	}
	if f == policyfmt.Envoy {
		return parseEnvoy(name, data)
	}
	return parseAdmit(name, data)
}

// parseFile reads the policy file at path with ReadFile and parses it
// (see Parse).
func parseFile(path string) (*Policy, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// ReadFile reads the policy file at path, at most 4 MiB (4,194,304 bytes): it
// reads no further, so that a larger file, or one that never ends (such
// as /dev/zero, or a FIFO written forever), costs no more and is an
// Errors naming the file and the limit. Any file may be read, a pipe such
// as /dev/stdin included; opening a FIFO waits for its writer. A file that
// cannot be read is the file system's error (an *os.PathError).
func ReadFile(path string) ([]byte, error) {
	data, err := readlimit.ReadFile(path, maxFileSize)
	var tl *readlimit.TooLargeError
	if errors.As(err, &tl) {
		return nil, Errors{{File: path, Line: 1, Msg: fmt.Sprintf("file larger than the maximum of %d bytes", maxFileSize)}}
	}
	return data, err
}

// LoadFiles reads policy files (with ReadFile), parses each in either
// format (see Parse) and merges them into one Policy (see Merge):
// envoyproxy/ratelimit's deployments keep one domain per file. It reports
// the problems of every file. To merge the domains of one name that
// several files define (envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG), load
// each file alone and merge them with MergeDomains.
func LoadFiles(paths ...string) (*Policy, error) {
	var ps []*Policy
	var all Errors
	for _, path := range paths {
		p, err := parseFile(path)
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
	return Merge(ps...)
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
