package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/procstatus"
)

// runConfig is what one measured run (a "bench run" child) is told.
type runConfig struct {
	name       string // the case
	brokers    []string
	group      string
	topic      string // input topic
	out        string // output topic of the consume → produce cases
	l          layout
	budget     int64 // Sluice's in-flight byte budget; 0 keeps pipeline's default
	cpuprofile string
	memprofile string
	trace      string
	gauges     *gauges // where the case notes its peaks (set by measure)

	pg          string             // DSN of the PostgreSQL cases' database
	offsetStore sluice.OffsetStore // the sources' Config.OffsetStore (set by an exactly-once case)
}

// Result is the JSON line a run child prints on stdout when it is done.
type Result struct {
	Case       string      `json:"case"`
	Records    int64       `json:"records"`                  // records consumed (duplicates included)
	WindowSec  float64     `json:"window_s"`                 // first record to the last one done
	AssignSec  float64     `json:"assign_s"`                 // first assignment to the last record done
	CPUSec     float64     `json:"cpu_s"`                    // user+sys CPU of the process within the window
	CPUTotal   float64     `json:"cpu_total_s"`              // user+sys CPU of the whole process
	PeakRSSKiB int64       `json:"peak_rss_kib"`             // VmHWM
	GCCycles   uint64      `json:"gc_cycles"`                // garbage collections of the whole process
	GCCPUSec   float64     `json:"gc_cpu_s"`                 // the collector's CPU time in the whole process
	PeakCalls  int64       `json:"peak_calls,omitempty"`     // most calls of the slow function at once
	PeakBytes  int64       `json:"peak_in_flight,omitempty"` // most in-flight bytes (Sluice cases that note them)
	Parts      []PartStats `json:"parts"`
	Err        string      `json:"err,omitempty"`
}

// caseFunc runs one case: it consumes cfg.topic, records every record in
// tr, opens the window at the first record and closes it when the last
// one is done (processed; for the consume → produce cases, delivered),
// then commits and closes its clients before returning.
type caseFunc func(ctx context.Context, cfg runConfig, tr *tracker, w *window) error

// runChild is the "run" mode: it parses its flags, runs the case and
// prints its Result. The exit status is 0 when the case ran (the parent
// judges the result), 1 when it failed, 2 on bad flags.
func runChild(args []string) int {
	fs := flag.NewFlagSet("bench run", flag.ContinueOnError)
	var cfg runConfig
	brokers := fs.String("brokers", "", "bootstrap brokers, comma separated")
	fs.StringVar(&cfg.name, "case", "", "the case to run: "+strings.Join(caseNames(), ", "))
	fs.StringVar(&cfg.group, "group", "", "consumer group")
	fs.StringVar(&cfg.topic, "topic", inputTopic, "input topic")
	fs.StringVar(&cfg.out, "out", "", "output topic (consume → produce cases)")
	fs.IntVar(&cfg.l.records, "records", 0, "records in the input topic")
	fs.IntVar(&cfg.l.partitions, "partitions", 0, "partitions of the input topic")
	fs.IntVar(&cfg.l.valueSize, "value", 0, "value bytes per record")
	fs.Int64Var(&cfg.budget, "budget", 0, "Sluice's in-flight byte budget (0: pipeline's default)")
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file")
	fs.StringVar(&cfg.trace, "trace", "", "write an execution trace of the run to this file")
	fs.StringVar(&cfg.pg, "pg", "", "DSN of the PostgreSQL database (PostgreSQL cases)")
	fs.StringVar(&cfg.memprofile, "memprofile", "", "write a heap profile to this file when the last record is done (graphs still running)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.brokers = strings.Split(*brokers, ",")
	run, ok := cases[cfg.name]
	switch {
	case !ok:
		fmt.Fprintf(os.Stderr, "bench run: -case %q: unknown case (want one of %s)\n", cfg.name, strings.Join(caseNames(), ", "))
		return 2
	case *brokers == "" || cfg.group == "" || cfg.l.records <= 0 || cfg.l.partitions <= 0:
		fmt.Fprintln(os.Stderr, "bench run: -brokers, -group, -records and -partitions are required")
		return 2
	case hasOutput(cfg.name) && cfg.out == "":
		fmt.Fprintf(os.Stderr, "bench run: -case %s needs -out\n", cfg.name)
		return 2
	case isPG(cfg.name) && cfg.pg == "":
		fmt.Fprintf(os.Stderr, "bench run: -case %s needs -pg\n", cfg.name)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := measure(ctx, cfg, run)
	if err != nil {
		res.Err = err.Error()
	}
	line, jerr := json.Marshal(res)
	if jerr != nil {
		fmt.Fprintln(os.Stderr, "bench run:", jerr)
		return 1
	}
	fmt.Println(string(line))
	if err != nil {
		return 1
	}
	return 0
}

// measure runs one case under the CPU profiler and the execution tracer if asked and collects its
// Result.
func measure(ctx context.Context, cfg runConfig, run caseFunc) (Result, error) {
	res := Result{Case: cfg.name}
	stopProfile, err := startRecording(cfg.cpuprofile, pprof.StartCPUProfile, pprof.StopCPUProfile)
	if err != nil {
		return res, err
	}
	defer stopProfile()
	stopTrace, err := startRecording(cfg.trace, trace.Start, trace.Stop)
	if err != nil {
		return res, err
	}
	defer stopTrace()
	tr := newTracker(cfg.l)
	w := newWindow()
	cfg.gauges = &gauges{}
	heapErr := make(chan error, 1)
	ran := make(chan struct{})
	go func() { heapErr <- writeHeapProfile(cfg.memprofile, w.done, ran) }()
	err = run(ctx, cfg, tr, w)
	close(ran)
	err = errors.Join(err, <-heapErr)
	if err == nil && !w.closed() {
		err = errors.New("the case returned before its last record was done")
	}
	res.Records = tr.total()
	res.PeakCalls, res.PeakBytes = cfg.gauges.calls.max(), cfg.gauges.inFlight.max()
	res.Parts = tr.stats()
	if sp, ok := w.span(); ok {
		res.WindowSec = sp.wall.Seconds()
		res.AssignSec = sp.fromAssign.Seconds()
		res.CPUSec = sp.cpu.Seconds()
	}
	ru, rerr := usage()
	if rerr != nil {
		return res, errors.Join(err, rerr)
	}
	res.CPUTotal = ru.cpu.Seconds()
	res.PeakRSSKiB = ru.maxRSSKiB
	gc := readGC()
	res.GCCycles, res.GCCPUSec = gc.cycles, gc.cpuSec
	return res, err
}

// startRecording starts a recorder of the run (the CPU profiler, the
// execution tracer) writing to a file created at path, and returns what
// stops it and closes the file; with an empty path it starts nothing.
func startRecording(path string, start func(io.Writer) error, stop func()) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		stop()
		f.Close()
	}, nil
}

