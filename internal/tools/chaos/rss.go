package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/procstatus"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The -rss mode measures the peak resident memory (VmHWM) of one consumer
// process for several partition counts under one in-flight byte budget:
// memory must stay within the budget plus a constant, whatever the number
// of partitions. For each partition count the chaos process starts a
// broker (-broker), fills a topic, and runs a
// child process (this same program, "rss-child") that consumes it through
// a pipeline whose only stage is slow, so the budget stays full; the child
// reports its own VmHWM from /proc/self/status once Run returned.

// rssSettings are the -rss knobs.
type rssSettings struct {
	partitions []int
	records    int           // records in the topic
	size       int           // value bytes per record
	budget     int64         // pipeline.WithMaxInFlightBytes
	consume    int           // records the child processes before it stops
	work       time.Duration // time the stage spends per record, one record at a time across partitions
	queueKiB   int           // librdkafka's queued.max.messages.kbytes; 0 keeps package source's (a 256th of the budget, at least 1 MiB)
}

const rssTopic = "rss"

func (r *rssSettings) register(fs *flag.FlagSet) {
	fs.Func("rss-partitions", "-rss: comma-separated partition counts (default 8,256)", func(v string) error {
		r.partitions = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return fmt.Errorf("%q is not a positive partition count", f)
			}
			r.partitions = append(r.partitions, n)
		}
		return nil
	})
	fs.IntVar(&r.records, "rss-records", 200_000, "-rss: records produced to the topic")
	fs.IntVar(&r.size, "rss-size", 1024, "-rss: value bytes per record")
	fs.Int64Var(&r.budget, "rss-budget", 16<<20, "-rss: the pipeline's in-flight byte budget (WithMaxInFlightBytes)")
	fs.IntVar(&r.consume, "rss-consume", 60_000, "-rss: records the consumer processes before it stops")
	fs.IntVar(&r.queueKiB, "rss-queue-kb", 0, "-rss: librdkafka's queued.max.messages.kbytes (its prefetch, outside the budget); 0 keeps package source's, a 256th of the budget (at least 1024)")
	fs.DurationVar(&r.work, "rss-work", 200*time.Microsecond, "-rss: time the slow stage spends per record (one record at a time in all)")
}

func (r rssSettings) validate() error {
	var errs []error
	for name, v := range map[string]int{"-rss-records": r.records, "-rss-size": r.size, "-rss-consume": r.consume} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s=%d: must be at least 1", name, v))
		}
	}
	if r.budget <= 0 {
		errs = append(errs, fmt.Errorf("-rss-budget=%d: must be positive", r.budget))
	}
	if r.queueKiB < 0 {
		errs = append(errs, fmt.Errorf("-rss-queue-kb=%d: must not be negative", r.queueKiB))
	}
	if r.work < 0 {
		errs = append(errs, fmt.Errorf("-rss-work=%v: must not be negative", r.work))
	}
	if r.consume > r.records {
		errs = append(errs, fmt.Errorf("-rss-consume=%d: more than the %d records of -rss-records", r.consume, r.records))
	}
	return errors.Join(errs...)
}

// rssResult is one measurement.
type rssResult struct {
	partitions      int
	hwmKiB, heapKiB int64 // the child's VmHWM, and the Go runtime's heap (HeapSys) at the end
	liveKiB         int64 // the most heap bytes in live and not yet swept objects, sampled every 10 ms
	processed       int
	took            time.Duration
}

// runRSS measures every partition count in turn and prints a table; it
// returns the exit status.
func runRSS(ctx context.Context, kind kafkatest.Kind, set rssSettings, timeout time.Duration) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: -rss:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "sluice-rss-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: -rss:", err)
		return 1
	}
	sup := newSupervisor(self)
	defer sup.killAll()
	queue := "package source's queued.max.messages.kbytes"
	if set.queueKiB > 0 {
		queue = fmt.Sprintf("queued.max.messages.kbytes=%d", set.queueKiB)
	}
	fmt.Printf("chaos -rss: %d records of %d B, budget %d MiB, %s, the consumer stops after %d records, %v of work per record; logs in %s\n",
		set.records, set.size, set.budget>>20, queue, set.consume, set.work, dir)
	var results []rssResult
	for i, parts := range set.partitions {
		res, err := measureRSS(ctx, kind, sup, dir, i, parts, set)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos: -rss with %d partitions: %v (logs in %s)\n", parts, err, dir)
			return 1
		}
		fmt.Printf("  %d partitions: VmHWM %d MiB, Go heap %d MiB, heap objects at most %d MiB, %d records in %v\n",
			parts, res.hwmKiB>>10, res.heapKiB>>10, res.liveKiB>>10, res.processed, res.took.Round(100*time.Millisecond))
		results = append(results, res)
	}
	fmt.Printf("\npartitions  peak RSS (VmHWM)  Go heap (HeapSys)  heap objects (peak)  budget\n")
	for _, r := range results {
		fmt.Printf("%10d  %12d MiB  %13d MiB  %15d MiB  %4d MiB\n", r.partitions, r.hwmKiB>>10, r.heapKiB>>10, r.liveKiB>>10, set.budget>>20)
	}
	os.RemoveAll(dir)
	return 0
}

