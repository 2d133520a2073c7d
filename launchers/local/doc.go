// Package local implements the default [sortie.Launcher]: it runs each
// attempt of a run on this machine, as a worker subprocess or in-process.
//
// In subprocess mode (the default) each attempt runs [Options.Command] —
// normally `sortie worker` — once, in its own process group, with the
// [sortie.Invocation] (JSON and a newline) on its stdin. The worker claims
// the attempt, heartbeats and reports to the control plane its environment
// names (for `sortie worker`, SORTIE_STATE_DIR). Its environment is the
// explicit list in [Options.Env], by default PATH, HOME, TMPDIR, LANG and
// TZ only, so the host's credentials are never copied in. Its stdout (the
// NDJSON messages) and stderr go to <LogDir>/<run>-<attempt>.log, or are
// discarded. The [sortie.Ref] names the pid and, in Detail, the process
// start time from /proc/<pid>/stat, so a later process can cancel or
// describe the attempt without ever signalling a reused pid.
//
// In in-process mode ([Options.InProcess]) each attempt runs a function in
// a goroutine of this process, with no process start per run: a worker of
// package functions in this process, or (the sortie host's default) one
// that claims and reports the attempt here while its handler runs on a
// warm worker process of a functions.Pool; when that process dies during
// the attempt the function's error is an [ExitStatuser] and the attempt
// ends with the process's status.
//
// [Launcher.Start] returns at once and is idempotent on the launch ID;
// [Launcher.Cancel] sends SIGTERM, then SIGKILL after [Options.Grace];
// [Launcher.Describe] reports running, succeeded, failed (with the exit
// code) or not-found. [Launcher.Close] stops new launches only: workers
// outlive the process that launched them. [Launcher.Shutdown] stops them.
//
// This package runs on Linux: it reads /proc.
package local
