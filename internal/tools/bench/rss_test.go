package main

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestChildPeakRSSIsItsOwn runs one light case while this process holds
// 128 MiB: the child's peak RSS must not include the parent's. With
// getrusage's ru_maxrss it did (Go execs children with vfork semantics,
// and Linux carries the parent's high-water mark into the child).
func TestChildPeakRSSIsItsOwn(t *testing.T) {
	const ballastMiB = 128
	ballast := make([]byte, ballastMiB<<20)
	for i := range ballast {
		ballast[i] = byte(i) // touch every page: it counts in this process's RSS
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	l := layout{records: 2000, partitions: 2, valueSize: 100}
	b, err := startBroker(ctx, dir, kafkatest.Kfake, l.records, l.valueSize, []topicSpec{{name: inputTopic, l: l}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.stop()
	res, err := runProc(ctx, time.Minute, filepath.Join(dir, "run.log"), []string{"-case", "raw-franz",
		"-brokers", b.addr, "-group", "rss", "-records", "2000", "-partitions", "2", "-value", "100"})
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(ballast)
	if res.PeakRSSKiB <= 0 || res.PeakRSSKiB >= (ballastMiB-28)<<10 {
		t.Fatalf("the child reports a peak RSS of %d KiB; a raw franz loop over 2000 records needs far less than the parent's %d MiB", res.PeakRSSKiB, ballastMiB)
	}
}
