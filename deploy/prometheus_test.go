package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Record      string            `json:"record"`
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// ruleFiles returns the rule files of deploy/prometheus (*.rules.yml; the
// *.test.yml beside them are promtool's unit tests).
func ruleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("prometheus", "*.rules.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule file in prometheus/: %v", err)
	}
	return files
}

// readRules returns the expressions of the rule files, each named by its
// alert or recorded series, and the names of the series they record.
func readRules(t *testing.T) (exprs map[string]string, recorded map[string]bool) {
	t.Helper()
	exprs, recorded = map[string]string{}, map[string]bool{}
	for _, f := range ruleFiles(t) {
		var rf ruleFile
		decodeFile(t, f, func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }, &rf)
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				name := r.Alert
				if r.Record != "" {
					name = r.Record
					recorded[r.Record] = true
				}
				exprs[f+": "+name] = r.Expr
			}
		}
	}
	return exprs, recorded
}

// promtool returns the path of promtool: $ADMIT_PROMTOOL (scripts/test
// sets it to the one it extracts from Debian's prometheus package), or
// promtool on the PATH. Without one the test is skipped, or fails if
// ADMIT_REQUIRE_PROMTOOL=1 (as in CI).
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ADMIT_PROMTOOL"); p != "" {
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if os.Getenv("ADMIT_REQUIRE_PROMTOOL") == "1" {
		t.Fatal("ADMIT_REQUIRE_PROMTOOL=1 but promtool is not on the PATH and ADMIT_PROMTOOL is not set")
	}
	t.Skip("promtool is missing: scripts/test extracts it from Debian's prometheus package (or set ADMIT_PROMTOOL)")
	return ""
}

// TestPrometheusRules: promtool accepts the rule files (check rules) and
// its unit tests of every alert pass (test rules), and every alert of
// the rule files has a unit test.
func TestPrometheusRules(t *testing.T) {
	exprs, _ := readRules(t)
	tests, err := filepath.Glob(filepath.Join("prometheus", "*.test.yml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool test in prometheus/: %v", err)
	}
	var testText strings.Builder
	for _, f := range tests {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		testText.Write(data)
	}
	for name := range exprs {
		if alert, ok := strings.CutPrefix(name[strings.Index(name, ": ")+2:], "Admit"); ok &&
			!strings.Contains(testText.String(), "alertname: Admit"+alert+"\n") {
			t.Errorf("alert Admit%s has no alert_rule_test", alert)
		}
	}
	bin := promtool(t)
	for _, args := range [][]string{append([]string{"check", "rules"}, ruleFiles(t)...), append([]string{"test", "rules"}, tests...)} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
