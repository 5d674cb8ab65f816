package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dashboard is the part of Grafana's dashboard JSON model the tests read.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int                       `json:"id"`
	Type       string                    `json:"type"`
	Title      string                    `json:"title"`
	Datasource *datasourceRef            `json:"datasource"`
	GridPos    *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// readDashboards decodes every dashboard of deploy/grafana.
func readDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("grafana", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboard in grafana/: %v", err)
	}
	out := map[string]dashboard{}
	for _, f := range files {
		var d dashboard
		decodeFile(t, f, json.Unmarshal, &d)
		out[f] = d
	}
	return out
}

// decodeFile decodes the file f into v with decode, failing the test if
// it cannot.
func decodeFile(t *testing.T, f string, decode func([]byte, any) error, v any) {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := decode(data, v); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
}

// dashboardQueries returns the PromQL of a dashboard, each named by
// where it is: its panels' targets and its query variables.
func dashboardQueries(d dashboard) (map[string]string, error) {
	q := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				q[fmt.Sprintf("panel %q, target %s", p.Title, tg.RefID)] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		s, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			s, _ = m["query"].(string)
		}
		expr, err := variableExpr(s)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %v", v.Name, err)
		}
		q["variable "+v.Name] = expr
	}
	return q, nil
}

// variableExpr returns the PromQL of a query variable of Grafana's
// Prometheus data source: label_values(SELECTOR, LABEL) or
// query_result(EXPR).
func variableExpr(s string) (string, error) {
	if m := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_]\w*\)$`).FindStringSubmatch(s); m != nil {
		return m[1], nil
	}
	if m := regexp.MustCompile(`^query_result\((.+)\)$`).FindStringSubmatch(s); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("%q: want label_values(SELECTOR, LABEL) or query_result(EXPR), whose metrics can be checked", s)
}

// grafanaVar matches Grafana's variables in a query: $name, ${name},
// ${name:format} and [[name]].
var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// expandVariables replaces Grafana's variables in a query with values
// PromQL parses: the interval variables with a duration, the others (in
// label matchers) with a word.
func expandVariables(q string) string {
	return grafanaVar.ReplaceAllStringFunc(q, func(v string) string {
		switch strings.Trim(v, "${}[]") {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		}
		return "x"
	})
}

// TestGrafanaDashboard: each dashboard is one Grafana imports: its model
// has a title, a uid and a schema version; every panel an id of its own
// and a place on the grid; every panel but rows queries the dashboard's
// data source variable, with PromQL that parses (its variables
// expanded); and the data source is a variable of Prometheus's, with the
// job, instance and rule variables the queries use.
func TestGrafanaDashboard(t *testing.T) {
	for f, d := range readDashboards(t) {
		if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
			t.Errorf("%s: title %q, uid %q, schemaVersion %d", f, d.Title, d.UID, d.SchemaVersion)
		}
		vars := map[string]string{}
		for _, v := range d.Templating.List {
			vars[v.Name] = v.Type
			if v.Type == "datasource" && v.Query != "prometheus" {
				t.Errorf("%s: the data source variable %s is of %v; want prometheus", f, v.Name, v.Query)
			}
		}
		if vars["datasource"] != "datasource" {
			t.Errorf("%s: no datasource variable", f)
		}
		ids := map[int]string{}
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				if prev, ok := ids[p.ID]; ok || p.ID <= 0 {
					t.Errorf("%s: panel %q has id %d (%q has it too)", f, p.Title, p.ID, prev)
				}
				ids[p.ID] = p.Title
				if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
					t.Errorf("%s: panel %q: gridPos %+v", f, p.Title, p.GridPos)
				}
				walk(p.Panels)
				if p.Type == "row" {
					continue
				}
				if p.Title == "" || len(p.Targets) == 0 {
					t.Errorf("%s: panel %d %q has no title or no targets", f, p.ID, p.Title)
				}
				for _, tg := range p.Targets {
					for _, ds := range []*datasourceRef{p.Datasource, tg.Datasource} {
						if ds == nil || ds.Type != "prometheus" || ds.UID != "${datasource}" {
							t.Errorf("%s: panel %q, target %s: data source %+v; want prometheus ${datasource}", f, p.Title, tg.RefID, ds)
						}
					}
				}
			}
		}
		walk(d.Panels)
		queries, err := dashboardQueries(d)
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for where, q := range queries {
			for _, m := range grafanaVar.FindAllStringSubmatch(q, -1) {
				name := m[1] + m[2] + m[3]
				if _, ok := vars[name]; !ok && !strings.HasPrefix(name, "__") {
					t.Errorf("%s: %s uses $%s, which the dashboard does not define", f, where, name)
				}
			}
			if _, err := promqlMetrics(expandVariables(q)); err != nil {
				t.Errorf("%s: %s: %v\n\t%s", f, where, err, q)
			}
		}
	}
}
