package sortie

import "context"

// livenessKey marks a context carrying a call that keeps an attempt
// alive.
type livenessKey struct{}

// LivenessContext marks ctx as carrying a worker's call that keeps its
// attempt alive: a claim, heartbeat, event append or finish. A control
// plane serves such calls before others and with their own retry budget
// (controlplane/dynamo sends them through its Options.Liveness client),
// so a burst of submissions never starves the heartbeats of running
// attempts. The worker's control-plane reporter and the host's callback
// handler mark their calls.
func LivenessContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, livenessKey{}, true)
}

// IsLiveness reports whether ctx was marked by [LivenessContext].
func IsLiveness(ctx context.Context) bool {
	v, _ := ctx.Value(livenessKey{}).(bool)
	return v
}
