// Package loopback is Sortie's one rule for "is this host loopback": the
// host that serves its API without tokens to loopback clients only
// (server), refuses an open API on another address (the host's listen
// check) and refuses a worker callback URL that a Lambda function cannot
// reach (package host) all ask [Host] or [URL].
//
// A host is loopback when it is the name localhost in any letter case, an
// address in 127.0.0.0/8, ::1, or an IPv4-mapped IPv6 address of
// 127.0.0.0/8 (::ffff:127.0.0.1), with or without a port and IPv6
// brackets. Other names (even ones that resolve to loopback) are not: the
// rule never resolves a name.
package loopback
