// Package consumebench is what the consume benchmarks of both Kafka
// backends share: a Window measuring wall time, CPU time and heap
// allocations and reporting them per message, and RunUntil, which runs a
// consumer until it consumed what a benchmark iteration wants.
package consumebench

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Window accumulates wall time, CPU time (of the whole process) and heap
// allocations between Start and Stop calls: one pair per measured stretch;
// Start and Stop may run on different goroutines, never at once. The zero
// Window is ready to use.
type Window struct {
	t0             time.Time
	cpu0, mallocs0 int64
	wall           time.Duration
	cpu, mallocs   int64
}

// Start opens a measured stretch.
func (w *Window) Start() {
	w.t0, w.cpu0, w.mallocs0 = time.Now(), cpuNanos(), mallocs()
}

// Stop closes the stretch Start opened, adding it to the window.
func (w *Window) Stop() {
	w.wall += time.Since(w.t0)
	w.cpu += cpuNanos() - w.cpu0
	w.mallocs += mallocs() - w.mallocs0
}

// Report reports to b the window's throughput over total messages
// (msg/s) and its CPU time and allocations per message (cpu-ns/msg,
// allocs/msg).
func (w *Window) Report(b *testing.B, total int) {
	b.ReportMetric(float64(total)/w.wall.Seconds(), "msg/s")
	b.ReportMetric(float64(w.cpu)/float64(total), "cpu-ns/msg")
	b.ReportMetric(float64(w.mallocs)/float64(total), "allocs/msg")
}

// cpuNanos is the process's user and system CPU time so far (zero if
// getrusage fails, which it does not on Linux).
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// mallocs is how many heap objects the process allocated so far.
func mallocs() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Mallocs)
}
