package host

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sortie-run/sortie/inputschema"
)

// checkAgents validates the agents' manifests and compiles their input
// schemas (once per process: inputschema.Default), so a bad one is
// refused at start naming its field ("agent.input_schema").
func (c *Config) checkAgents() error {
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		m := c.Agents[name]
		if err := inputschema.Default.Check(&m); err != nil {
			return fmt.Errorf("agent %s: %w", name, err)
		}
	}
	return nil
}
