// Package simreport shows the results of admit simulate (sim.Result) to
// people and to other tools: charts as PNG and SVG (gonum.org/v1/plot),
// one self-contained HTML report, JSON and CSV, a terminal summary, and a
// progress bar for long runs.
//
// Which one to use:
//   - Summary for the terminal, after a run; Progress during it.
//   - WriteHTML for a person: warnings first, headline figures, charts and
//     tables, in one file that needs nothing else to open.
//   - WriteCharts (or Charts and Chart.PNG/SVG) for pictures in docs.
//   - WriteJSON for programs, WriteCSV for spreadsheets and pandas.
//
// Several results of one traffic (through different algorithms, or with
// and without jitter) are Runs, compared by CompareChart, CompareBars and
// RetryChart. The package is internal: the command is its only user, and
// its surface may change with the command's output.
package simreport
