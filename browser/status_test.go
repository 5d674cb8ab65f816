package browser

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium, or skips (fails with
// ADMIT_REQUIRE_BROWSER=1) without one.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium on PATH: install Debian's chromium ('apt-get install chromium'; scripts/test does it as root) to run the browser tests"
	if os.Getenv("ADMIT_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + " (ADMIT_REQUIRE_BROWSER=1)")
	}
	t.Skip(msg)
	return ""
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serve builds admit and runs `admit serve` with the built-in policy and
// the extra arguments, the API on one address and the admin listener on
// another; it returns both and the process.
func serve(t *testing.T, args ...string) (api, admin string, cmd *exec.Cmd) {
	bin := filepath.Join(t.TempDir(), "admit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/admit")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	api, admin = freePort(t), freePort(t)
	cmd = exec.Command(bin, append([]string{"serve", "--http-addr", api, "--admin-addr", admin, "--grpc-addr", "off"}, args...)...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("admit serve's output:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; {
		if res, err := http.Get("http://" + admin + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return api, admin, cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("admit serve did not become ready in 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check sends n checks of one descriptor entry to the API.
func check(t *testing.T, api, key, value string, n int) {
	post(t, api, "/v1/check", key, value, n)
}

// post sends n requests of one descriptor entry to path of the API.
func post(t *testing.T, api, path, key, value string, n int) {
	body := fmt.Sprintf(`{"domain":"api","descriptors":[{"entries":[{"key":%q,"value":%q}]}]}`, key, value)
	for range n {
		res, err := http.Post("http://"+api+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("%s: %s", path, res.Status)
		}
	}
}

// evil is a key that would run if the page wrote it as HTML.
const evil = `<script>pwned=1</script><img src=x onerror=pwned=2>`

func TestMain(m *testing.M) { redistest.Main(m) }

// TestStatusPage runs admit serve on a Redis of its own, as a fleet's
// instance would (its rules kept there), and checks the status page in
// Chromium: the rules, their limits (quotas' too), the slots this
// instance holds of a cap kept in Redis, a denied key shown as text that
// would run as HTML, its count moving, and the page telling when the
// admin port closes. It saves a screenshot (ADMIT_SCREENSHOT names the
// file: docs/status.png is one).
func TestStatusPage(t *testing.T) {
	exe := chromium(t)
	rs := redistest.NewStandalone(t)
	api, admin, cmd := serve(t, "--redis", "redis://"+rs.Addr())

	// The page is the admin listener's only.
	if res, err := http.Get("http://" + api + "/status"); err != nil || res.StatusCode != 404 {
		t.Fatalf("/status on the API listener: %v %v, want 404", res, err)
	}

	check(t, api, "user", evil, 60) // 40 admitted (burst), then denied
	check(t, api, "user", "alice", 10)
	check(t, api, "generic_key", "demo", 8)
	check(t, api, "tenant", "acme", 30)
	post(t, api, "/v1/acquire", "generic_key", "global", 3) // three leases held of a cap kept in Redis

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	text := func(sel string) string {
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	poll := func(what, expr string) {
		if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+admin+"/status")); err != nil {
		t.Fatal(err)
	}
	poll("the page never showed the denied key", `document.querySelector("#keys tbody").textContent.includes("pwned=1")`)
	keys, rules := text("#keys tbody"), text("#rules tbody")
	if !strings.Contains(keys, evil) {
		t.Errorf("the denied key is not shown as text: %q", keys)
	}
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[any](`window.pwned === undefined ? null : window.pwned`))
	if err != nil || pwned != nil {
		t.Fatalf("the key ran as HTML: window.pwned = %v (%v)", pwned, err)
	}
	if !strings.Contains(rules, "per-user") || !strings.Contains(rules, "20/s burst 40") {
		t.Errorf("the rule is not shown: %q", rules)
	}
	if !strings.Contains(rules, "per-tenant/pro/quota") || !strings.Contains(rules, "1000000/day") {
		t.Errorf("a quota's limit is not shown: %q", rules)
	}
	poll("the slots held through this instance are not shown", `(() => { const r = [...document.querySelectorAll("#rules tbody tr")].find(r => r.cells[0].textContent === "global"); return r && r.cells[6].textContent === "3 this instance's" })()`)
	// The rules' figures count whole seconds: the denials show once the
	// second they fell in is over (the key, at once).
	poll("per-user's denied share stayed 0.0%", `(() => { const r = [...document.querySelectorAll("#rules tbody tr")].find(r => r.cells[0].textContent === "per-user"); return r && r.cells[4].textContent !== "0.0%" })()`)

	// More denials: the key's count and the rule's counters move.
	first := denials(t, keys)
	check(t, api, "user", evil, 60) // the burst is back by now: 40 admitted, then denied
	poll(fmt.Sprintf("the key's count did not move from %d", first), fmt.Sprintf(
		`(() => { const m = document.querySelector("#keys tbody td:nth-child(3)"); return m && Number(m.textContent.replace(/,/g, "")) > %d })()`, first))

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("ADMIT_SCREENSHOT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "status.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))

	// The admin port closes: the page says so and keeps what it showed.
	_ = cmd.Process.Kill()
	poll("the page did not notice the closed port", `document.querySelector("#live").textContent.includes("cannot reach")`)
	if keys := text("#keys tbody"); !strings.Contains(keys, evil) {
		t.Errorf("the page lost what it showed: %q", keys)
	}
	t.Logf("after the port closed: %s", text("#live"))
}

// denials reads the count of the first denied key from the table's text.
func denials(t *testing.T, keys string) int {
	m := regexp.MustCompile(`onerror=pwned=2>\s*([\d,]+)`).FindStringSubmatch(keys)
	if m == nil {
		t.Fatalf("no count in %q", keys)
	}
	n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	return n
}
