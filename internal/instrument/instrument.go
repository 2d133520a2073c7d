// Package instrument makes the OpenTelemetry instruments of Sortie's
// packages, whose names are constants: one copy of "make it, or fail at
// package initialisation".
package instrument

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// Counter returns the int64 counter name of the global meter provider's
// scope (the package's import path), described by desc, in unit (UCUM:
// "{run}", "{request}"). It panics on an invalid name, the metric API's
// only error, which a constant name is not.
func Counter(scope, name, unit, desc string) metric.Int64Counter {
	return Must(otel.Meter(scope).Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit)))
}

// Must returns v, and panics on err: for instruments made at package
// initialisation with constant names.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
