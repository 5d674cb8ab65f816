package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
)

// envPrefix is the prefix of the environment variables that stand for
// flags: --http-addr is ADMIT_HTTP_ADDR.
const envPrefix = "ADMIT_"

// envName returns the environment variable of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// command is a subcommand's flag set, whose flags have environment
// equivalents.
type command struct {
	name    string
	summary string
	usage   string // after "admit NAME"
	fs      *flag.FlagSet
	noEnv   map[string]bool // flags without an environment variable
	envOf   map[string]string
	// settings, if any, are the flags' table (serve's): the help lists
	// them from it.
	settings []setting
}

func newCommand(name, usage, summary string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &command{name: name, usage: usage, summary: summary, fs: fs, noEnv: map[string]bool{}, envOf: map[string]string{}}
}

// envSetter is a flag value set differently from the environment than
// from the command line (a list: the variable holds every item).
type envSetter interface {
	setEnv(s string) error
}

// parse applies the environment, then args (so a flag wins over its
// variable), and returns the positional arguments. An invalid value of a
// variable is an error naming the variable.
func (c *command) parse(args []string, getenv func(string) string) ([]string, error) {
	var err error
	c.fs.VisitAll(func(f *flag.Flag) {
		if err != nil || c.noEnv[f.Name] {
			return
		}
		name := envName(f.Name)
		c.envOf[f.Name] = name
		v := getenv(name)
		if v == "" {
			return
		}
		var e error
		if es, ok := f.Value.(envSetter); ok {
			e = es.setEnv(v)
		} else {
			e = f.Value.Set(v)
		}
		if e != nil {
			err = usageErrorf("environment variable %s: %v", name, e)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := c.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, usageErrorf("%s: %v", c.name, err)
	}
	return c.fs.Args(), nil
}

// printUsage writes the command's usage and flags, each with its default
// and environment variable.
func (c *command) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: admit %s %s\n\n%s\n", c.name, c.usage, c.summary)
	if c.settings != nil {
		printSettings(w, c.settings)
		return
	}
	var flags []*flag.Flag
	c.fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	if len(flags) == 0 {
		return
	}
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	fmt.Fprintf(w, "\nFlags (each also read from the environment variable named; a flag wins over its variable):\n")
	for _, f := range flags {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		if !c.noEnv[f.Name] {
			line += "  (" + envName(f.Name) + ")"
		}
		fmt.Fprintln(w, line)
		fmt.Fprintf(w, "        %s", strings.ReplaceAll(usage, "\n", "\n        "))
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" {
			fmt.Fprintf(w, " (default %s)", def)
		}
		fmt.Fprintln(w)
	}
}

// listFlag is a flag that may be given several times; its environment
// variable holds the items separated by sep. Items from the command line
// replace those from the environment.
type listFlag struct {
	items   []string
	sep     string
	fromEnv bool
	check   func(string) error
}

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.items, l.sep)
}

func (l *listFlag) Set(s string) error {
	if l.fromEnv {
		l.items, l.fromEnv = nil, false
	}
	return l.add(s)
}

func (l *listFlag) setEnv(s string) error {
	l.items = nil
	for _, item := range strings.Split(s, l.sep) {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if err := l.add(item); err != nil {
			return err
		}
	}
	l.fromEnv = true
	return nil
}

func (l *listFlag) add(s string) error {
	if s == "" {
		return errors.New("empty value")
	}
	if l.check != nil {
		if err := l.check(s); err != nil {
			return err
		}
	}
	l.items = append(l.items, s)
	return nil
}

// parsePrefix reads a CIDR prefix ("10.0.0.0/8", "2001:db8::/32") or an
// address (a prefix of its full length).
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR prefix", truncate(s, 64))
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR prefix", truncate(s, 64))
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// choiceFlag is a string flag taking one of a few values.
type choiceFlag struct {
	value   string
	choices []string
}

func (c *choiceFlag) String() string {
	if c == nil {
		return ""
	}
	return c.value
}

func (c *choiceFlag) Set(s string) error {
	v := strings.ToLower(strings.TrimSpace(s))
	for _, ch := range c.choices {
		if v == ch {
			c.value = v
			return nil
		}
	}
	return fmt.Errorf("%q: want one of %s", s, strings.Join(c.choices, ", "))
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1000}, {"mb", 1000_000}, {"gb", 1000_000_000},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

// parseSize reads "1048576", "1MiB", "512KiB", "64k", "2 MB".
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	if t == "" || len(t) > 19 || strings.TrimLeft(t, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a size (want bytes, or a number with KiB, MiB, GiB, kB, MB, GB)", truncate(s, 32))
	}
	var n int64
	for _, c := range t {
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, fmt.Errorf("%q is too large", truncate(s, 32))
		}
		n = n*10 + d
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q is too large", truncate(s, 32))
	}
	return n * mult, nil
}

func formatSize(n int64) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprint(n)
}
