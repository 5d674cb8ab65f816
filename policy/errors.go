package policy

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/admit-go/admit"
)

// Errors returned by this package, wrapped with %w where there is more to
// say: test them with errors.Is. Besides these, a check on an Engine after
// Close is an error wrapping admit.ErrClosed ("policy: engine closed"),
// and a request refused for want of room (one inline limit too many, see
// Config.MaxOverrides; one key too many for a rule's adaptive limit or
// lanes, see Config.MaxKeys) one wrapping admit.ErrTooManyKeys.
var (
	// ErrInvalidPolicy reports a policy that cannot be loaded or run: bad
	// YAML, a field of the wrong type or outside its domain, or a
	// contradiction between rules. Loaders and Validate return it as an
	// Errors value listing every problem found.
	ErrInvalidPolicy = errors.New("policy: invalid policy")

	// ErrInvalidRequest reports a request the engine cannot decide: a
	// negative cost, or a descriptor without entries.
	ErrInvalidRequest = errors.New("policy: invalid request")

	// ErrNoStore reports a rule (or a domain's inline limits, or a
	// Fallback failure policy) kept in a store the engine was not given
	// (see Config.Backends).
	ErrNoStore = errors.New("policy: no such store")

	// ErrStoreFailed is the Err of a Status one of whose limits is kept in
	// a store (Redis) that failed or did not answer in time, so that the
	// rule's failure policy decided instead (see Failure): the decision
	// is not the store's. Fail open's admissions are unlimited only while
	// the store fails, and must not be cached beyond the request.
	ErrStoreFailed = errors.New("policy: the store failed; the rule's failure policy decided")
)

var (
	// errClosed reports a check on an Engine after Close.
	errClosed = fmt.Errorf("%w: policy: engine closed", admit.ErrClosed)

	// errTooManyOverrides reports a request whose inline limit (see
	// Descriptor.Limit) would be the engine's MaxOverrides+1st distinct
	// one. The request is refused.
	errTooManyOverrides = fmt.Errorf("%w: policy: too many distinct inline limits", admit.ErrTooManyKeys)

	// errTooManyKeys reports a request whose key would be one more for a
	// rule's adaptive limit or lanes, which hold state for at most
	// Config.MaxKeys keys (10,000 by default), none of them idle. The
	// request is refused.
	errTooManyKeys = fmt.Errorf("%w: policy: too many keys for an adaptive limit", admit.ErrTooManyKeys)
)

// Pos is a position in a policy file: the file's name, and a line and a
// column counted from 1. The zero Pos is no position (a Policy built in
// Go rather than loaded).
type Pos struct {
	File   string
	Line   int
	Column int
}

// String returns "file:line:column", leaving out the parts that are
// unknown.
func (p Pos) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(p.Line))
		if p.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Column))
		}
	}
	return b.String()
}

// Error is one problem of a policy: where it is (the file, line and column
// of the offending YAML node, when the policy was loaded from a file), the
// path of the field ("rules[2].rate", "tier_tables.plans.default"), and
// what is wrong. Errors collects them.
//
// An Error of a loader always has File and Line. Column is 0 where it is
// not known: for YAML that does not parse, whose parser gives only a line
// (that of the construct at fault, such as a quoted string not closed, or
// else of the offending token), except for a byte that is not UTF-8 text
// or a character YAML does not allow, found at its column; and for a
// problem of the whole file (empty, or larger than 4 MiB), put on line 1.
type Error struct {
	File   string
	Line   int
	Column int
	Field  string
	Msg    string
	// Err is the error behind Msg, if there is one (such as ErrNoStore);
	// errors.Is and errors.As see it.
	Err error
}

// Error returns "file:line:column: field: msg", leaving out what is
// unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if p := (Pos{e.File, e.Line, e.Column}).String(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is reports whether target is ErrInvalidPolicy.
func (e *Error) Is(target error) bool { return target == ErrInvalidPolicy }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Errors is the list of problems found in a policy, in the order of their
// positions in the file (Validate's, for a Policy built in Go). A
// loader reports all the problems it finds, not only the first, up to
// 100 (and one more entry saying that it stopped). An Errors matches ErrInvalidPolicy under errors.Is, and
// errors.As finds each *Error in it.
type Errors []*Error

// maxErrors is the most problems a loader reports; one more entry says
// that it stopped there.
const maxErrors = 100

// Error returns the problems, one per line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Is reports whether target is ErrInvalidPolicy.
func (es Errors) Is(target error) bool { return target == ErrInvalidPolicy }

// Unwrap returns the problems, for errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// errList collects Errors, up to maxErrors.
type errList struct {
	errs Errors
	full bool
}

func (l *errList) add(p Pos, field, msg string) { l.addErr(p, field, msg, nil) }

func (l *errList) addErr(p Pos, field, msg string, err error) {
	if l.full {
		return
	}
	if len(l.errs) == maxErrors {
		l.errs = append(l.errs, &Error{File: p.File, Line: p.Line, Column: p.Column, Msg: "too many errors; stopping here"})
		l.full = true
		return
	}
	e := &Error{File: p.File, Line: p.Line, Column: p.Column, Field: field, Msg: msg, Err: err}
	for _, x := range l.errs {
		if *x == *e {
			return
		}
	}
	l.errs = append(l.errs, e)
}

func (l *errList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	return l.errs
}

// sort orders the errors by file position (stably), the note that the
// list stopped staying last.
func (l *errList) sort() {
	es := l.errs
	if l.full {
		es = es[:len(es)-1]
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}
