package main

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// A kind turns a pointer to a serveConfig field into the value that sets
// it from text. It asserts the field's type: a row whose kind does not
// fit its field fails every test that builds the table's values.
type kind func(field any) value

// value sets a field from the text of a flag's argument, a variable or
// a scalar of the settings file, checking it; String formats the field
// as a flag would take it (the defaults of the help and the docs).
type value interface {
	Set(s string) error
	String() string
}

// listValue is a value of several items: a flag repeated, a list in the
// file, a variable holding them separated (split). A source that gives
// the setting replaces the items of the sources below it (reset).
type listValue interface {
	value
	reset()
	split(s string) []string
}

// text is a string taken as it is.
func text() kind { return func(p any) value { return textValue{p.(*string)} } }

type textValue struct{ p *string }

func (v textValue) Set(s string) error { *v.p = s; return nil }
func (v textValue) String() string     { return *v.p }

// addr is a listener's address, whose empty value is the server's "off".
func addr() kind { return func(p any) value { return addrValue{p.(*string)} } }

type addrValue struct{ p *string }

func (v addrValue) Set(s string) error {
	if s == "" {
		s = "off"
	}
	*v.p = s
	return nil
}

func (v addrValue) String() string {
	if *v.p == "off" {
		return ""
	}
	return *v.p
}

// choice is one of a few words, in any case.
func choice(choices ...string) kind {
	return func(p any) value { return choiceValue{p.(*string), choices} }
}

type choiceValue struct {
	p       *string
	choices []string
}

func (v choiceValue) Set(s string) error {
	w := strings.ToLower(strings.TrimSpace(s))
	for _, c := range v.choices {
		if w == c {
			*v.p = w
			return nil
		}
	}
	return fmt.Errorf("%q: want one of %s", truncate(s, 32), strings.Join(v.choices, ", "))
}

func (v choiceValue) String() string { return *v.p }

// boolean is true or false (strconv.ParseBool); a flag alone is true.
func boolean() kind { return func(p any) value { return boolValue{p.(*bool)} } }

type boolValue struct{ p *bool }

func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q: want true or false", truncate(s, 32))
	}
	*v.p = b
	return nil
}

func (v boolValue) String() string   { return strconv.FormatBool(*v.p) }
func (v boolValue) IsBoolFlag() bool { return true }

// fraction is a number from 0 to 1 or a percentage ("0.1", "10%"), whose
// 0 is the server's negative (off).
func fraction() kind { return func(p any) value { return fractionValue{p.(*float64)} } }

type fractionValue struct{ p *float64 }

func (v fractionValue) Set(s string) error {
	t, scale := strings.TrimSpace(s), 1.0
	if rest, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(rest), 100
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%q is not a fraction (want 0.1 or 10%%)", truncate(s, 32))
	}
	if f /= scale; f < 0 || f > 1 {
		return fmt.Errorf("%q: want 0 to 1, or 0%% to 100%%", truncate(s, 32))
	}
	if f == 0 {
		f = -1
	}
	*v.p = f
	return nil
}

func (v fractionValue) String() string {
	if *v.p <= 0 {
		return "0"
	}
	return strconv.FormatFloat(*v.p*100, 'f', -1, 64) + "%"
}

// What a duration's 0 means.
const (
	positive = iota // nothing: a duration must be positive
	zeroOff         // none (no timeout, never): the server's negative
)

// duration is a Go duration ("250ms", "2m"), never negative.
func duration(zero int) kind {
	return func(p any) value { return durationValue{p.(*time.Duration), zero} }
}

type durationValue struct {
	p    *time.Duration
	zero int
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a duration (want 250ms, 10s, 2m, 1h)", truncate(s, 32))
	case d < 0:
		return fmt.Errorf("negative duration %v", d)
	case d == 0 && v.zero == positive:
		return errors.New("want a positive duration")
	case d == 0:
		d = -1
	}
	*v.p = d
	return nil
}

func (v durationValue) String() string {
	if *v.p < 0 {
		return "0"
	}
	return formatDuration(*v.p)
}

// formatDuration writes d as time.Duration does, without its zero
// minutes and seconds: 24h, 1m, 90s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// size is a size in bytes (parseSize) from min to max.
func size(min, max int64) kind {
	return func(p any) value {
		switch p := p.(type) {
		case *int64:
			return sizeValue{func() int64 { return *p }, func(n int64) { *p = n }, min, max}
		default:
			q := p.(*int)
			return sizeValue{func() int64 { return int64(*q) }, func(n int64) { *q = int(n) }, min, max}
		}
	}
}

type sizeValue struct {
	get      func() int64
	put      func(int64)
	min, max int64
}

func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n < v.min || n > v.max {
		return fmt.Errorf("%d: want %s to %s", n, sizeWords(v.min), sizeWords(v.max))
	}
	v.put(n)
	return nil
}

func (v sizeValue) String() string { return formatSize(v.get()) }

func sizeWords(n int64) string {
	switch n {
	case 1:
		return "1 byte"
	case 1<<31 - 1:
		return "2GiB-1"
	}
	return formatSize(n)
}

// list is items separated by sep in a variable, each checked.
func list(sep string, check func(string) error) kind {
	return func(p any) value { return stringsValue{p.(*[]string), sep, check} }
}

type stringsValue struct {
	p     *[]string
	sep   string
	check func(string) error
}

func (v stringsValue) Set(s string) error {
	if s == "" {
		return errors.New("empty value")
	}
	if v.check != nil {
		if err := v.check(s); err != nil {
			return err
		}
	}
	*v.p = append(*v.p, s)
	return nil
}

func (v stringsValue) String() string { return strings.Join(*v.p, v.sep) }
func (v stringsValue) reset()         { *v.p = nil }

func (v stringsValue) split(s string) []string {
	var items []string
	for _, item := range strings.Split(s, v.sep) {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// prefixes is IP prefixes or addresses, comma-separated in a flag's
// argument as in a variable.
func prefixes() kind { return func(p any) value { return prefixesValue{p.(*[]netip.Prefix)} } }

type prefixesValue struct{ p *[]netip.Prefix }

func (v prefixesValue) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		pf, err := parsePrefix(item)
		if err != nil {
			return err
		}
		*v.p = append(*v.p, pf)
	}
	return nil
}

func (v prefixesValue) String() string {
	s := make([]string, len(*v.p))
	for i, p := range *v.p {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (v prefixesValue) reset()                  { *v.p = nil }
func (v prefixesValue) split(s string) []string { return []string{s} }
