package fair_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/fair"
)

func ExampleRateLanes() {
	// 100 requests per second shared by two lanes: 60% reserved for
	// critical traffic, 40% for batch jobs. Either may borrow what the
	// other leaves idle, beyond the half of its burst each lane keeps.
	lanes, err := fair.NewRateLanes(fair.RateLanesConfig{
		Budget: admit.PerSecond(100),
		Lanes: []fair.Lane{
			{Name: "critical", Share: 60},
			{Name: "batch", Share: 40},
		},
		Borrowing: fair.BorrowAny,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// flood takes all the batch lane can get, every millisecond.
	flood := func(t time.Duration) (n int) {
		for {
			if d, _ := lanes.Allow(ctx, admit.Request{Key: "batch", N: 1, At: start.Add(t)}); !d.Allowed {
				return n
			}
			n++
		}
	}
	batch := 0
	for t := time.Duration(0); t < time.Second; t += time.Millisecond {
		batch += flood(t)
	}
	// Alone, batch gets its burst and rate (40 + 39 by 999ms), and what
	// critical does not keep (30 + 59).
	fmt.Println("batch alone, first second:", batch)

	// Then critical traffic arrives, at 200 per second, while the flood
	// goes on: it gets its reserve (30) at once, then its full share,
	// 60/s; batch is back to its own 40/s.
	crit, batch := 0, 0
	for t := time.Second; t < 3*time.Second; t += time.Millisecond {
		if t%(5*time.Millisecond) == 0 {
			if d, _ := lanes.Allow(ctx, admit.Request{Key: "critical", N: 1, At: start.Add(t)}); d.Allowed {
				crit++
			}
		}
		batch += flood(t)
	}
	fmt.Println("next 2 seconds: critical", crit, "batch", batch)
	// Output:
	// batch alone, first second: 168
	// next 2 seconds: critical 150 batch 80
}

func ExampleSlotLanes() {
	// 10 workers: 5 reserved for interactive requests, 3 for default, 2
	// for batch. Interactive requests may borrow the others' spare
	// workers; batch never borrows (BorrowUp, the default).
	lanes, _ := fair.NewSlotLanes(fair.SlotLanesConfig{
		Max: 10,
		Lanes: []fair.Lane{
			{Name: "interactive", Share: 5},
			{Name: "default", Share: 3},
			{Name: "batch", Share: 2},
		},
	})
	ctx := context.Background()
	var held []fair.Permit
	take := func(lane string) (n int) {
		for {
			p, d, _ := lanes.TryAcquire(ctx, lane, 1)
			if !d.Allowed {
				return n
			}
			held = append(held, p)
			n++
		}
	}
	fmt.Println("batch:", take("batch"))
	fmt.Println("interactive:", take("interactive"))
	fmt.Println("default:", take("default"))
	for _, st := range lanes.Stats() {
		fmt.Printf("%s: used %d, lent %d, borrowed %d\n", st.Name, st.Used, st.Lent, st.Borrowed)
	}
	for _, p := range held {
		p.Release()
	}
	// Output:
	// batch: 2
	// interactive: 6
	// default: 2
	// interactive: used 5, lent 0, borrowed 1
	// default: used 2, lent 1, borrowed 0
	// batch: used 2, lent 0, borrowed 0
}

func ExampleQueue() {
	// One slot, and two tenants waiting for it: "gold" weighs 3, "free"
	// 1. However many requests each one queues, gold gets three slots
	// for each one free gets.
	q, _ := fair.NewQueue(fair.QueueConfig{
		Max: 1,
		Weight: func(tenant string) float64 {
			if tenant == "gold" {
				return 3
			}
			return 1
		},
	})
	ctx := context.Background()
	busy, _, _ := q.TryAcquire(ctx, "someone", 1)

	served := make(chan string)
	enqueue := func(tenant string) {
		n := q.Stats().Waiting
		go func() {
			p, _, _ := q.Acquire(ctx, tenant, 1)
			served <- tenant
			p.Release()
		}()
		for q.Stats().Waiting == n { // until it waits
			runtime.Gosched()
		}
	}
	for range 4 {
		enqueue("free") // free queues first
	}
	for range 4 {
		enqueue("gold")
	}
	busy.Release()
	for range 8 {
		fmt.Print(<-served, " ")
	}
	fmt.Println()
	// Output:
	// gold gold free gold gold free free free
}

func ExampleShare() {
	// 100 requests per second shared by the tenants of an API, weighted:
	// acme pays for three times the default, globex for twice.
	weights := map[string]int64{"acme": 3, "globex": 2}
	share, err := fair.NewShare(fair.ShareConfig{
		Budget: admit.PerSecond(100),
		Weight: func(tenant string) int64 { return max(weights[tenant], 1) },
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// count counts the events admitted to each tenant from a second after
	// from until to.
	count := func(tenants []string, from, to time.Duration) map[string]int {
		got := map[string]int{}
		for t := from; t < to; t += time.Millisecond {
			// Every tenant asks every millisecond: ten times the budget
			// and more.
			for _, tenant := range tenants {
				if d, _ := share.Allow(ctx, admit.Request{Key: tenant, N: 1, At: start.Add(t)}); d.Allowed && t >= from+time.Second {
					got[tenant]++
				}
			}
		}
		return got
	}
	fmt.Println("three busy:", count([]string{"acme", "globex", "initech"}, 0, 11*time.Second))
	// initech goes idle: its share goes to the other two.
	fmt.Println("two busy:  ", count([]string{"acme", "globex"}, 11*time.Second, 21*time.Second))
	// Output:
	// three busy: map[acme:500 globex:333 initech:167]
	// two busy:   map[acme:540 globex:360]
}