// measureRSS fills a topic of parts partitions on a broker of its own
// (of the given kind) and runs one child consumer over it.
func measureRSS(ctx context.Context, kind kafkatest.Kind, sup *supervisor, dir string, slot, parts int, set rssSettings) (rssResult, error) {
	b, err := kafkatest.Start(ctx, kind, kafkatest.WithTopic(rssTopic, int32(parts)))
	if err != nil {
		return rssResult{}, err
	}
	defer b.Close()
	value := make([]byte, set.size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	const batch = 4096
	for next := 0; next < set.records; next += batch {
		recs := make([]sluice.Record, 0, batch)
		for i := next; i < min(next+batch, set.records); i++ {
			recs = append(recs, sluice.Record{Partition: int32(i % parts), Value: value})
		}
		if err := b.ProduceContext(ctx, rssTopic, recs...); err != nil {
			return rssResult{}, err
		}
	}
	t := time.Now()
	p, err := sup.start(dir, slot, 1, []string{"rss-child", "--brokers", b.Addr(), "--budget", fmt.Sprint(set.budget),
		"--consume", fmt.Sprint(set.consume), "--work", set.work.String(), "--queue-kb", fmt.Sprint(set.queueKiB)})
	if err != nil {
		return rssResult{}, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.send(syscall.SIGKILL)
		<-p.done
		return rssResult{}, fmt.Errorf("%v; last log lines:\n%s", context.Cause(ctx), p.logTail(15))
	}
	if !p.exitedCleanly() {
		return rssResult{}, fmt.Errorf("the consumer ended with %s; last log lines:\n%s", p.exit(), p.logTail(15))
	}
	res := rssResult{partitions: parts, took: time.Since(t)}
	line, err := lastLineWith(p.logPath, "rss-child:")
	if err != nil {
		return res, err
	}
	if _, err := fmt.Sscanf(line, "rss-child: processed %d VmHWM %d kB HeapSys %d kB objects %d kB",
		&res.processed, &res.hwmKiB, &res.heapKiB, &res.liveKiB); err != nil {
		return res, fmt.Errorf("the consumer's report %q: %w", line, err)
	}
	return res, nil
}

func lastLineWith(path, prefix string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			last = sc.Text()
		}
	}
	if last == "" {
		return "", fmt.Errorf("%s has no line starting with %q", filepath.Base(path), prefix)
	}
	return last, sc.Err()
}

// rssChild is the consumer the -rss mode measures: it processes consume
// records of the rss topic through one slow stage, under an in-flight
// byte budget, then stops, and prints how much memory it used at most.
func rssChild(args []string) int {
	fs := flag.NewFlagSet("rss-child", flag.ContinueOnError)
	brokers := fs.String("brokers", "", "bootstrap brokers")
	budget := fs.Int64("budget", 16<<20, "in-flight byte budget")
	consume := fs.Int("consume", 60_000, "records to process before stopping")
	work := fs.Duration("work", 200*time.Microsecond, "time spent per record, one record at a time in all")
	queueKiB := fs.Int("queue-kb", 0, "librdkafka's queued.max.messages.kbytes; 0 keeps package source's")
	fs.String("client-id", "", "ignored (the supervisor names every process)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := source.Config{GroupConfig: sluice.GroupConfig{Brokers: strings.Split(*brokers, ","), Group: "rss", Topics: []string{rssTopic}}}
	if *queueKiB > 0 {
		cfg.Overrides = map[string]any{"queued.max.messages.kbytes": *queueKiB}
	}
	src, err := source.NewSource(cfg)
	if err != nil {
		fmt.Println("rss-child:", err)
		return 1
	}
	var (
		done           atomic.Int64
		slow           sync.Mutex // one record at a time across partitions: the budget fills whatever the partition count
		runCtx, cancel = context.WithCancel(ctx)
	)
	defer cancel()
	peak := sampleHeapObjects(runCtx)
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(context.Context, sluice.Record) error {
			slow.Lock()
			time.Sleep(*work)
			slow.Unlock()
			if done.Add(1) == int64(*consume) {
				cancel()
			}
			return nil
		})
	}
	if err := pipeline.Run(runCtx, src, build, pipeline.WithMaxInFlightBytes(*budget)); err != nil {
		fmt.Println("rss-child: run:", err)
		return 1
	}
	cancel() // stops the sampler, whatever ended Run
	hwm, err := procstatus.KiB("VmHWM")
	if err != nil {
		fmt.Println("rss-child:", err)
		return 1
	}
	fmt.Printf("rss-child: processed %d VmHWM %d kB HeapSys %d kB objects %d kB\n", done.Load(), hwm, heapSysKiB(), peak()>>10)
	return 0
}

// heapSysKiB is the heap memory the Go runtime obtained from the OS.
func heapSysKiB() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapSys >> 10)
}

// sampleHeapObjects samples the bytes of heap objects (live, or dead and
// not yet swept: what the records in memory weigh, before the GC's
// headroom) every 10 ms until ctx is done; the function it returns gives
// the largest sample.
func sampleHeapObjects(ctx context.Context) func() int64 {
	var peak atomic.Int64
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := int64(sample[0].Value.Uint64()); v > peak.Load() {
			peak.Store(v)
		}
	}
	done := tick(ctx, 10*time.Millisecond, read)
	return func() int64 {
		<-done
		read()
		return peak.Load()
	}
}
