package telemetry

import (
	"context"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// bufferSize is how many ended spans a [buffer] holds before it exports
// them without waiting for a flush; spans ending while an export runs
// beyond twice that are dropped.
const bufferSize = 512

// buffer is a span processor for a Lambda function: it keeps ended spans
// in memory and exports them when flushed (before the handler returns)
// or when bufferSize have ended. Unlike the SDK's batch processor it
// runs no background timer, which a frozen execution environment would
// stop anyway, and it is smaller in the bootstrap.
type buffer struct {
	exp   sdktrace.SpanExporter
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
	send  sync.Mutex // one export at a time, in order
}

var _ sdktrace.SpanProcessor = (*buffer)(nil)

func (b *buffer) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *buffer) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.spans) < 2*bufferSize {
		b.spans = append(b.spans, s)
	}
	full := len(b.spans) >= bufferSize
	b.mu.Unlock()
	if full {
		go func() { _ = b.ForceFlush(context.Background()) }()
	}
}

// ForceFlush exports every span ended so far.
func (b *buffer) ForceFlush(ctx context.Context) error {
	b.send.Lock()
	defer b.send.Unlock()
	b.mu.Lock()
	spans := b.spans
	b.spans = nil
	b.mu.Unlock()
	if len(spans) == 0 {
		return nil
	}
	return b.exp.ExportSpans(ctx, spans)
}

func (b *buffer) Shutdown(ctx context.Context) error {
	err := b.ForceFlush(ctx)
	if serr := b.exp.Shutdown(ctx); err == nil {
		err = serr
	}
	return err
}
