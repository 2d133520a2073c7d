// Command sortie-cloudrun is the Cloud Run container of Sortie's worker:
// the same functions/ core as `sortie worker` and sortie-lambda, configured
// by the environment ([fncloudrun.LoadEnv]).
//
// In job mode (the default) it executes the one invocation the launcher
// put in SORTIE_INVOCATION through RunJob's container overrides, and exits
// 0 once its outcome is stored (or a duplicate delivery's claim was
// refused), 1 when it could not be stored, 2 for a bad configuration.
// SIGTERM (CancelExecution, the task timeout) stops the attempt.
//
// The control plane is the SQLite file of SORTIE_SQLITE_PATH.
package main

import fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"

var _ = fncloudrun.ModeJob
