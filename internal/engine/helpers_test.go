package engine

import (
	"log/slog"

	"github.com/sluice-go/sluice"
)

// chunkEnd builds a graph of one End stage that hands each chunk it
// receives to onChunk, then releases the chunk; it returns once its input
// is closed.
func chunkEnd(onChunk func(s *Stage, c []Item[Record])) Builder {
	return func(_ *Partition, in Stream[Record]) End {
		return AddEnd(in, StageSpec{Kind: "End"}, func(s *Stage, in *Inlet[Record]) error {
			for {
				c, ok := in.Recv()
				if !ok {
					return nil
				}
				onChunk(s, c)
				in.Release(c)
			}
		})
	}
}

// roomyConfig is a Config whose in-flight limits and queues no test of
// chunks and segments reaches (a 10s drain timeout, 100,000 records, 1
// GiB, a 16,384-record partition queue), with 256-record chunks and the
// default retry; it logs nothing.
func roomyConfig() Config {
	return Config{DrainTimeout: 10e9, MaxInFlight: 100_000, MaxInFlightBytes: 1 << 30, PartitionQueue: 16384,
		Chunk: 256, Logger: slog.New(slog.DiscardHandler), Retry: sluice.DefaultRetry(), DefaultRetry: sluice.DefaultRetry()}
}
