package simreport

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/admit-go/admit/sim"
)

// WriteJSON writes the runs as one indented JSON object,
// {"Runs": [...]}, each run a sim.Result's fields (under their Go names)
// plus its "Label". Durations are in seconds, as numbers: Duration,
// Step, LatencyP50 and LatencyP99, like W and the latency series
// already are. A value that is not a number (NaN, an infinity) is null.
func WriteJSON(w io.Writer, runs []Run) error {
	if err := checkRuns(runs); err != nil {
		return err
	}
	doc := struct{ Runs []jsonRun }{}
	for i, run := range runs {
		doc.Runs = append(doc.Runs, jsonRunOf(run, i))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("simreport: writing JSON: %w", err)
	}
	return nil
}

// jsonRun is a Result as WriteJSON writes it: its fields, but for the
// durations and floats, which the fields here shadow (encoding/json
// writes the shallower of two fields of one name).
type jsonRun struct {
	Label string
	*sim.Result

	Duration, Step, LatencyP50, LatencyP99 number
	Amplification, Fairness                number
	QueueP50, QueueP99                     number
	L, Lambda, W, LittleError, Capacity    number
	Series                                 []jsonSeries
}

// jsonSeries is a Series whose points may be null.
type jsonSeries struct {
	Name, Client string
	Points       []number
}

// number is a float64 written as null when it is not a number.
type number float64

// MarshalJSON implements json.Marshaler.
func (n number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// jsonRunOf is the i-th run as WriteJSON writes it.
func jsonRunOf(run Run, i int) jsonRun {
	r := run.Result
	j := jsonRun{
		Label: run.label(i), Result: r,
		Duration: number(r.Duration.Seconds()), Step: number(r.Step.Seconds()),
		LatencyP50: number(r.LatencyP50.Seconds()), LatencyP99: number(r.LatencyP99.Seconds()),
		Amplification: number(r.Amplification), Fairness: number(r.Fairness),
		QueueP50: number(r.QueueP50), QueueP99: number(r.QueueP99),
		L: number(r.L), Lambda: number(r.Lambda), W: number(r.W), LittleError: number(r.LittleError),
		Capacity: number(r.Capacity),
		Series:   make([]jsonSeries, len(r.Series)),
	}
	for k, s := range r.Series {
		ps := make([]number, len(s.Points))
		for m, p := range s.Points {
			ps[m] = number(p)
		}
		j.Series[k] = jsonSeries{Name: s.Name, Client: s.Client, Points: ps}
	}
	return j
}

// WriteSeriesCSV writes the runs' time series as CSV in long form, one
// value a line, under the header run,time_seconds,series,client,value:
// time_seconds is the start of the value's bucket, client is empty for
// the backend's series, and a value that is not a number is empty.
// pandas reads it with read_csv and pivots it by series and client; a
// spreadsheet's pivot table does the same.
func WriteSeriesCSV(w io.Writer, runs []Run) error {
	if err := checkRuns(runs); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.Write([]string{"run", "time_seconds", "series", "client", "value"})
	for i, run := range runs {
		label, step := run.label(i), run.Result.Step.Seconds()
		for _, s := range run.Result.Series {
			for k, v := range s.Points {
				val := ""
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					val = strconv.FormatFloat(v, 'g', -1, 64)
				}
				t := strconv.FormatFloat(float64(k)*step, 'g', -1, 64)
				cw.Write([]string{label, t, s.Name, s.Client, val})
			}
		}
	}
	return flushCSV(cw)
}

// WriteTalliesCSV writes the runs' tallies as CSV, one a line, under the
// header run,kind,name and the counts (requests, attempts, admitted,
// denied, gave_up, succeeded, failed, ideal, over, under, bound,
// over_bound): kind is "total", "client", "tenant" (every tenant) or
// "rule".
func WriteTalliesCSV(w io.Writer, runs []Run) error {
	if err := checkRuns(runs); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	head := []string{"run", "kind", "name"}
	for _, c := range allColumns {
		head = append(head, c.csv)
	}
	cw.Write(head)
	for i, run := range runs {
		r := run.Result
		total := r.Total
		if total.Name == "" {
			total.Name = "total"
		}
		for _, group := range []struct {
			kind string
			ts   []sim.Tally
		}{{"total", []sim.Tally{total}}, {"client", r.Clients}, {"tenant", r.Tenants}, {"rule", r.Rules}} {
			for _, t := range group.ts {
				rec := []string{run.label(i), group.kind, t.Name}
				for _, c := range allColumns {
					rec = append(rec, strconv.FormatInt(c.get(t), 10))
				}
				cw.Write(rec)
			}
		}
	}
	return flushCSV(cw)
}

// WriteCSV writes series.csv (WriteSeriesCSV) and tallies.csv
// (WriteTalliesCSV) into dir, creating it if needed, and returns their
// paths.
func WriteCSV(dir string, runs []Run) ([]string, error) {
	if err := checkRuns(runs); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simreport: %w", err)
	}
	var paths []string
	for _, f := range []struct {
		name  string
		write func(io.Writer, []Run) error
	}{{"series.csv", WriteSeriesCSV}, {"tallies.csv", WriteTalliesCSV}} {
		p := filepath.Join(dir, f.name)
		if err := writeFile(p, func(w io.Writer) error { return f.write(w, runs) }); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeFile creates the file at path and has write fill it, reporting
// the first error of either and of closing it.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("simreport: %w", err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("simreport: %w", cerr)
	}
	return err
}

// flushCSV flushes cw and reports the first error it met.
func flushCSV(cw *csv.Writer) error {
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("simreport: writing CSV: %w", err)
	}
	return nil
}
