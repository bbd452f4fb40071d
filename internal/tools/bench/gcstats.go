package main

import "runtime/metrics"

// gcStats is what the garbage collector cost the process so far: its
// completed cycles and the CPU time it used (runtime/metrics' estimate,
// which counts mark assists and the background workers).
type gcStats struct {
	cycles uint64
	cpuSec float64
}

// readGC reads gcStats from runtime/metrics.
func readGC() gcStats {
	s := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
	}
	metrics.Read(s)
	var g gcStats
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		g.cpuSec = s[1].Value.Float64()
	}
	return g
}
