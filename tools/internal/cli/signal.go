package cli

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
)

// NotifyContext is signal.NotifyContext that also tells which signal
// cancelled the context (nil before one arrived): the exit status says it
// (Interrupted). stop releases the signals and cancels the context.
func NotifyContext(signals ...os.Signal) (ctx context.Context, sig func() os.Signal, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, signals...)
	var got atomic.Value
	go func() {
		select {
		case s := <-ch:
			got.Store(s)
			cancel()
		case <-ctx.Done():
		}
	}()
	sig = func() os.Signal {
		s, _ := got.Load().(os.Signal)
		return s
	}
	return ctx, sig, func() { signal.Stop(ch); cancel() }
}
