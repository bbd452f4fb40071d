package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// -cpuprofile and -trace write one file per run, named after its section,
// case, partitions and round: a CPU profile and an execution trace.
func TestProfileAndTraceFiles(t *testing.T) {
	dir := t.TempDir()
	o := options{
		records: 2_000, partitions: 8, value: 100, runs: 1, timeout: time.Minute,
		noMemory: true, noSlow: true, cases: []string{"raw-franz"},
		cpuprofile: filepath.Join(dir, "cpu"), trace: filepath.Join(dir, "trace"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := bench(ctx, o, &out); err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	for _, c := range []struct{ path, head string }{
		{filepath.Join(dir, "cpu", "speed-raw-franz-p8-1.pprof"), "\x1f\x8b"}, // gzipped protobuf
		{filepath.Join(dir, "trace", "speed-raw-franz-p8-1.trace"), "go 1."},
	} {
		b, err := os.ReadFile(c.path)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if !bytes.HasPrefix(b, []byte(c.head)) {
			t.Errorf("%s starts with %q, want %q", c.path, b[:min(len(b), 8)], c.head)
		}
	}
}
