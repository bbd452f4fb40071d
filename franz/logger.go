package franz

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// slogAdapter is the kgo.Logger the source installs (kgo.WithLogger): it
// forwards franz-go's logs to Config.Logger, tagged source=franz-go, with
// kgo's Error and Warn as slog's and kgo's Info as Debug: kgo logs a
// couple of dozen info lines when a client starts (connections,
// metadata, the group join) and more on every rebalance, which would
// drown the consumer's own info lines. The
// source's adapter also shows kgo's lines to its transactional producer's
// initWatch (nil without one).
type slogAdapter struct {
	log  *slog.Logger
	init *initWatch
}

// Level reports the most verbose kgo level the slog handler enables, so
// that kgo does not build log lines nobody keeps; debug while the
// initWatch watches.
func (a slogAdapter) Level() kgo.LogLevel {
	ctx := context.Background()
	switch {
	case a.init.watching():
		return kgo.LogLevelDebug
	case a.log.Enabled(ctx, slog.LevelDebug):
		return kgo.LogLevelDebug
	case a.log.Enabled(ctx, slog.LevelWarn):
		return kgo.LogLevelWarn
	case a.log.Enabled(ctx, slog.LevelError):
		return kgo.LogLevelError
	}
	return kgo.LogLevelNone
}

// Log forwards one kgo log line; keyvals are kgo's alternating keys and
// values.
func (a slogAdapter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	a.init.saw(keyvals)
	lvl := slogLevel(level)
	ctx := context.Background()
	if !a.log.Enabled(ctx, lvl) {
		return
	}
	a.log.Log(ctx, lvl, msg, append([]any{"source", "franz-go"}, keyvals...)...)
}

// slogLevels are the slog levels of kgo's Error and Warn levels.
var slogLevels = map[kgo.LogLevel]slog.Level{kgo.LogLevelError: slog.LevelError, kgo.LogLevelWarn: slog.LevelWarn}

// slogLevel is the slog level of kgo's level l: Error and Warn as slog's,
// Info and Debug as slog's Debug.
func slogLevel(l kgo.LogLevel) slog.Level {
	if lvl, ok := slogLevels[l]; ok {
		return lvl
	}
	return slog.LevelDebug
}
