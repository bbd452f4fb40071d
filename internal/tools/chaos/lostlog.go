package main

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// lostEvent is a "partitions lost" line of a process's log: the group
// took these partitions away without a graceful revoke (the member was
// considered dead, or its rebalance timed out), so their uncommitted
// work is redone by the next owner.
type lostEvent struct {
	proc       string
	at         string // the log line's time
	partitions []int32
}

func (e lostEvent) String() string {
	return fmt.Sprintf("%s lost %v at %s", e.proc, e.partitions, e.at)
}

var (
	// the source logs: time=... level=WARN msg="partitions lost" ... partitions="[{Topic:events Partition:1} ...]"
	lostLine      = regexp.MustCompile(`^time=(\S+) level=WARN msg="partitions lost" .*partitions="\[(.*)\]"`)
	partitionOfTP = regexp.MustCompile(`Partition:(\d+)`)
)

// lostEvents reads the "partitions lost" lines of the process's log.
func (p *proc) lostEvents() []lostEvent {
	f, err := os.Open(p.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []lostEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := lostLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		e := lostEvent{proc: p.name, at: m[1]}
		for _, pm := range partitionOfTP.FindAllStringSubmatch(m[2], -1) {
			if n, err := strconv.Atoi(pm[1]); err == nil {
				e.partitions = append(e.partitions, int32(n))
			}
		}
		out = append(out, e)
	}
	return out
}

// offsetRanges renders sorted offsets by partition as "partition 1:
// 497-1016 (520)", merging consecutive offsets.
func offsetRanges(at map[int32][]int64) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(at)) {
		offs := at[p]
		var rs []string
		for i := 0; i < len(offs); {
			j := i
			for j+1 < len(offs) && offs[j+1] == offs[j]+1 {
				j++
			}
			if i == j {
				rs = append(rs, strconv.FormatInt(offs[i], 10))
			} else {
				rs = append(rs, fmt.Sprintf("%d-%d", offs[i], offs[j]))
			}
			i = j + 1
		}
		parts = append(parts, fmt.Sprintf("partition %d: %s (%d)", p, strings.Join(rs, ","), len(offs)))
	}
	return strings.Join(parts, "; ")
}
