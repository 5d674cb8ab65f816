package server

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/admit-go/admit/policy"
)

//go:embed default.yaml
var defaultPolicyYAML []byte

// defaultPolicyFile is the name the built-in policy goes by in errors and
// logs.
const defaultPolicyFile = "<built-in policy>"

// DefaultPolicyYAML returns the built-in policy's file (server/default.yaml
// in admit's repository), what a Server enforces without Config.PolicyFiles
// or Config.Policy: a small multi-tenant API in the "api" domain, with
// per-address, per-user, per-tenant (by plan), per-route and global limits
// and a "demo" limit of 5 requests a minute. Its rules are kept in the
// engine's default store: in Redis, with the failure policies the file
// gives them, when the Server has one (Config.Redis), else in memory
// (where failure policies do not apply). It goes by the name "<built-in
// policy>" in errors, logs and /debug/policy. Start a policy of your own
// from it; policy.Parse of it is the Policy the Server enforces.
func DefaultPolicyYAML() []byte { return bytes.Clone(defaultPolicyYAML) }

// defaultPolicy returns the built-in policy (see DefaultPolicyYAML).
func defaultPolicy() (*policy.Policy, error) {
	p, err := policy.Parse(defaultPolicyFile, defaultPolicyYAML)
	if err != nil {
		return nil, err
	}
	return p, p.Validate()
}

// maxPolicyFiles bounds the files the policy paths may expand to.
const maxPolicyFiles = 1000

// PolicyFiles returns the policy files paths stand for, as
// WithPolicyFiles reads them: each file as it is, and each directory's
// *.yaml and *.yml files (not hidden ones, nor those of its
// subdirectories) in name order. The error is the file system's for a
// path that cannot be read, or wraps admit.ErrInvalidConfig ("server: no
// policy files") for a directory without policy files.
func PolicyFiles(paths ...string) ([]string, error) { return expandPaths(paths) }

func expandPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		n := len(out)
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue // Kubernetes' ..data and editors' swap files
			}
			if ext := strings.ToLower(filepath.Ext(name)); ext != ".yaml" && ext != ".yml" {
				continue
			}
			full := filepath.Join(p, name)
			if fi, err := os.Stat(full); err != nil || fi.IsDir() {
				continue // a dangling link, or a directory named *.yaml
			}
			out = append(out, full)
		}
		if len(out) == n {
			return nil, fmt.Errorf("%w: directory %s has no *.yaml or *.yml file", errNoPolicyFiles, p)
		}
	}
	if len(out) > maxPolicyFiles {
		return nil, fmt.Errorf("%w: %d policy files, the maximum is %d", errInvalidConfig, len(out), maxPolicyFiles)
	}
	return out, nil
}

// fileStat is what the poller compares between two looks at a file.
type fileStat struct {
	path    string
	size    int64
	modTime time.Time
	missing bool
}

// statFiles returns the stats of the files paths stand for; a path that
// cannot be read is one missing entry (so its return is a change).
func statFiles(paths []string) []fileStat {
	files, err := expandPaths(paths)
	if err != nil {
		return []fileStat{{path: strings.Join(paths, "\x00"), missing: true}}
	}
	out := make([]fileStat, len(files))
	for i, f := range files {
		out[i].path = f
		fi, err := os.Stat(f)
		if err != nil {
			out[i].missing = true
			continue
		}
		out[i].size, out[i].modTime = fi.Size(), fi.ModTime()
	}
	return out
}

func sameStats(a, b []fileStat) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].path != b[i].path || a[i].size != b[i].size || !a[i].modTime.Equal(b[i].modTime) || a[i].missing != b[i].missing {
			return false
		}
	}
	return true
}

// snapshot is the content of the policy files at one look: the files and
// their bytes, and a hash of both.
type snapshot struct {
	files []string
	data  [][]byte
	hash  [sha256.Size]byte
	err   error // reading failed: the snapshot stands for that failure
}

// readSnapshot reads the files paths stand for.
func readSnapshot(paths []string) *snapshot {
	s := &snapshot{}
	h := sha256.New()
	files, err := expandPaths(paths)
	if err != nil {
		s.err = err
		fmt.Fprintf(h, "error\x00%v", err)
		h.Sum(s.hash[:0])
		return s
	}
	s.files = files
	for _, f := range files {
		data, err := policy.ReadFile(f)
		if err != nil {
			s.err = err
			fmt.Fprintf(h, "error\x00%v", err)
			break
		}
		fmt.Fprintf(h, "%d:%s\x00%d:", len(f), f, len(data))
		h.Write(data)
		s.data = append(s.data, data)
	}
	h.Sum(s.hash[:0])
	return s
}

// parse parses the snapshot's files into one policy (as policy.LoadFiles
// does, from the bytes the hash was taken of), merging the domains of one
// name (policy.MergeDomains) if mergeDomains is set.
func (s *snapshot) parse(mergeDomains bool) (*policy.Policy, error) {
	if s.err != nil {
		return nil, s.err
	}
	ps := make([]*policy.Policy, 0, len(s.files))
	var all policy.Errors
	var other []error
	for i, f := range s.files {
		p, err := policy.Parse(f, s.data[i])
		if err != nil {
			var es policy.Errors
			if errors.As(err, &es) {
				all = append(all, es...)
			} else {
				other = append(other, err)
			}
			continue
		}
		ps = append(ps, p)
	}
	switch {
	case len(other) > 0 && len(all) > 0:
		return nil, errors.Join(append(other, all)...)
	case len(other) > 0:
		return nil, errors.Join(other...)
	case len(all) > 0:
		return nil, all
	}
	if mergeDomains {
		return policy.MergeDomains(ps...)
	}
	return policy.Merge(ps...)
}

// policySummary describes a policy for logs: its domains and rule count.
func policySummary(p *policy.Policy) (domains []string, rules int) {
	for _, d := range p.Domains {
		domains = append(domains, d.Name)
		rules += len(d.Rules)
	}
	return domains, rules
}
