package simreport

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// The pace of Progress: a terminal's bar is redrawn at most every
// redrawEvery; elsewhere (a log, a pipe) a line is written at most every
// lineEvery, so a run shorter than that writes nothing.
const (
	redrawEvery = 100 * time.Millisecond
	lineEvery   = 10 * time.Second
	barWidth    = 30
)

// Progress shows how far a long run has gone, in simulated time. On a
// terminal it is a bar redrawn in place (carriage return) at most ten
// times a second; otherwise it writes a line at most every ten seconds
// of wall time, and nothing for a shorter run. Update is its callback
// (func(done, total time.Duration)); Finish ends its line. A Progress is
// not safe for concurrent use.
type Progress struct {
	w        io.Writer
	terminal bool
	now      func() time.Time // the wall clock, a parameter for tests

	start, last time.Time
	drawn       bool // something was written, and the line is open (terminal)
	wrote       bool // a line was written (not a terminal)
	finished    bool
	width       int // of the bar's line last drawn
}

// NewProgress returns a Progress writing to w, as a bar if isTerminal.
func NewProgress(w io.Writer, isTerminal bool) *Progress {
	return &Progress{w: w, terminal: isTerminal, now: time.Now}
}

// Update reports that done of total simulated time has been run. The
// first call starts the wall clock; a call with done at or past total
// draws the end and finishes. Calls after that do nothing; so does a
// total that is not positive.
func (p *Progress) Update(done, total time.Duration) {
	if p.finished || total <= 0 {
		return
	}
	now := p.now()
	if p.start.IsZero() {
		p.start, p.last = now, now
	}
	done = min(max(done, 0), total)
	end := done == total
	switch {
	case p.terminal && (end || !p.drawn || now.Sub(p.last) >= redrawEvery):
		line := bar(done, total)
		// Spaces cover what is left of a longer line drawn before.
		fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(0, p.width-len(line))))
		p.drawn, p.last, p.width = true, now, len(line)
	case !p.terminal && (now.Sub(p.last) >= lineEvery || (end && p.wrote)):
		fmt.Fprintf(p.w, "simulated %s of %s (%d%%) in %s\n", duration(done), duration(total),
			int(100*float64(done)/float64(total)), duration(now.Sub(p.start).Round(time.Second)))
		p.wrote, p.last = true, now
	}
	if end {
		p.Finish()
	}
}

// Finish ends the bar's line, if one was drawn, so that what is written
// next starts on a line of its own; Update does nothing after it. It may
// be called any number of times.
func (p *Progress) Finish() {
	if p.terminal && p.drawn && !p.finished {
		fmt.Fprintln(p.w)
	}
	p.finished = true
}

// bar is the bar's line: [#####.....]  42%  25m12s of 1h0m0s.
func bar(done, total time.Duration) string {
	frac := float64(done) / float64(total)
	full := int(frac * barWidth)
	return fmt.Sprintf("[%s%s] %3d%%  %s of %s simulated", strings.Repeat("#", full),
		strings.Repeat(".", barWidth-full), int(frac*100), duration(done), duration(total))
}
