package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // a command failed (check-config found problems, serve could not start)
	exitUsage   = 2 // bad arguments, flags or environment variables
)

// errHelp reports that help was asked for (-h, --help): usage is printed
// and the status is 0.
var errHelp = errors.New("help requested")

// exitError is an error with an exit status; quiet ones have already
// been reported by the command.
type exitError struct {
	code  int
	err   error
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode returns the exit status for Run's error, and writes the error
// to stderr unless the command reported it.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.quiet {
			fmt.Fprintf(stderr, "admit: %v\n", ee.err)
		}
		if ee.code == exitUsage && !ee.quiet {
			fmt.Fprintln(stderr, "Run 'admit help' for usage.")
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "admit: %v\n", err)
	return exitFailure
}

// Run runs the admit command line: args are the arguments after the
// program's name, getenv reads the environment (os.Getenv), and the
// commands write to stdout and stderr. It returns when the command is
// done: for serve, when ctx ends (SIGTERM or SIGINT in main) and the
// server has shut down. SIGHUP is not seen by Run; main passes it to run,
// which reloads the policy on each.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return run(ctx, args, getenv, stdout, stderr, nil)
}

// run is Run with a channel of reload requests (SIGHUP).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, reload <-chan os.Signal) error {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if len(args) == 0 {
		printHelp(stderr)
		return &exitError{code: exitUsage, err: errors.New("no command"), quiet: true}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, getenv, stdout, stderr, reload)
	case "check-config":
		return checkConfig(rest, getenv, stdout, stderr)
	case "simulate":
		return simulate(ctx, rest, getenv, stdout, stderr)
	case "version":
		return version(rest, stdout)
	case "help", "-h", "-help", "--help":
		return help(rest, stdout)
	}
	return usageErrorf("unknown command %q", truncate(cmd, 64))
}

// commands builds each subcommand's flag set, for help.
var commands = []struct {
	name    string
	summary string
	build   func() *command
}{
	{"serve", "Run the rate-limit service (HTTP and gRPC APIs, Envoy's rate-limit service, gateway).", func() *command { c, _ := newServeCommand(); return c }},
	{"check-config", "Check policy files and report their problems as file:line:column: field: message.", func() *command { return newCheckCommand(&checkConfigFlags{}) }},
	{"simulate", "Play traffic against a policy on a simulated clock and report what it would do.", func() *command { return newSimulateCommand(&simulateFlags{}) }},
	{"version", "Print admit's version and the Go version it was built with.", nil},
	{"help", "Print this help, or a command's: admit help serve.", nil},
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `admit is a rate-limit service and its tools.

Usage: admit <command> [flags] [arguments]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'admit help <command>' for a command's flags; every flag can also be
set by an environment variable, ADMIT_<FLAG> (--http-addr: ADMIT_HTTP_ADDR).
Start with: admit serve
`)
}

func help(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		printHelp(stdout)
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			if c.build == nil {
				fmt.Fprintf(stdout, "Usage: admit %s\n\n%s\n", c.name, c.summary)
				return nil
			}
			c.build().printUsage(stdout)
			return nil
		}
	}
	return usageErrorf("help: unknown command %q", truncate(args[0], 64))
}

// version prints the module's version and the Go version.
func version(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usageErrorf("version takes no arguments")
	}
	fmt.Fprintln(stdout, versionString())
	return nil
}

// versionString is "admit VERSION (MODULE) GO OS/ARCH", the version being
// the module's (v1.2.3 when installed with go install module@v1.2.3,
// "(devel)" in a build from a checkout) and, when the build has them, the
// VCS revision and whether the tree was modified.
func versionString() string {
	v, mod := "(unknown)", "github.com/admit-go/admit"
	var rev, dirty string
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			mod = bi.Main.Path
		}
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
	}
	out := fmt.Sprintf("admit %s (%s) %s %s/%s", v, mod, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out += " rev " + rev + dirty
	}
	return out
}

// truncate cuts s to n bytes for an error message.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
