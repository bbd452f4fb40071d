package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestLostEventsFromTheSourceLog(t *testing.T) {
	log := `time=2026-12-01T09:06:12.416Z level=WARN msg="[thrd:GroupCoordinator]: Timed out 1 in-flight" component=sluice/source
time=2026-12-01T09:06:12.432Z level=WARN msg="partitions lost" component=sluice/source group=chaos partitions="[{Topic:events Partition:1} {Topic:events Partition:14}]"
consumed 7568, produced 7537, dead-lettered 31 (96 msg/s)
time=2026-12-01T09:06:12.437Z level=INFO msg="sluice: partition lost" topic=events partition=6
`
	path := filepath.Join(t.TempDir(), "p0.3.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := (&proc{name: "p0.3", logPath: path}).lostEvents()
	if fmt.Sprint(got) != "[p0.3 lost [1 14] at 2026-12-01T09:06:12.432Z]" {
		t.Fatalf("lost events %v", got)
	}
}

func TestOffsetRangesMergesConsecutiveOffsets(t *testing.T) {
	got := offsetRanges(map[int32][]int64{3: {7}, 1: {4, 5, 6, 9, 11, 12}})
	if want := "partition 1: 4-6,9,11-12 (6); partition 3: 7 (1)"; got != want {
		t.Fatalf("offsetRanges = %q, want %q", got, want)
	}
}
