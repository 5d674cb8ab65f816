package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/admit-go/admit/internal/policyfmt"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
	"github.com/admit-go/admit/redisstore"
	"github.com/admit-go/admit/server"
	"github.com/redis/go-redis/v9"
)

type checkConfigFlags struct {
	config       listFlag
	format       choiceFlag
	mergeDomains bool
}

func newCheckCommand(f *checkConfigFlags) *command {
	c := newCommand("check-config", "[--format text|json] [--merge-domains] [FILE|DIR...]",
		`Check policy files, in admit's format or envoyproxy/ratelimit's, without serving
them: each file is parsed, the files are merged into one policy (as serve
merges them), and the engine that would enforce it is built (without
contacting Redis). The exit status is 0 if the policy is valid, 1 if it
has problems, each reported on stderr as

  file:line:column: field: message

and 2 for bad arguments. A directory stands for its *.yaml and *.yml files.
With no FILE, the files of --config (ADMIT_CONFIG) are checked, which is
what serve would load.`)
	f.config = listFlag{sep: ","}
	f.format = choiceFlag{value: "text", choices: []string{"text", "json"}}
	c.fs.Var(&f.config, "config", "a policy `FILE` or directory to check, as serve's --config (may repeat; the variable separates them with commas)")
	c.fs.Var(&f.format, "format", "`text`: problems on stderr, one per line; json: one report on stdout")
	c.fs.BoolVar(&f.mergeDomains, "merge-domains", false, "let several files define one domain, merged, as serve's --merge-domains")
	c.noEnv["format"] = true
	return c
}

// checkReport is check-config's JSON report.
type checkReport struct {
	OK       bool           `json:"ok"`
	Files    []checkFile    `json:"files"`
	Domains  []string       `json:"domains"`
	Rules    int            `json:"rules"`
	Problems []checkProblem `json:"problems"`
}

type checkFile struct {
	Path   string `json:"path"`
	Format string `json:"format,omitempty"`
}

type checkProblem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	Text    string `json:"text"`
}

func checkConfig(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var f checkConfigFlags
	c := newCheckCommand(&f)
	paths, err := c.parse(args, getenv)
	if errors.Is(err, errHelp) {
		c.printUsage(stdout)
		return nil
	}
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		paths = f.config.items
	}
	if len(paths) == 0 {
		return usageErrorf("check-config: no files (give FILE arguments, --config or ADMIT_CONFIG)")
	}
	rep := checkPaths(paths, f.mergeDomains)
	if f.format.value == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintln(stderr, p.Text)
		}
		if rep.OK {
			fmt.Fprintf(stdout, "ok: %s, %s (%s), %s\n", plural(len(rep.Files), "file"),
				plural(len(rep.Domains), "domain"), strings.Join(rep.Domains, ", "), plural(rep.Rules, "rule"))
		}
	}
	if !rep.OK {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s", plural(len(rep.Problems), "problem")), quiet: true}
	}
	return nil
}

// checkPaths checks the policy files paths stand for.
func checkPaths(paths []string, mergeDomains bool) *checkReport {
	rep := &checkReport{Files: []checkFile{}, Domains: []string{}, Problems: []checkProblem{}}
	files, err := server.PolicyFiles(paths...)
	if err != nil {
		rep.add(err)
		return rep
	}
	var ps []*policy.Policy
	for _, path := range files {
		cf := checkFile{Path: path}
		data, err := policy.ReadFile(path)
		if err != nil {
			rep.add(err)
			rep.Files = append(rep.Files, cf)
			continue
		}
		if format, err := policyfmt.Detect(data); err == nil {
			cf.Format = format.String()
		}
		rep.Files = append(rep.Files, cf)
		p, err := policy.Parse(path, data)
		if err != nil {
			rep.add(err)
			continue
		}
		ps = append(ps, p)
	}
	if len(rep.Problems) > 0 {
		return rep
	}
	merge := policy.Merge
	if mergeDomains {
		merge = policy.MergeDomains
	}
	p, err := merge(ps...)
	if err != nil {
		rep.add(err)
		return rep
	}
	// Build the engine, as serve would with --redis, on a Redis store that
	// is never contacted: that checks what only building the limiters can.
	// Its stores are serve's: local and redis; a rule naming another is
	// reported at its store field.
	client := redis.NewClient(&redis.Options{Addr: "check-config.invalid:6379"})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{})
	if err != nil {
		rep.add(err)
		return rep
	}
	defer store.Close()
	var cfg policy.Config
	cfg.Backends, cfg.DefaultStore = backends.Stores(store)
	e, err := policy.NewEngine(p, cfg)
	if err != nil {
		rep.add(err)
		return rep
	}
	_ = e.Close()
	for _, d := range p.Domains {
		rep.Domains = append(rep.Domains, d.Name)
		rep.Rules += len(d.Rules)
	}
	rep.OK = true
	return rep
}

// add records the problems of err: each policy.Error with its position,
// any other error as a message.
func (r *checkReport) add(err error) {
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case policy.Errors:
			for _, pe := range e {
				r.Problems = append(r.Problems, checkProblem{
					File: pe.File, Line: pe.Line, Column: pe.Column, Field: pe.Field, Message: pe.Msg, Text: pe.Error(),
				})
			}
			return
		case *policy.Error:
			r.Problems = append(r.Problems, checkProblem{
				File: e.File, Line: e.Line, Column: e.Column, Field: e.Field, Message: e.Msg, Text: e.Error(),
			})
			return
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
			return
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			r.Problems = append(r.Problems, checkProblem{File: pe.Path, Message: pe.Err.Error(), Text: pe.Path + ": " + pe.Err.Error()})
			return
		}
		r.Problems = append(r.Problems, checkProblem{Message: err.Error(), Text: err.Error()})
	}
	walk(err)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
