package follow

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice-go/sluice"
)

// poller reads the leaders' offsets of the owned partitions every interval
// and when partitions are assigned, on a goroutine of its own, and stores
// them in shared.
type poller struct {
	leaders Leaders
	cfg     config
	sh      *shared
	failing bool // the last read failed
}

func newPoller(l Leaders, cfg config, sh *shared) *poller {
	return &poller{leaders: l, cfg: cfg, sh: sh}
}

func (p *poller) run(ctx context.Context) {
	tick := time.NewTicker(p.cfg.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-p.sh.kick:
		}
		if tps := p.sh.ownedList(); len(tps) > 0 {
			p.read(ctx, tps)
		}
	}
}

// read makes one Leaders.Committed call for tps and stores the result.
func (p *poller) read(ctx context.Context, tps []sluice.TopicPartition) {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	m, err := p.leaders.Committed(cctx, tps)
	cancel()
	if ctx.Err() != nil {
		return // stopping: the read may have been cut short
	}
	if err != nil {
		lvl := slog.LevelWarn
		if p.failing {
			lvl = slog.LevelDebug
		}
		p.failing = true
		p.cfg.log.Log(ctx, lvl, "reading the leaders' committed offsets failed; keeping the offsets read before, retrying at the next interval",
			"partitions", len(tps), "err", err)
		return
	}
	if p.failing {
		p.failing = false
		p.cfg.log.Info("reading the leaders' committed offsets works again", "partitions", len(tps))
	}
	p.sh.update(tps, m)
}