// writeHeapProfile writes a heap profile to path (nothing if it is empty)
// once done is closed, after a GC so that it shows what is live then;
// nothing if ran is closed first.
func writeHeapProfile(path string, done, ran <-chan struct{}) error {
	if path == "" {
		return nil
	}
	select {
	case <-done:
	case <-ran:
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
}

// window is the measured interval of a run: from the first record to the
// moment the last one was done, with the process's CPU time at both ends;
// and the moment the consumer got its first partitions, for the rate
// from assignment (which counts the fetches a client made ahead of the
// first record it handed over). assign, open and close may be called from
// any goroutine, any number of times: the first call of each counts.
type window struct {
	opened            atomic.Bool // fast path of open: set once first is
	mu                sync.Mutex
	assigned          time.Time
	first, last       time.Time
	cpuFirst, cpuLast time.Duration
	done              chan struct{} // closed by the first close
}

func newWindow() *window { return &window{done: make(chan struct{})} }

// assign marks the first assignment of partitions.
func (w *window) assign() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.assigned.IsZero() {
		w.assigned = time.Now()
	}
}

// open marks the first record.
func (w *window) open() {
	if w.opened.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.openLocked()
}

func (w *window) openLocked() {
	if !w.opened.Load() {
		w.first = time.Now()
		w.cpuFirst = cpuNow()
		w.opened.Store(true)
	}
}

// close marks the last record done and closes done. A window closed
// without being opened (no record at all) opens at the same instant.
func (w *window) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed() {
		return
	}
	w.openLocked()
	w.last = time.Now()
	w.cpuLast = cpuNow()
	close(w.done)
}

func (w *window) closed() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// span is a closed window's measures.
type span struct {
	wall       time.Duration // first record to last done
	fromAssign time.Duration // first assignment to last done (zero if never marked)
	cpu        time.Duration // process CPU time within wall
}

// span returns the window's measures; ok is false while it is not
// closed.
func (w *window) span() (s span, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed() {
		return span{}, false
	}
	s = span{wall: w.last.Sub(w.first), cpu: w.cpuLast - w.cpuFirst}
	if !w.assigned.IsZero() {
		s.fromAssign = w.last.Sub(w.assigned)
	}
	return s, true
}

// rusage is what this process used.
type rusage struct {
	cpu       time.Duration // user + system, from getrusage
	maxRSSKiB int64         // VmHWM
}

// usage returns the process's CPU time and peak RSS. The peak is VmHWM
// from /proc/self/status, the high-water mark of this process's own
// address space: getrusage's ru_maxrss is no good here, because Go
// starts children with vfork semantics (CLONE_VM) and Linux carries the
// parent's high-water mark across execve into the child's maxrss (a
// child would report the parent's peak whenever it is the larger).
func usage() (rusage, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return rusage{}, fmt.Errorf("getrusage: %w", err)
	}
	hwm, err := procstatus.KiB("VmHWM")
	if err != nil {
		return rusage{}, fmt.Errorf("peak RSS: %w", err)
	}
	return rusage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), maxRSSKiB: hwm}, nil
}

// cpuNow is the process's CPU time so far (zero if getrusage fails,
// which it does not on Linux).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
