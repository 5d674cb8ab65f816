// Package browser holds admit serve's browser tests, in a module of its
// own so that chromedp never enters admit's go.mod: they run the status
// page (/status) in a real headless Chromium (Debian's chromium package),
// driven by github.com/chromedp/chromedp, against admit serve on a
// redis-server of their own (internal/redistest).
//
// Without a Chromium on PATH the tests skip with a message saying how to
// install one, unless ADMIT_REQUIRE_BROWSER=1 (set by scripts/test when it
// installed chromium), where they fail; without redis-server, likewise
// (ADMIT_REQUIRE_REDIS=1). ADMIT_SCREENSHOT=FILE saves the
// page's screenshot there (docs/status.png is made so).
package browser
