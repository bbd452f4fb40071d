package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The tests of this file run the benchmark on Apache Kafka, and only when
// SLUICE_TEST_BROKER=apache (they need Java and Maven, and take a minute
// or more). Each points TMPDIR at a directory of its own, which the
// broker's data and so its Java processes' command lines are under, and
// checks that once the benchmark returned no process under it is left,
// nor the broker's data.

func apacheOnly(t *testing.T) {
	t.Helper()
	kind, err := kafkatest.KindFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if kind != kafkatest.Apache {
		t.Skipf("runs on Apache Kafka only (%s=%s)", kafkatest.EnvBroker, kafkatest.Apache)
	}
}

// ownTemp points TMPDIR at a new directory and returns it.
func ownTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

// processesUnder returns "pid: command line" of every process whose
// command line mentions dir.
func processesUnder(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}

func checkNoneLeft(t *testing.T, dir string) {
	t.Helper()
	if left := processesUnder(dir); len(left) > 0 {
		t.Errorf("processes of the benchmark's broker outlived it:\n%s", strings.Join(left, "\n"))
	}
	if data, _ := filepath.Glob(filepath.Join(dir, "sluice-kafka-*")); len(data) > 0 {
		t.Errorf("the broker's data outlived the benchmark: %q", data)
	}
}

// TestSmokeApache is TestSmoke on Apache Kafka: raw loops, Sluice and
// consume → produce on both clients, and the slow section.
func TestSmokeApache(t *testing.T) {
	apacheOnly(t)
	tmp := ownTemp(t)
	o := options{
		records: 20_000, partitions: 8, value: 100, runs: 1, timeout: 2 * time.Minute,
		broker: kafkatest.Apache, noMemory: true,
		cases: []string{"raw-confluent", "sluice-confluent-graph", "raw-franz", "sluice-franz-each", "k2k-sluice-confluent", "k2k-raw-franz"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := bench(ctx, o, &out)
	checkNoneLeft(t, tmp)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	report := out.String()
	if !strings.Contains(report, "Broker: Apache Kafka "+kafkatest.ApacheKafkaVersion) {
		t.Errorf("the report does not name Apache Kafka as its broker:\n%s", report)
	}
	checkRowsEnd(t, report, oneRunVerified, caseRows(o.cases)...)
	checkRowsEnd(t, report, sectionRunVerified, caseRows(slowCases)...)
}

// cancelOn is a writer that cancels when a line containing its mark is
// written.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	mark   string
	cancel func()
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(p, []byte(c.mark)) {
		c.cancel()
	}
	return c.buf.Write(p)
}

// stoppableApacheRun skips the test unless it may run Apache Kafka, and
// returns a temporary directory of the test's own (tmp, for
// checkNoneLeft), the options of a one-run raw-franz benchmark on Apache
// Kafka, and a context (stop) the test cancels with stopped to stop the
// benchmark as Ctrl-C does; stop ends by itself after 4 minutes.
func stoppableApacheRun(t *testing.T) (tmp string, o options, stop context.Context, stopped context.CancelFunc) {
	t.Helper()
	apacheOnly(t)
	tmp = ownTemp(t)
	o = options{records: 1000, partitions: 4, value: 100, runs: 1, timeout: time.Minute,
		broker: kafkatest.Apache, noMemory: true, noSlow: true, cases: []string{"raw-franz"}}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	stop, stopped = context.WithCancel(ctx)
	t.Cleanup(stopped)
	return tmp, o, stop, stopped
}

// TestApacheStopsWithTheBenchmark stops the benchmark (as Ctrl-C does)
// once the broker is filled and ready: bench returns, and Apache Kafka's
// processes are gone.
func TestApacheStopsWithTheBenchmark(t *testing.T) {
	tmp, o, stop, stopped := stoppableApacheRun(t)
	w := &cancelOn{mark: "bench: broker ready", cancel: stopped}
	err := bench(stop, o, w)
	checkNoneLeft(t, tmp)
	if err == nil || !strings.Contains(err.Error(), "stopped: context canceled") {
		t.Fatalf("bench = %v, want it stopped by the cancel\n%s", err, w.buf.String())
	}
}

// TestApacheStopsWhileStarting stops the benchmark while Apache Kafka
// starts: once a Java process of it runs, before it is ready.
func TestApacheStopsWhileStarting(t *testing.T) {
	tmp, o, stop, stopped := stoppableApacheRun(t)
	started := make(chan struct{})
	go func() {
		defer stopped()
		tick := time.NewTicker(20 * time.Millisecond) // polls processes that run on their own
		defer tick.Stop()
		for {
			for _, p := range processesUnder(tmp) {
				if strings.Contains(p, "kafka.Kafka") {
					close(started)
					return
				}
			}
			select {
			case <-stop.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var out bytes.Buffer
	err := bench(stop, o, &out)
	checkNoneLeft(t, tmp)
	select {
	case <-started:
	default:
		t.Fatalf("bench returned (%v) before a kafka.Kafka process ran\n%s", err, out.String())
	}
	if err == nil || !strings.Contains(err.Error(), "before it was ready") {
		t.Fatalf("bench = %v, want it stopped before the broker was ready\n%s", err, out.String())
	}
}
