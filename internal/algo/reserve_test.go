package algo

import "testing"

func mustCompile(t *testing.T, rate, period, burst int64) Params {
	t.Helper()
	p, err := Compile(rate, period, burst)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBucketGiveBack(t *testing.T) {
	p := mustCompile(t, 1, 1e9, 5)        // T = 1s: Tn = 1e9, Td = 1
	debt := Bucket{Last: 100, Level: 8e9} // -3 tokens
	for _, c := range []struct {
		name      string
		n, used   int64
		floor     int64
		wantLevel int64
		wantOK    bool
	}{
		{"all back", 3, 0, 0, 5e9, true},
		{"later reservations relied on one", 3, 1e9, 0, 6e9, true},
		{"a negative used counts as 0: at most n", 3, -5e9, 0, 5e9, true},
		{"relied on all", 3, 3e9, 0, 8e9, false},
		{"relied on more", 3, 7e9, 0, 8e9, false},
		{"capped at the burst", 5, 0, 0, 3e9, true},
		{"a zero limit: up to zero tokens", 5, 0, 5e9, 5e9, true},
	} {
		got, ok := BucketGiveBack(debt, &p, c.n, c.used, p.Tn, p.Td, c.floor)
		if ok != c.wantOK || got != (Bucket{Last: 100, Level: c.wantLevel}) {
			t.Errorf("%s: %+v %v, want level %d %v", c.name, got, ok, c.wantLevel, c.wantOK)
		}
	}
	if got, _ := BucketGiveBack(Bucket{Level: 1e9}, &p, 3, 0, p.Tn, p.Td, 0); got.Level != 0 {
		t.Errorf("more than room: level %d, want 0 (full)", got.Level)
	}

	// Made under 3/s (T = 1e9/3 ns: Tn = 1e9, Td = 3), given back under
	// 7/2s (Tn = 2e9, Td = 7): 2 tokens less 100ns at 3/s = 2 - 3e-7
	// tokens = (2e9 - 300)/1e9; in units of 2e9: 4e9 - 600.
	q := mustCompile(t, 7, 2e9, 5)
	got, ok := BucketGiveBack(Bucket{Level: q.CapN + 4e9}, &q, 2, 100, 1e9, 3, 0)
	if !ok || got.Level != q.CapN+600 {
		t.Errorf("converted: %+v %v, want level CapN+600", got, ok)
	}
	// Rounded down: 1 token less 1ns at 1/3ns (1/3 token) is 2/3 token,
	// 2/3 of a unit of a limit counted in whole tokens: nothing.
	u := UnitParams(5)
	if got, ok := BucketGiveBack(Bucket{Level: 5}, &u, 1, 1, 3, 1, 0); !ok || got.Level != 5 {
		t.Errorf("rounded down: %+v %v, want level 5, ok", got, ok)
	}
	// A conversion that overflows gives back everything up to the floor.
	big := mustCompile(t, 1, 1<<60/(1<<20), 1<<20)
	if got, ok := BucketGiveBack(Bucket{Level: big.CapN + 7}, &big, 1<<30, 0, 1, 1, 0); !ok || got.Level != 0 {
		t.Errorf("overflow: %+v %v", got, ok)
	}
}

func TestBucketTokensCmp(t *testing.T) {
	p := mustCompile(t, 1, 1e9, 5)
	for _, c := range []struct {
		level, k int64
		want     int
	}{
		{0, 5, 0}, {0, 4, 1}, {0, 6, -1}, {5e9, 0, 0}, {5e9 + 1, 0, -1}, {5e9 - 1, 0, 1}, {4e9, 1, 0}, {9e18, 0, -1},
	} {
		if got := BucketTokensCmp(Bucket{Level: c.level}, &p, c.k); got != c.want {
			t.Errorf("level %d vs %d tokens: %d, want %d", c.level, c.k, got, c.want)
		}
	}
}

func TestBucketPeek(t *testing.T) {
	p := mustCompile(t, 1, 1e9, 2)
	b := Bucket{Last: 10e9, Level: 4e9} // -2 tokens at 10s
	for _, c := range []struct {
		now   int64
		allow bool
		retry int64
	}{
		{10e9, false, 2e9}, {11e9, false, 1e9}, {12e9 - 1, false, 1}, {12e9, true, 0}, {9e9, false, 3e9},
	} {
		r := BucketPeek(b, &p, c.now)
		if r.Allowed != c.allow || r.RetryAfter != c.retry || r.Remaining != 0 {
			t.Errorf("at %d: %+v, want allowed %v retry %d", c.now, r, c.allow, c.retry)
		}
	}
	if r := BucketPeek(Bucket{}, &p, 5); !r.Allowed || r.Remaining != 2 {
		t.Errorf("full: %+v", r)
	}
}

func TestBucketSettle(t *testing.T) {
	p := mustCompile(t, 1, 1e9, 2)
	b := Bucket{Last: 10e9, Level: 3e9}
	if got := BucketSettle(b, &p, 11e9); got != (Bucket{Last: 11e9, Level: 2e9}) {
		t.Errorf("forward: %+v", got)
	}
	if got := BucketSettle(b, &p, 9e9); got != b {
		t.Errorf("backward: %+v, want unchanged", got)
	}
	if got := TokenSpan(3, 1e9, 3); got != 1e9 {
		t.Errorf("TokenSpan(3, 1e9/3) = %d", got)
	}
}
