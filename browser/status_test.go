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

// serve builds admit and runs `admit serve` with the built-in policy, the
// API on one address and the admin listener on another; it returns both
// and the process.
func serve(t *testing.T) (api, admin string, cmd *exec.Cmd) {
	bin := filepath.Join(t.TempDir(), "admit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/admit")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	api, admin = freePort(t), freePort(t)
	cmd = exec.Command(bin, "serve", "--http-addr", api, "--admin-addr", admin, "--grpc-addr", "off")
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
	body := fmt.Sprintf(`{"domain":"api","descriptors":[{"entries":[{"key":%q,"value":%q}]}]}`, key, value)
	for range n {
		res, err := http.Post("http://"+api+"/v1/check", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
}

// evil is a key that would run if the page wrote it as HTML.
const evil = `<script>pwned=1</script><img src=x onerror=pwned=2>`

func TestStatusPage(t *testing.T) {
	exe := chromium(t)
	api, admin, cmd := serve(t)

	// The page is the admin listener's only.
	if res, err := http.Get("http://" + api + "/status"); err != nil || res.StatusCode != 404 {
		t.Fatalf("/status on the API listener: %v %v, want 404", res, err)
	}

	check(t, api, "user", evil, 60) // 40 admitted (burst), then denied
	check(t, api, "user", "alice", 10)
	check(t, api, "generic_key", "demo", 8)
	check(t, api, "tenant", "acme", 30)

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
	share, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#rules tbody tr")].find(r => r.cells[0].textContent === "per-user").cells[4].textContent`))
	if err != nil || share == "0.0%" {
		t.Errorf("per-user's denied share: %q (%v)", share, err)
	}

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
