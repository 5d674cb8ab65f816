package compose_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

// store stands for a shared store, such as a redisstore.Limiter, that is
// up or down.
type store struct{ down bool }

func (s *store) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	if s.down {
		return admit.Decision{}, errors.New("dial tcp 10.0.0.7:6379: connect: connection refused")
	}
	return admit.Decision{Allowed: true, Limit: admit.PerSecond(100), Remaining: 99, Rule: "api"}, nil
}

// printer is an admit.Observer that prints the switches.
type printer struct{ admit.NopObserver }

func (printer) FallbackChanged(e admit.FallbackEvent) {
	fmt.Printf("  switch: limiter=%s active=%v reason=%v\n", e.Limiter, e.Active, e.Reason)
}

func Example() {
	clk := admittest.NewManualClock(admittest.Epoch)
	// 100/s per client, shared by 4 instances through the store; when the
	// store is down, each instance enforces its share, 25/s.
	local, err := keyed.LocalShare(keyed.Config{Options: admit.Options{Clock: clk}, Limit: admit.PerSecond(100)}, 4)
	if err != nil {
		panic(err)
	}
	redis := &store{}
	g, err := compose.NewGuard(redis, compose.GuardConfig{
		Options:   admit.Options{Name: "api", Clock: clk, Observer: printer{}},
		Policy:    compose.Breaker(compose.Fallback(local)),
		Threshold: 2,
	})
	if err != nil {
		panic(err)
	}
	check := func(what string) {
		d, err := g.Allow(context.Background(), admit.Request{Key: "client-1", N: 1})
		fmt.Printf("%-22s allowed=%v limit=%v remaining=%d rule=%s err=%v\n", what, d.Allowed, d.Limit, d.Remaining, d.Rule, err)
	}
	check("store up:")
	redis.down = true
	check("store down:")
	check("store down again:") // the second failure in a row opens the breaker
	check("breaker open:")     // decided locally, without asking the store
	clk.Advance(time.Second)
	redis.down = false
	check("probe:") // one request per second asks the store: it is back
	fmt.Printf("%+v\n", g.Stats())
	// Output:
	// store up:              allowed=true limit=100/s remaining=99 rule=api err=<nil>
	// store down:            allowed=true limit=25/s remaining=24 rule=api/fallback err=<nil>
	//   switch: limiter=api active=true reason=dial tcp 10.0.0.7:6379: connect: connection refused
	// store down again:      allowed=true limit=25/s remaining=23 rule=api/fallback err=<nil>
	// breaker open:          allowed=true limit=25/s remaining=22 rule=api/fallback err=<nil>
	//   switch: limiter=api active=false reason=<nil>
	// probe:                 allowed=true limit=100/s remaining=99 rule=api err=<nil>
	// {Failures:2 Timeouts:0 Canceled:0 Decided:3 Skipped:1 Probes:1 Switches:2 Active:false}
}

func ExampleGuardConfig_logger() {
	// Text logs without the time, so that the output is the same each run.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	// Sending SMS costs money: deny while the store cannot count them.
	g, err := compose.NewGuard(&store{down: true}, compose.GuardConfig{
		Options:   admit.Options{Name: "sms"},
		Policy:    compose.FailClosed,
		Threshold: 3,
		Logger:    logger,
	})
	if err != nil {
		panic(err)
	}
	for range 5 {
		d, err := g.Allow(context.Background(), admit.Request{Key: "+33612345678", N: 1})
		fmt.Printf("allowed=%v retry-after=%v rule=%s err=%v\n", d.Allowed, d.RetryAfter, d.Rule, err)
	}
	// Output:
	// allowed=false retry-after=1s rule=sms/fail-closed err=<nil>
	// allowed=false retry-after=1s rule=sms/fail-closed err=<nil>
	// level=WARN msg="admit: primary limiter failing; the failure policy decides" limiter=sms policy=fail-closed failures=3 err="dial tcp 10.0.0.7:6379: connect: connection refused"
	// allowed=false retry-after=1s rule=sms/fail-closed err=<nil>
	// allowed=false retry-after=1s rule=sms/fail-closed err=<nil>
	// allowed=false retry-after=1s rule=sms/fail-closed err=<nil>
}
