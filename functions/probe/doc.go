// Package probe is a programmable test agent: [Register] adds the handler
// "probe" (runtime "go:probe") to a [functions.Registry]. The launcher
// conformance suite and the smoke tests drive it through its variables, all
// optional:
//
//	events          int     events of kind "progress" to emit first (default 3, at most 10000)
//	interval_ms     int     pause between events, in ms (default 0)
//	text            string  the text of every progress event (default "event I of N")
//	steps           int     then run the durable steps "step-1" .. "step-N"
//	                        (at most 100) with [functions.Step]: each, when it
//	                        runs, emits an event of kind "probe.step" and
//	                        returns {"step":I,"attempt":K} ([StepResult]); a
//	                        later attempt replays the recorded ones; the
//	                        result gains "steps": [RESULT, ...]
//	step_pad, step_pad_bytes string, int  each step's result gains "pad":
//	                        step_pad repeated to step_pad_bytes bytes (at
//	                        most 64 MiB; kept by reference past
//	                        sortie.MaxStepResultBytes)
//	secret_steps    int     steps up to N are secret ([functions.StepOptions])
//	secret_step_pad_bytes int  the secret steps' pad length instead of
//	                        step_pad_bytes
//	crash_after_step int    with crash_attempts, crash after step N instead
//	crash_attempts  int     on attempts ≤ N, after the events (flushed to the
//	                        reporter), call [Exit](97) without reporting
//	                        anything more: a killed worker
//	panic           bool    panic after the events
//	fail            string  return an error with this message ...
//	retryable       bool    ... retryable when true, else [functions.Permanent]
//	fail_attempts   int     ... only while attempt ≤ N (0: on every attempt)
//	interrupt       string  "input-required" or "auth-required": on an attempt
//	                        without resume data, return [functions.Interrupt]
//	                        with prompt "need input" and checkpoint output
//	                        when set, else {"step":1};
//	                        when resumed, return {"resumed_with": INPUT,
//	                        "checkpoint": CHECKPOINT}
//	sleep_ms        int     then sleep this long, in ms, returning ctx's error
//	                        if it ends first
//	until_cancelled bool    then emit "tick" events every interval_ms (at least
//	                        10) until ctx is done, and return ctx's error
//	config_names    bool    the result is {"config_names": [NAME, ...]}: the
//	                        sorted names the attempt's inline configuration
//	                        sets (never their values), proof it was opened
//	model           string  resolve this model profile with
//	                        [functions.Call.Model]; a refusal fails the
//	                        attempt (permanent)
//	tool, tool_args string, any  ask to call this tool with these
//	                        arguments ([functions.Call.AuthorizeTool])
//	connect         string  ask to open the "mcp" connection of this
//	                        reference ([functions.Call.Connect])
//	webhook         string  run the webhook step "webhook" ([functions.Call.Webhook]):
//	                        POST {"run": RUN_ID} to this URL; its failure
//	                        (a refused destination) fails the attempt
//	                        With any of the four, the result is a
//	                        [PolicyResult]: a refused tool or connection is
//	                        handled, its decision and message the result
//	output          any     the result (default {"events":N,"attempt":K}, and
//	                        "steps" with steps)
//
// They apply in the order listed; the first of crash, panic, fail,
// interrupt decides the outcome. Other variables are ignored; a variable of
// the wrong type or out of range is a permanent error naming it.
package probe
