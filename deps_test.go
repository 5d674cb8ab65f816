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
	"redisstore":         true,
	"promlimit":          true,
	"grpclimit":          true,
	"policy":             true,
	"server":             true,
	"cmd/admit":          true,
	"internal/redistest": true,
	"internal/stores":    true,
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

// TestPolicyKnowsNoBackend holds the arrow policy -> backend out (DESIGN.md,
// principle 8): the engine is given its stores through policy.Backend, so
// policy depends on no store, neither directly nor through another
// package. (keyed and concurrency still reach it through compose until
// compose is backend-neutral; they are checked among its direct imports.)
func TestPolicyKnowsNoBackend(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	const module = "github.com/admit-go/admit"
	deps, err := exec.Command(gobin, "list", "-deps", "./policy").Output()
	if err != nil {
		t.Fatalf("go list -deps ./policy: %v", err)
	}
	for _, path := range strings.Fields(string(deps)) {
		for _, bad := range []string{"github.com/redis/", module + "/redisstore", module + "/quota", module + "/internal/stores", module + "/policy/backends"} {
			if path == bad || strings.HasPrefix(path, bad+"/") || strings.HasPrefix(path, bad) && strings.HasSuffix(bad, "/") {
				t.Errorf("policy depends on %s", path)
			}
		}
	}
	imports, err := exec.Command(gobin, "list", "-f", `{{join .Imports "\n"}}`, "./policy").Output()
	if err != nil {
		t.Fatalf("go list ./policy: %v", err)
	}
	for _, path := range strings.Fields(string(imports)) {
		switch path {
		case module + "/keyed", module + "/concurrency", module + "/quota", module + "/redisstore":
			t.Errorf("policy imports %s", path)
		}
	}
}
