package admit

import (
	"os/exec"
	"strings"
	"testing"
)

// Every package of the module must import only the standard library
// (DESIGN.md, principle 7), except those that exist to bridge to another
// ecosystem (Redis, Prometheus, gRPC, Envoy, YAML) and the commands built on
// them, listed here. A new package is core unless it is added to this list.
var bridgePackages = map[string]bool{
	"redisstore":              true,
	"promlimit":               true,
	"grpclimit":               true,
	"policy":                  true,
	"server":                  true,
	"cmd/admit":               true,
	"internal/redistest":      true,
	"internal/stores/inredis": true,
	"internal/policyfmt":      true,
	"internal/yamltext":       true,
	"sim":                     true, // the policy engine (YAML) and the traffic files
	"internal/simreport":      true, // admit simulate's report: charts with gonum.org/v1/plot
}

func TestCoreImportsOnlyStandardLibrary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	const module = "github.com/admit-go/admit"
	all, err := exec.Command(gobin, "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var core []string
	for _, path := range strings.Fields(string(all)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if !bridgePackages[rel] && !bridgePackages[strings.SplitN(rel, "/", 2)[0]] {
			core = append(core, path)
		}
	}
	if len(core) < 3 {
		t.Fatalf("found only %d core packages in %q", len(core), all)
	}
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, core...)
	out, err := exec.Command(gobin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, path := range strings.Fields(string(out)) {
		if path != module && !strings.HasPrefix(path, module+"/") {
			t.Errorf("a core package depends on %s, which is not in the standard library", path)
		}
	}
}

// The arrows that must never exist (DESIGN.md, Layout): compose knows the
// backends only through the contract of backend.go, so its dependencies
// hold no backend and no Redis client; the backends import nothing above
// them; policy knows its stores only through policy.Backend.
var forbiddenDeps = []struct {
	pkg       string   // relative to the module
	forbidden []string // import paths (a prefix ending in "/" forbids a tree)
}{
	{"compose", []string{"github.com/admit-go/admit/keyed", "github.com/admit-go/admit/concurrency", "github.com/admit-go/admit/quota", "github.com/admit-go/admit/redisstore", "github.com/redis/"}},
	{"keyed", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore"}},
	{"quota", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore"}},
	{"concurrency", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore"}},
	{"redisstore", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy"}},
	// The middleware and the layers above compose know neither the
	// service nor any backend: they take the root's contract.
	{"httplimit", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore", "github.com/admit-go/admit/keyed", "github.com/admit-go/admit/quota", "github.com/admit-go/admit/concurrency", "github.com/redis/"}},
	{"grpclimit", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore", "github.com/admit-go/admit/keyed", "github.com/admit-go/admit/quota", "github.com/admit-go/admit/concurrency", "github.com/redis/"}},
	{"transport", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore", "github.com/admit-go/admit/keyed", "github.com/admit-go/admit/quota", "github.com/admit-go/admit/concurrency", "github.com/redis/"}},
	{"adaptive", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore", "github.com/admit-go/admit/keyed", "github.com/admit-go/admit/quota", "github.com/admit-go/admit/concurrency", "github.com/redis/"}},
	{"fair", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore", "github.com/admit-go/admit/keyed", "github.com/admit-go/admit/quota", "github.com/admit-go/admit/concurrency", "github.com/redis/"}},
	// prefetch wraps any shared store through the contract.
	{"prefetch", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore", "github.com/admit-go/admit/keyed", "github.com/admit-go/admit/quota", "github.com/admit-go/admit/concurrency", "github.com/redis/"}},
	// promlimit reads the state of the limiters given to Observer.Watch
	// (concurrency's among them), but knows no other backend.
	{"promlimit", []string{"github.com/admit-go/admit/server", "github.com/admit-go/admit/policy", "github.com/admit-go/admit/redisstore", "github.com/admit-go/admit/keyed", "github.com/admit-go/admit/quota", "github.com/redis/"}},
	// sim runs the engine over memory: no Redis client, no service. Only
	// admit simulate draws charts: the library, the service and the public
	// sim package know neither the report nor the plotting library.
	{"sim", []string{"github.com/admit-go/admit/redisstore", "github.com/redis/", "github.com/admit-go/admit/server", "github.com/admit-go/admit/policy/backends", "github.com/admit-go/admit/internal/simreport", "gonum.org/"}},
	{".", []string{"github.com/admit-go/admit/internal/simreport", "gonum.org/"}},
	{"server", []string{"github.com/admit-go/admit/internal/simreport", "gonum.org/"}},
	{"policy", []string{"github.com/admit-go/admit/internal/simreport", "gonum.org/"}},
	// policy is given its stores through policy.Backend (principle 8).
	{"policy", []string{"github.com/admit-go/admit/keyed", "github.com/admit-go/admit/concurrency", "github.com/admit-go/admit/quota", "github.com/admit-go/admit/redisstore", "github.com/redis/", "github.com/admit-go/admit/internal/stores", "github.com/admit-go/admit/policy/backends"}},
}

func TestBackendArrows(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	for _, c := range forbiddenDeps {
		out, err := exec.Command(gobin, "list", "-deps", "./"+c.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v\n%s", c.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range c.forbidden {
				if dep == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)) || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s", c.pkg, dep)
				}
			}
		}
	}
}
