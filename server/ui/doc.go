// Package ui is the host's web UI: a runs list with filters, paging,
// live updates and charts; a run page with the live event timeline,
// attempts, the result or error, the interrupt form to resume, cancel,
// push configurations, and the cost and steps of a run when the run
// carries them. `sortie serve` mounts it at /ui/ (server.Options.UI).
//
// The pages are plain HTML, CSS and JavaScript modules embedded in the
// binary (nothing is built, nothing is fetched from elsewhere), and they
// do nothing an API client cannot: every call goes to the host's HTTP API
// (package server's routes under /v1/runs) through [Handler], which only
// swaps the browser's session for the bearer token the session holds.
//
// # Security
//
//   - Session: the browser POSTs the API token once to session; the
//     handler checks it against the API itself (GET /v1/runs) and answers
//     with a cookie holding a random session ID (HttpOnly, SameSite=Strict,
//     Secure over TLS, Path of the UI) and a CSRF token the page keeps in
//     memory. The token itself never reaches the page again and is kept in
//     the host's memory only; sessions end after Options.SessionTTL, at
//     logout, and when the host restarts.
//   - CSRF: every state-changing call (POST, PUT, PATCH, DELETE) needs the
//     session's CSRF token in the [CSRFHeader] header, and a same-origin
//     Origin and Sec-Fetch-Site when the browser sends them; otherwise it is
//     refused with 403 and code [CodeCSRF], and nothing reaches the API.
//   - Content-Security-Policy [ContentSecurityPolicy] on every answer: only
//     this origin's scripts, styles and connections, no inline script or
//     style, no frames, no plugins. The pages build the DOM with
//     textContent (never innerHTML with data), so event text, results,
//     prompts and agent names render as text.
//   - Loopback: a host without API tokens (Options.LoopbackOnly) serves
//     the UI to loopback clients only, by the API's own rule
//     (internal/loopback.Request): loopback Host (no DNS rebinding) and a
//     loopback Origin.
//
// Routes, relative to where the handler is mounted (it expects its prefix
// stripped, e.g. with http.StripPrefix("/ui", h)):
//
//	GET    /                 the page (index.html)
//	GET    /assets/{file}    the embedded scripts and styles
//	GET    /session          {"authenticated": bool, "csrf_token"}
//	POST   /session          {"token"} -> cookie and {"csrf_token"}; 401 for a token the API refuses
//	DELETE /session          logout
//	*      /api/v1/runs...   the API's /v1/runs routes, forwarded with the session's token
package ui
