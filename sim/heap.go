package sim

// The run's events, in a binary heap by instant, then by the order they
// were scheduled in (so that a run is deterministic).

const (
	evArrival = iota // a client's next request
	evRetry          // a client's retry of a refused request
	evDone           // the backend is done with a request
)

type event struct {
	at      int64  // nanoseconds since the run's start
	seq     uint64 // order of scheduling, among events of one instant
	kind    uint8
	attempt uint16 // evRetry: the attempt it is, from 2
	rep     int32  // the client (index into run.reps)
	slot    int32  // evDone: the request's slot in the backend; evRetry: its replay line
}

type events struct {
	h   []event
	seq uint64
}

func (q *events) push(e event) {
	q.seq++
	e.seq = q.seq
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *events) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (q *events) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}
