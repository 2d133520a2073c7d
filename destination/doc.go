// Package destination is the destination policy of every outbound HTTP
// call the host or a worker makes on a run's behalf: webhooks, and the
// HTTP client handed to handlers ([github.com/sortie-run/sortie/functions.Call.HTTPClient]).
//
// A [Policy] is a host allowlist ([Policy.Allow]), the address ranges
// allowed besides public ones ([Policy.AllowAddrs]), the schemes (HTTPS
// only unless [Policy.AllowHTTP]) and redirect and time limits. Its zero
// value allows nothing: outbound calls are closed until a host lists the
// hosts they may reach, or [AnyHost] ("*") for HTTPS to any public address
// ([PublicHTTPS], what the zero value allowed before). [FromEnv] reads a
// policy from the environment variables a worker gets ([EnvAllow] ...),
// and [Policy.Env] writes them.
//
// [Policy.Client] returns an [net/http.Client] that enforces it in two
// places. Each request and each redirect is checked for its scheme, its
// host against the allowlist, and the cloud metadata host names, before
// any DNS lookup. Each connection is checked at dial time, in the
// dialer's Control function, which sees the address actually being
// connected to after resolution and before the connection is made: a
// redirect, a name that resolves (or rebinds) to a private address, or a
// Happy Eyeballs fallback cannot reach loopback, private, link-local,
// shared (CGNAT), multicast, reserved or metadata addresses unless
// [Policy.AllowAddrs] covers them. IPv4-mapped IPv6 addresses are checked
// as IPv4, and NAT64 and 6to4 addresses as the IPv4 address they embed.
// Environment proxies are never used, since a proxy would hide the
// destination.
//
// Refusals match [ErrRefused] and carry a [*RefusedError] naming the host
// and the reason ("address 127.0.0.1 is loopback"), never the URL's path
// or query. [Policy.Check] checks a URL without connecting, for refusing a
// webhook when it is configured.
package destination
