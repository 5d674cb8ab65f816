package status

import (
	"strconv"
	"testing"
)

// BenchmarkSketchAdd: a denial of a key the sketch holds (its count goes
// up and sinks in the heap), and of a new key (it takes the least
// counted's place), the two paths of a denial on the status page.
func BenchmarkSketchAdd(b *testing.B) {
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = "tenant-" + strconv.Itoa(i)
	}
	b.Run("known", func(b *testing.B) {
		s := newSketch(256)
		for _, k := range keys[:256] {
			s.add("rule", k)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.add("rule", keys[i&255])
			i++
		}
	})
	b.Run("new", func(b *testing.B) {
		s := newSketch(256)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.add("rule", keys[i&4095])
			i++
		}
	})
}
