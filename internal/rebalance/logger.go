package rebalance

import "log/slog"

// SourceLogger is the logger of a source built from its Config.Logger l
// (nil discards): every line carries the source's component and its
// group, so the logs of several sources in one process can be told apart.
func SourceLogger(l *slog.Logger, component, group string) *slog.Logger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return l.With("component", component, "group", group)
}
