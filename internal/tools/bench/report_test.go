package main

import (
	"errors"
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

func TestSummarizeComparesWithTheSameClientsRawLoop(t *testing.T) {
	l := layout{records: 1000, partitions: 2, valueSize: 40}
	mk := func(name string, window float64, err error) run {
		return run{name: name, l: l, res: Result{WindowSec: window, AssignSec: 2 * window, CPUTotal: 0.002, PeakRSSKiB: 2048}, err: err}
	}
	runs := []run{
		mk("raw-franz", 0.001, nil), mk("raw-franz", 0.002, nil), mk("raw-franz", 0.004, nil), // median 500k msg/s
		mk("sluice-franz-graph", 0.004, nil), mk("sluice-franz-graph", 0.0001, errors.New("gap")), // failed run left out
		mk("k2k-raw-confluent", 0.01, nil), mk("k2k-sluice-confluent", 0.0125, nil),
		mk("sluice-confluent-each", 0.001, nil), // no raw-confluent run: no ratio
		mk("sluice-confluent-valid", 0.002, nil), mk("sluice-confluent-dlq", 0.008, nil),
	}
	got := map[string]summary{}
	for _, s := range summarize(runs) {
		got[s.name] = s
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }
	if s := got["raw-franz"]; !near(s.rate, 500_000) || !near(s.ratio, 1) || s.verified != 3 {
		t.Errorf("raw-franz %+v, want 500000 msg/s, ratio 1, 3 verified", s)
	}
	if s := got["sluice-franz-graph"]; !near(s.rate, 250_000) || !near(s.ratio, 0.5) || s.verified != 1 || s.runs != 2 {
		t.Errorf("sluice-franz-graph %+v, want 250000 msg/s, ratio 0.5, 1 of 2 verified", s)
	}
	if s := got["sluice-franz-graph"]; !near(s.assignRate, 125_000) || !near(s.assignRatio, 0.5) {
		t.Errorf("sluice-franz-graph %+v, want 125000 msg/s from assignment, ratio 0.5", s)
	}
	if s := got["k2k-sluice-confluent"]; !near(s.ratio, 0.8) || s.baseline != "k2k-raw-confluent" {
		t.Errorf("k2k-sluice-confluent %+v, want ratio 0.8 against k2k-raw-confluent", s)
	}
	if s := got["sluice-confluent-each"]; s.ratio != 0 {
		t.Errorf("sluice-confluent-each ratio %v without its raw loop, want 0 (n/a)", s.ratio)
	}
	if s := got["sluice-confluent-dlq"]; !near(s.ratio, 0.25) || s.baseline != "sluice-confluent-valid" {
		t.Errorf("sluice-confluent-dlq %+v, want ratio 0.25 against sluice-confluent-valid", s)
	}
	if s := got["raw-franz"]; !near(s.cpu, 2) || !near(s.rss, 2) {
		t.Errorf("raw-franz CPU %v µs/record and RSS %v MiB, want 2 and 2", s.cpu, s.rss)
	}
}
