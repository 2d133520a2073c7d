package cloudrun

import (
	"log/slog"
	"net/http"
)

// EventsPath is the path the service takes CloudEvents on (Eventarc
// triggers), when [EnvTriggerRules] is set.
const EventsPath = "/events"

// Verified returns a handler that passes a request to next only when v
// accepts its caller (Eventarc calls with a Google-signed ID token of the
// trigger's service account), and answers 401 otherwise.
func Verified(v Verifier, next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := v.Verify(r.Context(), r); err != nil {
			if log != nil {
				log.Warn("cloudrun service: caller refused", "path", r.URL.Path, "err", err)
			}
			answer(w, http.StatusUnauthorized, Answer{Status: "refused", Error: "caller not verified"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
