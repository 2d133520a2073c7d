package host

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sortie-run/sortie/host/telemetry"
)

// Metrics is a host's meter provider.
type Metrics struct {
	mp *sdkmetric.MeterProvider
}

// StartMetrics sets the global meter provider of a host (`sortie serve`);
// it lives here, not in host/telemetry, because the OTLP metrics exporter
// links gRPC, which the Lambda bootstrap must not:
// it reads the instruments of every package (the server's throttling and
// unavailability counters, ...) into readers (a test's manual reader; a
// Prometheus exporter for a /metrics endpoint) and, when
// telemetry.Enabled("METRICS"), a periodic OTLP/HTTP exporter (every
// OTEL_METRIC_EXPORT_INTERVAL ms, default 60 s). Instruments made before
// it record from then on. It fails only when the OTLP exporter cannot be
// made from the environment. The caller calls Shutdown before exiting.
func StartMetrics(ctx context.Context, readers ...sdkmetric.Reader) (*Metrics, error) {
	var opts []sdkmetric.Option
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	if telemetry.Enabled("METRICS") {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("metrics: OTLP exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if len(opts) == 0 {
		return &Metrics{}, nil
	}
	telemetry.DefaultServiceName()
	mp := sdkmetric.NewMeterProvider(opts...)
	otel.SetMeterProvider(mp)
	return &Metrics{mp: mp}, nil
}

// Shutdown exports what the readers hold and stops them, waiting at most
// telemetry.ShutdownTimeout.
func (m *Metrics) Shutdown() {
	if m.mp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), telemetry.ShutdownTimeout)
	defer cancel()
	_ = m.mp.Shutdown(ctx)
}

// NewPrometheus returns a reader for [StartMetrics] that keeps the
// metrics of every package for a Prometheus scrape, and the handler that
// serves them in the Prometheus text format (OpenTelemetry's Prometheus
// exporter: names get their unit and _total suffixes, "sortie.runs.submitted"
// becomes sortie_runs_submitted_total). `sortie serve` mounts it at
// /metrics behind the API's authentication ([API.Metrics]).
func NewPrometheus() (sdkmetric.Reader, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: Prometheus exporter: %w", err)
	}
	return exp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
